"""Gemini CLI's side of a window server: the `openDiff`/`closeDiff` tools, context updates and diff
outcomes, with the workspace tools for other MCP clients, at `/mcp` on the window server's port.

Built on the `mcp` SDK's low-level `Server` in stateful Streamable HTTP mode (the only mode with a
standalone GET stream, which is the only way notifications reach Gemini CLI). Mounted on the
window's server (`window_server.py`) the way Claude Code's side is; without Gemini CLI
(`serves_gemini` False) it offers only the workspace tools and sends no `ide/` notifications.
Everything here runs on the runtime's event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import ClientDisconnect

from .. import __version__
from ..core.files import disk_text
from ..core.reviews import BY_GEMINI, Outcome, Review, ReviewBusy
from ..core.server.security import MAX_BODY_BYTES, ASGIApp, Receive, Scope, Send, from_chat, header
from ..core.server.window import Window
from ..core.server.window_server import SHOW_REVIEW_TIMEOUT_SECONDS
from ..core.tool_calls import ToolError, ToolSpec, error_result, string_argument
from . import sse_lines
from .notifications import Broadcaster
from .protocol import (
    CLOSE_DIFF,
    CLOSE_DIFF_INPUT_SCHEMA,
    CONTEXT_UPDATE,
    DIFF_ACCEPTED,
    DIFF_REJECTED,
    OPEN_DIFF,
    OPEN_DIFF_INPUT_SCHEMA,
    SERVER_NAME,
)
from .wire import InvalidNotification

log = logging.getLogger("gemini_companion")

PRUNE_INTERVAL_SECONDS = 20.0
# A client that went away without a DELETE is reaped this long after its last request ended and
# its stream closed; a connected Gemini CLI always holds its stream, so it is never reaped.
SESSION_IDLE_SECONDS = 300.0


class GeminiSide:
    """The MCP endpoint of one window (an `HttpRoom`): Gemini CLI's tools and notifications when
    `serves_gemini`, and the `extra_tools` (the workspace tools) in any case."""

    def __init__(self, window: Window, serves_gemini: bool = True) -> None:
        self.window = window
        self.serves_gemini = serves_gemini
        self.broadcaster = Broadcaster(window.context.params)
        self._mcp: Server[Any] | None = None
        self._last_context: dict[str, Any] | None = None
        self._pruner: asyncio.Task[None] | None = None
        self.extra_tools: dict[str, ToolSpec] = {}
        self.on_context_sent: Callable[[dict[str, Any]], None] | None = None

    # -- lifecycle (the window server's) --

    def app(self) -> ASGIApp:
        """The endpoint's ASGI app, built on the loop as the window server starts; it also runs the
        SDK's session manager in uvicorn's lifespan."""
        port = self.window.port
        self._mcp = self._build_mcp_server()
        sse_lines.install()  # large notifications must not hold up the loop (see sse_lines)
        sdk_app = self._mcp.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=False,
            json_response=True,  # POST replies as one JSON body (~30 % faster); notifications use the GET stream
            max_request_body_size=MAX_BODY_BYTES,
            session_idle_timeout=SESSION_IDLE_SECONDS,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"],
                allowed_origins=[],
            ),
        )
        sdk = _StraightToSessions(sdk_app, self._mcp.session_manager)
        self._pruner = asyncio.create_task(self._prune_periodically(), name=f"prune-{port}")
        _quiet_client_hangups()
        return _StreamWatcher(_HandshakeEraOnly(sdk), self)

    async def close(self) -> None:
        """End every session (the window closes their reviews)."""
        if self._pruner is not None:
            self._pruner.cancel()
        await self._terminate_sessions()
        await self.broadcaster.close()

    async def _terminate_sessions(self) -> None:
        # An open GET stream never ends by itself, and uvicorn waits for open connections:
        # end every session first so shutdown does not hang.
        for transport in list(self._transports().values()):
            try:
                await transport.terminate()
            except Exception as exc:
                log.debug("terminating a session failed: %r", exc)

    def _transports(self) -> dict[str, Any]:
        if self._mcp is None:
            return {}
        # Private in mcp 2.3.0 (pinned exactly); tests fail loudly if it moves.
        return self._mcp.session_manager._server_instances  # pyright: ignore[reportPrivateUsage]

    async def _prune_periodically(self) -> None:
        while True:
            await asyncio.sleep(PRUNE_INTERVAL_SECONDS)
            self.prune_sessions()

    def prune_sessions(self) -> None:
        live = {sid for sid, t in self._transports().items() if not t.is_terminated}
        self.broadcaster.prune(live)

    # -- notifications --

    def context_changed(self) -> None:
        """The context changed (after the window's debounce): send Gemini CLI the update if it did."""
        if not self.serves_gemini:
            return
        params = self.window.context.params()
        if params == self._last_context:
            return
        self._last_context = params
        try:
            self.broadcaster.broadcast(CONTEXT_UPDATE, params)
        except InvalidNotification as exc:
            # Sending it would disconnect Gemini CLI for good: drop it and say so.
            log.error("not sending a context update that Gemini CLI would reject: %s", exc)
            return
        if self.on_context_sent is not None:
            self.on_context_sent(params)

    def review_decided(self, review: Review, outcome: Outcome, content: str | None) -> None:
        """The user decided an openDiff review (no caller waits on it): only that is broadcast."""
        if outcome is Outcome.ACCEPTED:
            self.broadcaster.broadcast(DIFF_ACCEPTED, {"filePath": review.file_path, "content": content or ""})
        elif outcome is Outcome.REJECTED:
            self.broadcaster.broadcast(DIFF_REJECTED, {"filePath": review.file_path})

    # -- MCP --

    def _build_mcp_server(self) -> Server[Any]:
        server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        server.add_notification_handler("notifications/initialized", types.NotificationParams, self._initialized)
        # The SDK's one default middleware opens an OpenTelemetry span per message, "a no-op until an
        # OTel exporter is installed" (mcp 2.3.0, server/lowlevel/server.py L445-447, which says to
        # drop it to opt out). None is installed in Sublime, and it cost ~2 % of a small call.
        server.middleware.clear()
        return server

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        if _from_chat(ctx):
            return  # a chat's agent: no ide/ notifications, not one of the window's CLI clients
        request = ctx.request
        session_id = request.headers.get("mcp-session-id") if request is not None else None
        if not session_id:
            return
        params = ctx.session.client_params
        name = params.client_info.name if params is not None else "client"
        self.broadcaster.seen(session_id, ctx.session, name)

    async def _initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams | None) -> None:
        self._remember(ctx)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        tools = [
            types.Tool(
                name=OPEN_DIFF,
                description="Show a proposed change to a file as a diff the user can edit, accept or reject. "
                "Answers at once; the outcome arrives as ide/diffAccepted or ide/diffRejected.",
                input_schema=OPEN_DIFF_INPUT_SCHEMA,
            ),
            types.Tool(
                name=CLOSE_DIFF,
                description="Close the diff review of a file and return its current proposed text as "
                'JSON {"content": ...}. Sends no notification.',
                input_schema=CLOSE_DIFF_INPUT_SCHEMA,
            ),
        ]
        if not self.serves_gemini or _from_chat(ctx):
            tools = []  # Gemini CLI is not served (or this is a chat's agent): its tools are unknown here
        tools += [spec.tool for spec in self.extra_tools.values()]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember(ctx)
        arguments = params.arguments or {}
        try:
            gemini = self.serves_gemini and not _from_chat(ctx)
            if params.name == OPEN_DIFF and gemini:
                return await self._open_diff(ctx, arguments)
            if params.name == CLOSE_DIFF and gemini:
                return await self._close_diff(arguments)
            spec = self.extra_tools.get(params.name)
            if spec is None:
                raise ToolError(f"Unknown tool {params.name!r}. Call tools/list for the tools this server offers.")
            return await spec.handler(ctx, arguments)
        except ToolError as exc:
            return error_result(str(exc))

    async def _open_diff(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        file_path = string_argument(arguments, "filePath")
        new_content = string_argument(arguments, "newContent", allow_empty=True)
        if not file_path:
            raise ToolError("openDiff needs a non-empty filePath (the absolute path of the file to change).")
        try:  # on the loop thread, never Sublime's: non-blocking, at most 16 MiB (see disk_text)
            disk = disk_text.checked_read(file_path)
        except disk_text.PathRefused as exc:
            raise ToolError(f"openDiff: {exc}") from None
        client_params = ctx.session.client_params
        requested_by = client_params.client_info.name if client_params is not None else "client"
        try:
            review, replaced = self.window.reviews.open(file_path, new_content, requested_by)
        except ReviewBusy:
            raise ToolError(
                f"A review of {file_path} requested by another tool is open in the editor; "
                "it must be accepted or rejected first, then try again."
            ) from None
        review.disk = disk
        try:
            await asyncio.wait_for(self.window.editor.show_review(review), SHOW_REVIEW_TIMEOUT_SECONDS)
        except Exception as exc:
            # A replaced review was already promised to an earlier openDiff: answer that caller
            # with a rejection (nothing is written) rather than leave it waiting.
            await self.window.close_review(review, Outcome.REJECTED if replaced else Outcome.CLOSED)
            log.warning("could not show the diff for %s: %r", file_path, exc)
            raise ToolError(
                f"The editor could not show the diff for {file_path}: {exc or type(exc).__name__}. "
                "Check that the window is still open, then try again."
            ) from exc
        return types.CallToolResult(content=[])

    async def _close_diff(self, arguments: dict[str, Any]) -> types.CallToolResult:
        file_path = string_argument(arguments, "filePath")
        try:
            disk_text.check_shape(file_path)
        except disk_text.PathRefused as exc:
            raise ToolError(f"closeDiff: {exc}") from None
        review = self.window.reviews.get(file_path)
        if review is not None and review.agent != BY_GEMINI:
            review = None  # another agent's review (Claude Code's, write_file's): not Gemini's to close
        content: str | None = None
        # Claim the review before awaiting the editor, so a user decision arriving meanwhile is
        # ignored instead of being sent while closeDiff is served.
        if review is not None and self.window.finish(review, Outcome.CLOSED):
            content = await self.window.close_in_editor(review)
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps({"content": content}))])


