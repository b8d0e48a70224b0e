"""Gemini CLI's IDE companion: the Streamable HTTP MCP server of a window, its discovery file,
`openDiff`/`closeDiff` and the `ide/*` notifications (contract: gemini_ide/protocol.py)."""
