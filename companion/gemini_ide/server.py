"""One window's MCP server: the `openDiff`/`closeDiff` tools, context updates and diff outcomes.

Built on the `mcp` SDK's low-level `Server` in stateful Streamable HTTP mode (the only mode with a
standalone GET stream, which is the only way notifications reach Gemini CLI), served by uvicorn
(h11) on a socket bound to 127.0.0.1. Everything here runs on the runtime's event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import ClientDisconnect

from .. import __version__, disk_text
from ..connections import GuardedH11Protocol
from ..context import ContextTracker
from ..diffs import BY_GEMINI, BY_TOOL, Outcome, Review, ReviewBusy, Reviews
from ..editor import Editor
from ..request_ids import RequestIds
from ..security import MAX_BODY_BYTES, Receive, RequestGuard, Scope, Send, header
from ..tool_calls import ToolError, ToolSpec, error_result, string_argument
from ..window import WebSocketRoom
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

DEBOUNCE_SECONDS = 0.05
PRUNE_INTERVAL_SECONDS = 20.0
SHOW_REVIEW_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 0.8
# A client that went away without a DELETE is reaped this long after its last request ended and
# its stream closed; a connected Gemini CLI always holds its stream, so it is never reaped.
SESSION_IDLE_SECONDS = 300.0


class WindowServer:
    """The MCP server of one editor window, on a socket already listening. Construct, `await start()`,
    `await stop()` (which closes the socket); not reusable."""

    def __init__(
        self,
        editor: Editor,
        context: ContextTracker,
        token: str,
        sock: socket.socket,
        folders: Callable[[], list[str]] = list,
    ) -> None:
        self.editor = editor
        self.folders = folders
        self.context = context
        self.token = token
        # Bound and listening already (loopback.bind_loopback, before this module was imported):
        # the discovery file naming its port may be out, and clients may wait in its backlog.
        self._sock = sock
        self.port: int = sock.getsockname()[1]
        self.reviews = Reviews(self._decision_from_any_thread)
        self.broadcaster = Broadcaster(context.params)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._serve_task: asyncio.Task[None] | None = None
        self._mcp: Server[Any] | None = None
        self._debounce: asyncio.TimerHandle | None = None
        self._last_context: dict[str, Any] | None = None
        self._pruner: asyncio.Task[None] | None = None
        self.extra_tools: dict[str, ToolSpec] = {}
        self.on_context_sent: Callable[[dict[str, Any]], None] | None = None
        # A room served on the same port as a WebSocket at "/" (Claude Code's /ide side), or None;
        # the runtime joins it before start().
        self.websocket: WebSocketRoom | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    # -- lifecycle --

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        sock = self._sock
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
                allowed_hosts=[f"127.0.0.1:{self.port}", f"localhost:{self.port}"],
                allowed_origins=[],
            ),
        )
        sdk = _StraightToSessions(sdk_app, self._mcp.session_manager)
        inner = RequestIds(_StreamWatcher(_HandshakeEraOnly(sdk), self), MAX_BODY_BYTES)
        app = RequestGuard(inner, self.token, self.port, websocket=self.websocket)
        websocket: dict[str, Any] = {"ws": "none"}
        if self.websocket is not None:
            from .. import ws_protocol  # the WebSocket stack is imported only when a room needs it

            websocket = ws_protocol.uvicorn_options()  # wsproto, guarded like the HTTP connections
        config = uvicorn.Config(
            app,
            lifespan="on",
            loop="none",
            http=GuardedH11Protocol,  # h11 with a connection cap and a request-head deadline
            **websocket,
            ws_max_size=MAX_BODY_BYTES,  # a frame over the cap closes the connection (1009)
            ws_per_message_deflate=False,  # no compression: nothing to inflate past the cap
            log_config=None,
            access_log=False,
            # No proxy sits in front of a loopback server: uvicorn would otherwise trust any local
            # client's X-Forwarded-* headers (it trusts 127.0.0.1 by default, uvicorn/config.py
            # L362-363) and run one more middleware on every request.
            proxy_headers=False,
            timeout_graceful_shutdown=1,
        )
        self._uvicorn = uvicorn.Server(config)
        self._serve_task = asyncio.create_task(self._serve(sock), name=f"uvicorn-{self.port}")
        while not self._uvicorn.started:
            if self._serve_task.done():
                sock.close()
                error = self._serve_task.exception()
                raise RuntimeError(f"the server on port {self.port} failed to start: {error!r}")
            await asyncio.sleep(0.002)
        self._pruner = asyncio.create_task(self._prune_periodically(), name=f"prune-{self.port}")
        self.context.set_listener(self.context_changed_threadsafe)
        _quiet_client_hangups()

    async def _serve(self, sock: socket.socket) -> None:
        assert self._uvicorn is not None
        try:
            await self._uvicorn.serve(sockets=[sock])
        except SystemExit as exc:  # uvicorn exits on a lifespan failure; keep it inside the task
            raise RuntimeError(f"uvicorn stopped with exit code {exc.code}") from None
        finally:
            sock.close()

    async def stop(self) -> None:
        """Stop serving; returns within about a second even while clients hold their streams."""
        self._stop_accepting()
        self.context.set_listener(None)
        if self._debounce is not None:
            self._debounce.cancel()
        if self._pruner is not None:
            self._pruner.cancel()
        for review in self.reviews.all():
            await self.close_review(review)
        if self.websocket is not None:
            await self.websocket.close()
        await self._terminate_sessions()
        await self.broadcaster.close()
        if self._uvicorn is not None and self._serve_task is not None:
            self._uvicorn.should_exit = True
            try:
                await asyncio.wait_for(asyncio.shield(self._serve_task), STOP_TIMEOUT_SECONDS)
            except (TimeoutError, asyncio.TimeoutError):
                self._uvicorn.force_exit = True
                self._serve_task.cancel()
                await asyncio.gather(self._serve_task, return_exceptions=True)
            except Exception as exc:
                log.debug("server on port %s ended with %r", self.port, exc)
        self._sock.close()  # a server stopped before it served still holds its listening socket

    def _stop_accepting(self) -> None:
        """Before any connection is closed: a client reconnects at once (Claude Code within 2-10 ms)
        and would be accepted, initialized and cut again ~100 ms later, when uvicorn stops."""
        if self._uvicorn is None:
            return
        for listener in self._uvicorn.servers:
            listener.close()  # new connections are refused; the open ones stay until closed below
        for connection in list(self._uvicorn.server_state.connections):
            if isinstance(connection, GuardedH11Protocol) and not connection.busy():
                connection.shutdown()  # an idle keep-alive connection would carry a new initialize

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

    # -- context --

    def context_changed_threadsafe(self) -> None:
        """The editor's context changed (any thread): send it after a trailing 50 ms debounce."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._restart_debounce)

    def _restart_debounce(self) -> None:
        assert self._loop is not None
        if self._debounce is not None:
            self._debounce.cancel()
        self._debounce = self._loop.call_later(DEBOUNCE_SECONDS, self.flush_context)

    def flush_context(self) -> None:
        self._debounce = None
        if self.websocket is not None:
            self.websocket.selection_changed()
        params = self.context.params()
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

    # -- diff outcomes from the editor --

    def _decision_from_any_thread(self, review: Review, outcome: Outcome, content: str | None) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._decide, review, outcome, content)

    def _decide(self, review: Review, outcome: Outcome, content: str | None) -> None:
        self._finish(review, outcome, content)

    def _finish(self, review: Review, outcome: Outcome, content: str | None = None) -> bool:
        """End `review` once; only the user's decision on an openDiff review is broadcast."""
        if not self.reviews.finish(review, outcome):
            return False  # already ended by closeDiff, another decision or shutdown
        if review.on_decided is not None:
            review.on_decided(outcome, content)
        elif outcome is Outcome.ACCEPTED:
            self.broadcaster.broadcast(DIFF_ACCEPTED, {"filePath": review.file_path, "content": content or ""})
        elif outcome is Outcome.REJECTED:
            self.broadcaster.broadcast(DIFF_REJECTED, {"filePath": review.file_path})
        return True

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
        tools += [spec.tool for spec in self.extra_tools.values()]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._remember(ctx)
        arguments = params.arguments or {}
        try:
            if params.name == OPEN_DIFF:
                return await self._open_diff(ctx, arguments)
            if params.name == CLOSE_DIFF:
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
            review, replaced = self.reviews.open(file_path, new_content, requested_by)
        except ReviewBusy:
            raise ToolError(
                f"A review of {file_path} requested by another tool is open in the editor; "
                "it must be accepted or rejected first, then try again."
            ) from None
        review.disk = disk
        try:
            await asyncio.wait_for(self.editor.show_review(review), SHOW_REVIEW_TIMEOUT_SECONDS)
        except Exception as exc:
            # A replaced review was already promised to an earlier openDiff: answer that caller
            # with a rejection (nothing is written) rather than leave it waiting.
            await self.close_review(review, Outcome.REJECTED if replaced else Outcome.CLOSED)
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
        review = self.reviews.get(file_path)
        if review is not None and review.agent != BY_GEMINI:
            review = None  # another agent's review (Claude Code's, write_file's): not Gemini's to close
        content: str | None = None
        # Claim the review before awaiting the editor, so a user decision arriving meanwhile is
        # ignored instead of being sent while closeDiff is served.
        if review is not None and self._finish(review, Outcome.CLOSED):
            content = await self._close_in_editor(review)
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps({"content": content}))])

    async def request_review(
        self,
        file_path: str,
        proposal: str,
        requested_by: str,
        timeout: float | None,
        disk: disk_text.DiskText | None = None,
        agent: str = BY_TOOL,
        on_open: Callable[[Review], None] | None = None,
    ) -> tuple[Outcome, str | None]:
        """Show a review that the caller waits on (write_file, Claude Code's openDiff); returns
        (outcome, accepted text). `on_open` sees the review once it exists.

        Nothing is broadcast. A timeout (None: no limit) counts as a rejection; a cancelled call
        closes the review.
        """
        loop = asyncio.get_running_loop()
        decision: asyncio.Future[tuple[Outcome, str | None]] = loop.create_future()

        def decided(outcome: Outcome, content: str | None) -> None:
            if not decision.done():
                decision.set_result((outcome, content))

        if disk is None:
            disk = disk_text.read(file_path)
        review = self.reviews.open_exclusive(file_path, proposal, requested_by, decided, agent)
        if review is None:
            raise ToolError(f"A review of {file_path} is already open in the editor; finish it first, then try again.")
        review.disk = disk
        if on_open is not None:
            on_open(review)
        try:
            await asyncio.wait_for(self.editor.show_review(review), SHOW_REVIEW_TIMEOUT_SECONDS)
            return await asyncio.wait_for(asyncio.shield(decision), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            await self.close_review(review, Outcome.REJECTED)
            return decision.result() if decision.done() else (Outcome.REJECTED, None)
        except BaseException:
            await self.close_review(review)
            raise

    async def close_review(self, review: Review, outcome: Outcome = Outcome.CLOSED) -> bool:
        """End `review` without the user's decision (its caller hears `outcome`) and close it in the
        editor; False if it had already ended."""
        if not self._finish(review, outcome):
            return False
        await self._close_in_editor(review)
        return True

    async def _close_in_editor(self, review: Review) -> str:
        try:
            return await asyncio.wait_for(self.editor.close_review(review), SHOW_REVIEW_TIMEOUT_SECONDS)
        except Exception as exc:
            log.warning("the editor could not close the diff for %s: %r", review.file_path, exc)
            return review.proposal


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

    def __init__(self, app: Any, server: WindowServer) -> None:
        self.app = app
        self.server = server

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
            self.server.broadcaster.forget(session_id)
        else:
            await self.app(scope, receive, send)

    async def _serve_stream(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        opened = False

        async def watch(message: Any) -> None:
            nonlocal opened
            await send(message)
            if message["type"] == "http.response.start" and message["status"] == 200 and not opened:
                opened = True
                self.server.broadcaster.stream_opened(session_id)

        try:
            await self.app(scope, receive, watch)
        finally:
            if opened:
                self.server.broadcaster.stream_closed(session_id)


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
