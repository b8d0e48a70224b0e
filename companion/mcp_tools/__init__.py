"""Workspace tools for other agents: list_files, read_file, write_file (user-approved), ask_gemini, get_diagnostics.

`settings` and `paths` use the standard library only (the Sublime adapter may import them on its
own thread); `tools` builds the MCP tool specs and is imported on the server loop only.
"""
