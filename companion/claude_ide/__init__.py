"""Claude Code's `/ide` integration: MCP over a WebSocket on the window's port, its lock file, its
tool vocabulary, `selection_changed` and `at_mentioned` (contract: claude_ide/protocol.py)."""
