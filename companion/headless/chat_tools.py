"""`chat`'s window: an in-process window server for the chat's workspace, so the agent gets the
same MCP tools a Sublime window gives its chats (`--no-editor-tools` turns it off).

Its `/mcp` is reached only with the chat's own token (no discovery file is written, and the window's
main token is never handed out). It offers the tools that only read: `list_files`, `read_file` and
`get_diagnostics` (no build or language server runs here, so it finds nothing); the agent's edits go
through the chat's own review, on the one terminal the chat owns.
"""

from __future__ import annotations

import sys

from ..core.server.chat_servers import WindowTools, package_root
from ..mcp_tools.factory import tool_factory
from ..mcp_tools.settings import GET_DIAGNOSTICS, LIST_FILES, READ_FILE, WorkspaceToolSettings
from ..runtime import Runtime, WindowHandle
from .editor import HeadlessEditor

READ_ONLY_TOOLS = frozenset({LIST_FILES, READ_FILE, GET_DIAGNOSTICS})
START_TIMEOUT_SECONDS = 30.0


class ChatWindow:
    """The window server of one headless chat; `open` and `close` block (run them off the chat's loop)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.runtime = Runtime()
        self.handle: WindowHandle | None = None

    def open(self) -> WindowTools:
        """Start serving; the endpoint and token store the chat's entry is made from."""
        tools = WorkspaceToolSettings(enabled_tools=READ_ONLY_TOOLS)
        editor = HeadlessEditor("reject")  # no tool here opens a review; were one asked, nothing is written
        handle = self.runtime.open_window(
            editor, [self.folder], tool_factory=tool_factory(tools), claude=False, gemini=False, discoverable=False
        )
        self.handle = handle
        handle.ready.result(START_TIMEOUT_SECONDS)
        return WindowTools(handle.port, handle.chat_tokens, sys.executable, {"PYTHONPATH": package_root()})

    def close(self) -> None:
        self.runtime.stop()
