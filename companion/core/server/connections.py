"""How many connections a window server keeps, and how long one may take to send a request head.

Any local process can connect without the token. Before these limits, ~1 100 idle or
byte-a-second connections exhausted a 1024-descriptor limit: every legitimate request timed out.

A connection that has not yet sent a complete request head is *unproven*: that is all a process
without the token can hold (a request without the token is answered 401 and its connection closed).
At most MAX_UNPROVEN of them are kept: newcomers take the places of the oldest. Each must send its
request head within HEAD_TIMEOUT_SECONDS (of connecting, or of finishing its previous request).
Connections that have been served (clients with the token, their keep-alive and notification
streams) are never cut; MAX_CONNECTIONS bounds everything, beyond which newcomers are refused.
The HTTP/1.1 protocol itself stays uvicorn's (h11); this subclass only adds these rules, and
refuses WebSocket handshakes that wsproto cannot decode before wsproto sees them.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from .rate_limited import RateLimitedWarning

MAX_UNPROVEN = 32
MAX_CONNECTIONS = 256
HEAD_TIMEOUT_SECONDS = 5.0


undecodable_handshake = RateLimitedWarning(
    "refused a WebSocket handshake that is not plain ASCII: %s. If this is your client, send its "
    "headers in ASCII; if it is not, another local program is probing the companion"
)
unsupported_upgrade = RateLimitedWarning(
    "refused a WebSocket upgrade request: Claude Code's side is off in this window. Set "
    '"claude_code": true in the package\'s settings if Claude Code should connect'
)


class GuardedH11Protocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._since = 0.0
        self.proven = False  # a complete request head has arrived on this connection
        self.upgraded = False  # the connection became a WebSocket: another protocol object serves it

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= MAX_CONNECTIONS:
            waiting = _unproven(self.connections)
            if waiting:
                _drop(waiting[0], self.connections)  # full: the newcomer takes the oldest one's place now
        if len(self.connections) >= MAX_CONNECTIONS:
            self._refused = True
            transport.abort()  # never counted, never served: its descriptor is freed at once
            return
        super().connection_made(transport)
        self._since = self.loop.time()
        self._arm()
        _check_unproven_soon(self.loop, self.server_state)

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
        problem = _undecodable(self.headers)
        if problem is not None:
            # wsproto decodes these headers with `ascii`/`idna` and uvicorn catches only wsproto's
            # own errors: the UnicodeDecodeError would leave the WebSocket protocol object counted
            # in the server's connections for good (after 256 of them, every client is reset).
            undecodable_handshake(problem)
            self.send_400_response(f"Bad request: {problem}. Send the WebSocket handshake in ASCII.")
            return
        super().handle_websocket_upgrade(event)

    def _unsupported_upgrade_warning(self) -> None:
        # uvicorn logs two warnings per such request; the request itself is answered 404 as HTTP.
        unsupported_upgrade()

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


def _undecodable(headers: list[tuple[bytes, bytes]]) -> str | None:
    """What wsproto could not decode in these request headers (h11 admits any byte ≥ 0x80 in a
    value, and the request target is ASCII already), or None."""
    for name, value in headers:
        if not value.isascii():
            return f"the {name.decode('ascii')} header is not ASCII"
        if name == b"host":
            try:
                value.decode("idna")  # what wsproto does with it (wsproto/handshake.py)
            except UnicodeError:
                return "the Host header is not a valid host name"
    return None


# A window server's state → its scheduled cap check (one at a time, however large the burst).
_pending_checks: weakref.WeakKeyDictionary[ServerState, asyncio.TimerHandle] = weakref.WeakKeyDictionary()


def _check_unproven_soon(loop: asyncio.AbstractEventLoop, state: ServerState) -> None:
    """Enforce MAX_UNPROVEN after the loop has read what the new connections already sent.

    A burst of connections is accepted in one go, and each one's `connection_made` runs before
    any of them is read (CPython 3.13 asyncio/selector_events.py L944-946: the transport
    schedules `connection_made`, then its reader). Dropping the oldest at once reset clients whose
    complete request was already in the socket buffer (227 of 500 concurrent pings). A zero-delay
    timer runs after the next poll's read callbacks (asyncio/base_events.py `_run_once`, L1990 then
    L1994: ready I/O handles are queued before due timers), so by then those clients are proven
    and only the silent ones are dropped.
    """
    if state not in _pending_checks:
        # The timer holds the state weakly: a check that never runs (its loop closed) keeps nothing.
        _pending_checks[state] = loop.call_later(0, _check_unproven, weakref.ref(state))


def _check_unproven(state_ref: weakref.ref[ServerState]) -> None:
    state = state_ref()
    if state is not None:
        _pending_checks.pop(state, None)
        waiting = _unproven(state.connections)
        excess = len(waiting) - MAX_UNPROVEN
        # Only a positive excess: a negative slice end (`waiting[:-12]`) would drop the oldest
        # of a burst of 17-31 clients that are all within the cap.
        for connection in waiting[: max(excess, 0)]:
            _drop(connection, state.connections)  # the oldest go; newcomers take their places


def _unproven(connections: set[Any]) -> list[GuardedH11Protocol]:
    """The connections without a complete request head yet, oldest first."""
    waiting = [c for c in connections if isinstance(c, GuardedH11Protocol) and not c.proven]
    return sorted(waiting, key=lambda c: c._since)


def _drop(connection: GuardedH11Protocol, connections: set[Any]) -> None:
    connections.discard(connection)  # counted out now: its connection_lost comes on a later loop turn
    connection._disarm()
    connection.transport.abort()
