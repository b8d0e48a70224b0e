"""The ACP client: chat with any Agent Client Protocol agent, every edit through the review.

Import-free on purpose: the window servers import `companion` at start-up, and the ACP SDK (about
0.5 s to import without cached bytecode) must load only when a chat starts (`session.py`).
"""
