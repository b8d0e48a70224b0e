"""One window's server: its socket, the guard in front of it, uvicorn, the window's `Reviews` and
the context debounce. It knows no agent protocol: the rooms are mounted on it (an HTTP room at
`/mcp`, Gemini CLI's MCP server with the workspace tools; a WebSocket room at `/`, Claude Code's
`/ide`), and the runtime decides which. Everything here runs on the runtime's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

import uvicorn

from ..context import ContextTracker
from ..editor import Editor
from ..files import disk_text
from ..reviews import BY_TOOL, Outcome, Review, Reviews
from ..tool_calls import ToolError
from .chat_tokens import ChatTokens
from .connections import GuardedH11Protocol
from .request_ids import RequestIds
from .security import MAX_BODY_BYTES, RequestGuard
from .window import HttpRoom, WebSocketRoom

log = logging.getLogger("gemini_companion")

DEBOUNCE_SECONDS = 0.05
SHOW_REVIEW_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 0.8


class WindowServer:
    """The server of one editor window, on a socket already listening. Construct, mount the rooms,
    `await start()`, `await stop()` (which closes the socket); not reusable."""

    def __init__(
        self,
        editor: Editor,
        context: ContextTracker,
        token: str,
        sock: socket.socket,
        folders: Callable[[], list[str]] = list,
        chat_tokens: ChatTokens | None = None,
    ) -> None:
        self.editor = editor
        self.chat_tokens = chat_tokens  # the window's chats' own tokens, accepted besides `token`
        self.folders = folders
        self.context = context
        self.token = token
        # Bound and listening already (loopback.bind_loopback, before this module was imported):
        # the discovery file naming its port may be out, and clients may wait in its backlog.
        self._sock = sock
        self.port: int = sock.getsockname()[1]
        self.reviews = Reviews(self._decision_from_any_thread)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._serve_task: asyncio.Task[None] | None = None
        self._debounce: asyncio.TimerHandle | None = None
        # The rooms the runtime mounts before start(): an HTTP room at /mcp (without it, /mcp is
        # refused like any unknown path) and a WebSocket room at "/" (Claude Code's /ide side).
        self.http: HttpRoom | None = None
        self.websocket: WebSocketRoom | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    # -- lifecycle --

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        sock = self._sock
        inner = RequestIds(self.http.app(), MAX_BODY_BYTES) if self.http is not None else None
        app = RequestGuard(
            inner,
            self.token,
            self.port,
            websocket=self.websocket,
            chat_tokens=None if self.chat_tokens is None else self.chat_tokens.accepts,
        )
        websocket: dict[str, Any] = {"ws": "none"}
        if self.websocket is not None:
            from . import ws_protocol  # the WebSocket stack is imported only when a room needs it

            websocket = ws_protocol.uvicorn_options()  # wsproto, guarded like the HTTP connections
        config = uvicorn.Config(
            app,
            lifespan="on" if self.http is not None else "off",  # the HTTP room's app runs its sessions in it
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
        self.context.set_listener(self.context_changed_threadsafe)

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
        for review in self.reviews.all():
            await self.close_review(review)
        if self.websocket is not None:
            await self.websocket.close()
        if self.http is not None:
            await self.http.close()
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
        if self.http is not None:
            self.http.context_changed()

    # -- diff outcomes from the editor --

    def _decision_from_any_thread(self, review: Review, outcome: Outcome, content: str | None) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self.finish, review, outcome, content)

    def finish(self, review: Review, outcome: Outcome, content: str | None = None) -> bool:
        """End `review` once; a review no caller waits on (Gemini's openDiff) is the HTTP room's to report."""
        if not self.reviews.finish(review, outcome):
            return False  # already ended by closeDiff, another decision or shutdown
        if review.on_decided is not None:
            review.on_decided(outcome, content)
        elif self.http is not None:
            self.http.review_decided(review, outcome, content)
        return True

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
        if not self.finish(review, outcome):
            return False
        await self.close_in_editor(review)
        return True

    async def close_in_editor(self, review: Review) -> str:
        """Close `review`'s view; its proposal as the editor last held it."""
        try:
            return await asyncio.wait_for(self.editor.close_review(review), SHOW_REVIEW_TIMEOUT_SECONDS)
        except Exception as exc:
            log.warning("the editor could not close the diff for %s: %r", review.file_path, exc)
            return review.proposal
