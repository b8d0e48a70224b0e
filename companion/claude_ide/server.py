"""Claude Code's side of a window server: its tools, its reviews and its notifications.

Served on the window server's port as a WebSocket at `/` (see `websocket.py`), with a token of its
own, written to Claude Code's lock file. The reviews are the window's, shown in the same UI as
Gemini CLI's, but each `openDiff` waits for the user's decision and answers only its caller:
Gemini CLI never hears of them, and Gemini's `closeDiff` cannot close them (nor Claude's
`closeAllDiffTabs` Gemini's).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from .. import __version__
from ..core.files import disk_text
from ..core.files.uris import diagnostics_by_uri, file_uri, path_of
from ..core.reviews import BY_CLAUDE, Outcome, Review
from ..core.server.security import Receive, Scope, Send
from ..core.server.window import Window, call_listener
from ..core.tool_calls import ToolError, error_result, string_argument
from . import protocol as cp
from .websocket import Connection, ReadStream, WriteStream, refusal, refuse, serve_connection

log = logging.getLogger("gemini_companion")

SERVER_NAME = "gemini-companion-sublime-claude"


class ClaudeSide:
    def __init__(self, window: Window, token: str) -> None:
        self.window = window
        self.token = token
        self.connections: set[Connection] = set()
        # tab_name → the open reviews opened under it. A list: two openDiffs may share a name (the
        # client makes names from the file name and 6 hex digits), and each stays closable by it.
        self.tabs: dict[str, list[Review]] = {}
        self.on_clients_changed: Callable[[], None] | None = None
        self._last_selection: dict[str, Any] | None = None
        self._latest_selection: dict[str, Any] | None = None  # the last non-empty one, for getLatestSelection
        self._handlers = self._tool_handlers()
        self._mcp = self._build_mcp_server()
        self._scopes: set[anyio.CancelScope] = set()

    # -- the WebSocket endpoint --

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = refusal(scope, self.token, self.window.port)
        if refused is not None:
            await refuse(send, *refused)
            return
        connection = Connection()
        connection.on_ready = lambda: self._connected(connection)
        self.connections.add(connection)
        cancel = anyio.CancelScope()
        self._scopes.add(cancel)
        try:
            with cancel:
                await serve_connection(connection, receive, send, self._serve)
        finally:
            self._scopes.discard(cancel)
            self.connections.discard(connection)
            self._clients_changed()

    async def _serve(self, read: ReadStream, write: WriteStream) -> None:
        await self._mcp.run(read, write, self._mcp.create_initialization_options())

    def _connected(self, connection: Connection) -> None:
        """The client finished its handshake: it hears the current selection as soon as it listens."""
        if self._last_selection is not None:
            connection.notify(cp.SELECTION_CHANGED, self._last_selection)
        self._clients_changed()

    def client_names(self) -> list[str]:
        return [c.client_name for c in self.connections if c.initialized.is_set()]

    def _clients_changed(self) -> None:
        call_listener(self.on_clients_changed)

    async def close(self) -> None:
        """End every Claude Code connection (their waiting openDiffs are closed by the window)."""
        for scope in list(self._scopes):
            scope.cancel()

    # -- notifications --

    def selection_changed(self) -> None:
        """The context changed (after the window's debounce): tell Claude Code if its selection did."""
        selection = self.window.context.claude_selection()
        if selection == self._last_selection:
            return
        self._last_selection = selection
        if selection is None:
            # Nothing shared is active (paused, an excluded file, nothing open): Claude Code must drop
            # the selection it holds, or it keeps adding it to every prompt. It ignores a null
            # selection; an empty one with no text and no file is what clears it (no ⧉ indicator,
            # no ide_selection / ide_opened_file in the prompt).
            self._notify(cp.SELECTION_CHANGED, cp.NO_SELECTION)
            return
        if selection["text"]:
            self._latest_selection = selection
        self._notify(cp.SELECTION_CHANGED, selection)

    def at_mentioned(self, file_path: str, line_start: int | None = None, line_end: int | None = None) -> int:
        """Insert `@file#Lstart-end` into Claude Code's prompt (0-based lines); returns the clients told."""
        params: dict[str, Any] = {"filePath": file_path}
        if line_start is not None:
            params["lineStart"] = line_start
            params["lineEnd"] = line_end if line_end is not None else line_start
        return self._notify(cp.AT_MENTIONED, params)

    def _notify(self, method: str, params: dict[str, Any]) -> int:
        ready = [c for c in self.connections if c.initialized.is_set()]
        for connection in ready:
            connection.notify(method, params)
        return len(ready)

    # -- MCP --

    def _build_mcp_server(self) -> Server[Any]:
        server: Server[Any] = Server(
            SERVER_NAME, version=__version__, on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )
        server.add_notification_handler(cp.IDE_CONNECTED, types.NotificationParams, self._ignore)
        return server

    async def _ignore(self, ctx: ServerRequestContext[Any], params: types.NotificationParams | None) -> None:
        return None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(name=name, description=description, input_schema=schema)
            for name, (description, schema) in cp.TOOLS.items()
        ]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        handler = self._handlers.get(params.name)
        try:
            if handler is None:
                raise ToolError(f"Unknown tool {params.name!r}. Call tools/list for the tools this server offers.")
            return _texts(*await handler(ctx, arguments))
        except ToolError as exc:
            return error_result(str(exc))

    def _tool_handlers(self) -> dict[str, Callable[..., Any]]:
        return {
            cp.OPEN_DIFF: self._open_diff,
            cp.OPEN_FILE: self._open_file,
            cp.GET_CURRENT_SELECTION: self._current_selection,
            cp.GET_LATEST_SELECTION: self._latest,
            cp.GET_OPEN_EDITORS: self._open_editors,
            cp.GET_WORKSPACE_FOLDERS: self._workspace_folders,
            cp.GET_DIAGNOSTICS: self._diagnostics,
            cp.CHECK_DOCUMENT_DIRTY: self._check_dirty,
            cp.SAVE_DOCUMENT: self._save,
            cp.CLOSE_TAB: self._close_tab,
            cp.CLOSE_ALL_DIFF_TABS: self._close_all,
        }

    # -- tools; each returns the text items of its result --

    async def _open_diff(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        path = string_argument(arguments, "new_file_path" if "new_file_path" in arguments else "old_file_path")
        proposal = string_argument(arguments, "new_file_contents", allow_empty=True)
        named = arguments.get("tab_name")
        tab_name = named if isinstance(named, str) and named else path
        if not os.path.isabs(path):
            raise ToolError(f"openDiff needs an absolute new_file_path, not {path!r}.")
        try:  # never on Sublime's thread: non-blocking, at most 16 MiB (see disk_text)
            disk = disk_text.checked_read(path)
        except disk_text.PathRefused as exc:
            raise ToolError(f"openDiff: {exc}") from None
        try:  # no timeout: the user may take as long as they need (the client waits too)
            outcome, text = await self.window.request_review(
                path,
                proposal,
                _requester(ctx),
                timeout=None,
                disk=disk,
                agent=BY_CLAUDE,
                on_open=lambda review: self._remember_tab(tab_name, review),
            )
        finally:
            self._forget_ended(tab_name)
        if outcome is Outcome.ACCEPTED:
            return [cp.FILE_SAVED, text if text is not None else proposal]
        return [cp.DIFF_REJECTED, tab_name]

    def _remember_tab(self, tab_name: str, review: Review) -> None:
        self.tabs.setdefault(tab_name, []).append(review)

    def _forget_ended(self, tab_name: str) -> None:
        """Drop the reviews under `tab_name` that are over, however they ended."""
        still_open = [review for review in self.tabs.get(tab_name, []) if review.is_open]
        if still_open:
            self.tabs[tab_name] = still_open
        else:
            self.tabs.pop(tab_name, None)

    async def _close_tab(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        for review in self.tabs.pop(string_argument(arguments, "tab_name"), []):  # every review of that name
            await self.window.close_review(review)
        return ["TAB_CLOSED"]

    async def _close_all(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        reviews, self.tabs = [review for named in self.tabs.values() for review in named], {}
        closed = [review for review in reviews if await self.window.close_review(review)]
        return [f"CLOSED_{len(closed)}_DIFF_TABS"]

    async def _open_file(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        path = _absolute(arguments, "filePath")
        start, end = arguments.get("startText"), arguments.get("endText")
        opened = await self.window.editor.open_file(
            path, start if isinstance(start, str) else "", end if isinstance(end, str) else ""
        )
        if not opened:
            raise ToolError(f"Could not open {path}: this editor has no window to show it in, or it is not a file.")
        return [f"Opened file: {path}"]

    async def _current_selection(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        selection = self.window.context.claude_selection()
        if selection is None:
            return [json.dumps({"success": False, "message": "No active editor found"})]
        return [json.dumps({"success": True, **selection})]

    async def _latest(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        if self._latest_selection is None:
            return [json.dumps({"success": False, "message": "No selection available"})]
        return [json.dumps({"success": True, **self._latest_selection})]

    async def _open_editors(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        paths = self.window.context.snapshot_paths()
        tabs = [
            {"uri": file_uri(path), "isActive": index == 0, "label": os.path.basename(path), "fileName": path}
            for index, path in enumerate(paths)
        ]
        return [json.dumps({"tabs": tabs})]

    async def _workspace_folders(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        folders = self.window.folders()
        items = [{"name": os.path.basename(f) or f, "uri": file_uri(f), "path": f} for f in folders]
        return [json.dumps({"success": True, "folders": items, "rootPath": folders[0] if folders else None})]

    async def _diagnostics(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        uri = arguments.get("uri")
        path = path_of(uri) if isinstance(uri, str) and uri else None
        return [json.dumps(diagnostics_by_uri(await self.window.editor.diagnostics(path)))]

    async def _check_dirty(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        path = _absolute(arguments, "filePath")
        dirty = await self.window.editor.is_dirty(path)
        if dirty is None:
            return [json.dumps({"success": False, "message": f"Document not open: {path}"})]
        return [json.dumps({"success": True, "filePath": path, "isDirty": dirty, "isUntitled": False})]

    async def _save(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> list[str]:
        path = _absolute(arguments, "filePath")
        saved = await self.window.editor.save_file(path)
        if saved is None:
            return [json.dumps({"success": False, "message": f"Document not open: {path}"})]
        message = "Document saved" if saved else "The editor could not save it; see its status bar for why"
        return [json.dumps({"success": saved, "filePath": path, "saved": saved, "message": message})]


def _texts(*texts: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text) for text in texts])


def _requester(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    name = params.client_info.name if params is not None else ""
    return "Claude Code" if name == "claude-code" else (name or "Claude Code")


def _absolute(arguments: dict[str, Any], name: str) -> str:
    path = path_of(string_argument(arguments, name))
    if not os.path.isabs(path) or "\0" in path:
        raise ToolError(f"The argument {name!r} must be an absolute path, not {path!r}.")
    return path
