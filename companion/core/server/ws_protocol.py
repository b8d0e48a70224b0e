"""The connection under Claude Code's WebSocket: uvicorn's wsproto protocol with three more rules.

- Whatever it raises, it leaves the server's connections. uvicorn catches only wsproto's own
  errors in `data_received`; an object left counted holds one of MAX_CONNECTIONS slots for good.
- A client that reads nothing is cut. uvicorn ends an unresponsive client (no pong within
  PING_TIMEOUT_SECONDS) with `transport.close()`, which waits for the write buffer to drain:
  such a client never drains it (measured: still connected at 60 s). That close is forced, and so
  is any close still unfinished after CLOSE_DRAIN_SECONDS.
- What we hold for one client is bounded. While its replies cannot be written (the transport has
  paused writing), none of its further requests is served, so they wait in its own socket instead
  of becoming replies in our memory (measured before: +3.6 MB per 1 000 unread `tools/list`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.websockets.wsproto_impl import WSProtocol

from .rate_limited import RateLimitedWarning

if TYPE_CHECKING:
    from uvicorn._types import WebSocketEvent

# uvicorn's defaults, named here because they decide how soon a client that reads nothing is cut.
PING_INTERVAL_SECONDS = 20.0
PING_TIMEOUT_SECONDS = 20.0
CLOSE_DRAIN_SECONDS = 10.0  # uvicorn's own close_timeout for the closing handshake

protocol_failed = RateLimitedWarning(
    "closed a WebSocket connection whose data could not be handled (%r); the companion keeps serving "
    "the others. If this is your client, check what it sends"
)


def uvicorn_options() -> dict[str, Any]:
    """The `uvicorn.Config` options of a window server that serves Claude Code."""
    return {"ws": GuardedWSProtocol, "ws_ping_interval": PING_INTERVAL_SECONDS, "ws_ping_timeout": PING_TIMEOUT_SECONDS}


class GuardedWSProtocol(WSProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._close_watch: asyncio.TimerHandle | None = None
        self._closing_seen = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._close_watch = self.loop.call_later(CLOSE_DRAIN_SECONDS, self._watch_close)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._close_watch is not None:
            self._close_watch.cancel()
            self._close_watch = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        try:
            super().data_received(data)
        except Exception as exc:
            # Never raised on: inside the upgrade, uvicorn would skip handing this object the
            # transport, and the transport's loss would never reach it (nor count it out).
            protocol_failed(exc)
            self.transport.abort()  # its connection_lost comes on a later loop turn, to this object

    def keepalive_timeout(self) -> None:
        super().keepalive_timeout()
        # No pong in time: the client reads nothing, so the close frame queued behind its unread
        # data would never leave, and the close would wait for it forever.
        self.transport.abort()

    async def receive(self) -> WebSocketEvent:
        # uvicorn pauses reading after each message until the application asks for the next one:
        # waiting here while writing is paused leaves the client's next requests in its socket.
        await self.writable.wait()
        return await super().receive()

    def _watch_close(self) -> None:
        if self.transport.is_closing():
            if self._closing_seen:  # closing for a whole period: the client does not read
                self._close_watch = None
                self.transport.abort()
                return
            self._closing_seen = True
        self._close_watch = self.loop.call_later(CLOSE_DRAIN_SECONDS, self._watch_close)
