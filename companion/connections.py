"""How many connections a window server keeps, and how long one may take to send a request head.

Any local process can connect without the token. Before these limits, ~1 100 idle or
byte-a-second connections exhausted a 1024-descriptor limit: every legitimate request timed out.

A connection that has not yet sent a complete request head is *unproven*: that is all a process
without the token can hold (a request without the token is answered 401 and its connection closed).
At most MAX_UNPROVEN of them are kept: a newcomer takes the place of the oldest. Each must send its
request head within HEAD_TIMEOUT_SECONDS (of connecting, or of finishing its previous request).
Connections that have been served (clients with the token, their keep-alive and notification
streams) are never cut; MAX_CONNECTIONS bounds everything, beyond which newcomers are refused.
The HTTP/1.1 protocol itself stays uvicorn's (h11); this subclass only adds these rules.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_UNPROVEN = 32
MAX_CONNECTIONS = 256
HEAD_TIMEOUT_SECONDS = 5.0


class GuardedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._since = 0.0
        self.proven = False  # a complete request head has arrived on this connection
        self.upgraded = False  # the connection became a WebSocket: another protocol object serves it

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        unproven = [c for c in self.connections if isinstance(c, GuardedH11Protocol) and not c.proven]
        if len(unproven) >= MAX_UNPROVEN:
            _drop(min(unproven, key=lambda c: c._since), self.connections)
        if len(self.connections) >= MAX_CONNECTIONS:
            self._refused = True
            transport.abort()  # never counted, never served: its descriptor is freed at once
            return
        super().connection_made(transport)
        self._since = self.loop.time()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.upgraded:
            return
        if self.cycle is not cycle:
            self.proven = True
            self._disarm()  # a complete head arrived: the request is being served
        elif not self.busy() and self._head_timer is None:
            self._arm()  # the first bytes of a next request: its head has the same deadline

    def handle_websocket_upgrade(self, event: Any) -> None:
        # The connection becomes a WebSocket (Claude Code's side, which checks its own token):
        # the request-head deadline no longer applies to it.
        self.proven = self.upgraded = True
        self._disarm()
        super().handle_websocket_upgrade(event)

    def busy(self) -> bool:
        """A request is in progress on this connection (its head arrived, its response is not done)."""
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.busy() and self.transport is not None:
            self.transport.abort()


def _drop(connection: GuardedH11Protocol, connections: set[Any]) -> None:
    connections.discard(connection)  # counted out now: its connection_lost comes on a later loop turn
    connection._disarm()
    connection.transport.abort()