def _from_chat(ctx: ServerRequestContext[Any]) -> bool:
    """Did the request carry a chat's own token? Its agent gets the workspace tools only."""
    return from_chat(ctx.request)


class _StraightToSessions:
    """HTTP requests go straight to the SDK's session manager; the lifespan (which runs the
    manager) to the SDK's Starlette app.

    That app only routes `/mcp` to `session_manager.handle_request` (mcp 2.3.0,
    server/lowlevel/server.py L774-851), behind Starlette's router and error middlewares: 4 % of
    the loop's time per small call (cProfile, 1 KiB openDiffs). RequestGuard has already refused
    every other path, and the SDK's own checks (Host/Origin, body size, sessions) are inside
    `handle_request`. An exception still becomes uvicorn's 500.
    """

    def __init__(self, app: Any, sessions: StreamableHTTPSessionManager) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # Past the SDK's RequestBodyLimitMiddleware (its only step before this one, mcp 2.3.0
            # streamable_http_manager.py L114/L176-181): RequestIds has already read the whole body
            # under the same limit (413 past it), and that middleware would buffer it again, copying
            # it twice more (8 MiB openDiff: 2 of the 4 copies, cProfile). Private, so pinned exactly.
            await self.sessions._handle_request(scope, receive, send)  # pyright: ignore[reportPrivateUsage]
        else:
            await self.app(scope, receive, send)


class _HandshakeEraOnly:
    """Steer clients to the session (handshake) era, the only one with a notification stream.

    A client offering the sessionless 2026-07-28 era is answered with the standard
    unsupported-version error listing the handshake versions; SDK clients in "auto" mode then fall
    back to `initialize` and get their notifications like Gemini CLI does.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            version = header(scope, b"mcp-protocol-version")
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {
                            "code": types.UNSUPPORTED_PROTOCOL_VERSION,
                            "message": "Unsupported protocol version: use the initialize handshake.",
                            "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
                        },
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class _StreamWatcher:
    """Tell the broadcaster when a session's GET stream opens or ends, and when it is deleted."""

    def __init__(self, app: Any, side: GeminiSide) -> None:
        self.app = app
        self.side = side

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method")
        session_id = header(scope, b"mcp-session-id")
        if method == "GET" and session_id:
            await self._serve_stream(session_id, scope, receive, send)
        elif method == "DELETE" and session_id:
            await self.app(scope, receive, send)
            self.side.broadcaster.forget(session_id)
        else:
            await self.app(scope, receive, send)

    async def _serve_stream(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        opened = False

        async def watch(message: Any) -> None:
            nonlocal opened
            await send(message)
            if message["type"] == "http.response.start" and message["status"] == 200 and not opened:
                opened = True
                self.side.broadcaster.stream_opened(session_id)

        try:
            await self.app(scope, receive, watch)
        finally:
            if opened:
                self.side.broadcaster.stream_closed(session_id)


class _ClientHungUp(logging.Filter):
    """A client that hangs up while sending a request (Ctrl-C in the CLI during a big openDiff) is
    not an error of ours, but the SDK logs it at ERROR with a traceback, which lands in Sublime's
    console. Say it in one debug line instead; every other record passes."""

    installed_by = "gemini_companion"  # finds a filter left by an earlier load of this module

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is not None and isinstance(record.exc_info[1], ClientDisconnect):
            log.debug("a client hung up while sending a request; nothing was done with it")
            return False
        return True


def _quiet_client_hangups() -> None:
    """Install the filter once on the SDK's transport logger (a package reload replaces it)."""
    sdk_log = logging.getLogger("mcp.server.streamable_http")
    for old in [f for f in sdk_log.filters if getattr(f, "installed_by", None) == _ClientHungUp.installed_by]:
        sdk_log.removeFilter(old)
    sdk_log.addFilter(_ClientHungUp())
