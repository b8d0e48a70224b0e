"""Server-to-client notifications: `ide/contextUpdate`, `ide/diffAccepted`, `ide/diffRejected`.

They reach a client only over its session's standalone GET stream. Each session gets an ordered
outbox drained by its own task, so a slow client never delays the others, and messages that are
queued while its stream is briefly down (the client reconnects it) wait instead of being lost.
The current context goes out as soon as a session's stream opens. Every payload is validated
against the wire schema before it is queued.

What waits for a closed (or never opened) stream is bounded: a session that never opens one would
otherwise keep every `ide/diffAccepted` with its full content for its whole life (40 accepted
5 MB files: +235 MB, never released). See `ClientSession.hold`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types
from mcp.server.session import ServerSession

from ..core.server.window import call_listener
from .protocol import CONTEXT_UPDATE, DIFF_ACCEPTED, DIFF_REJECTED
from .wire import InvalidNotification, validated_params

log = logging.getLogger("gemini_companion")

# A notification sent before the SDK has attached the stream's writer is silently dropped; the
# writer attaches within the same few loop iterations as the 200, so wait this long first.
STREAM_SETTLE_SECONDS = 0.005
# Outcomes a session without an open stream keeps (the newest). Gemini CLI waits on one diff at a
# time (a global mutex released when that diff resolves: reference/gemini-cli-contract.md §6), so
# only the newest outcomes can still answer it; older ones would only hold their content.
MAX_HELD_OUTCOMES = 4
OUTCOMES = (DIFF_ACCEPTED, DIFF_REJECTED)


class IdeNotification(mcp_types.Notification[dict[str, Any] | None, str]):
    method: str
    params: dict[str, Any] | None = None


@dataclass
class ClientSession:
    """One MCP session (one connected client) of a window server."""

    session_id: str
    client_name: str = "client"
    session: ServerSession | None = None
    stream_open: asyncio.Event = field(default_factory=asyncio.Event)
    outbox: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque)
    queued: asyncio.Event = field(default_factory=asyncio.Event)  # the outbox has something
    pump: asyncio.Task[None] | None = None
    stream_generation: int = 0
    sent: int = 0

    def put(self, method: str, params: dict[str, Any]) -> None:
        self.outbox.append((method, params))
        if not self.stream_open.is_set():
            self.hold()
        self.queued.set()

    def hold(self) -> None:
        """Keep only what a stream opened later can still use, in order: no context update (the
        opening stream is sent the current one) and the newest MAX_HELD_OUTCOMES outcomes. An
        outcome no diff waits for is harmless (the CLI logs "No resolver found"), so none is merged."""
        kept: list[tuple[str, dict[str, Any]]] = []
        outcomes = 0
        for method, params in reversed(self.outbox):
            if method == CONTEXT_UPDATE or (method in OUTCOMES and outcomes >= MAX_HELD_OUTCOMES):
                continue
            outcomes += method in OUTCOMES
            kept.append((method, params))
        if len(kept) < len(self.outbox):
            log.debug(
                "session %s has no stream: dropped %d notifications no stream can use",
                self.session_id[:8],
                len(self.outbox) - len(kept),
            )
            self.outbox = deque(reversed(kept))


class Broadcaster:
    """Sessions of one window and the notifications fanned out to them."""

    def __init__(
        self, current_context: Callable[[], dict[str, Any]], on_clients_changed: Callable[[], None] | None = None
    ) -> None:
        self._current_context = current_context
        self._sessions: dict[str, ClientSession] = {}
        self.on_clients_changed = on_clients_changed

    # -- session bookkeeping (called from the server's request handlers and ASGI hooks) --

    def seen(self, session_id: str, session: ServerSession, client_name: str) -> None:
        """A request on `session_id` arrived; remember its session (the first time)."""
        entry = self._sessions.get(session_id)
        if entry is None:
            entry = ClientSession(session_id, client_name)
            self._sessions[session_id] = entry
        if entry.session is None:
            entry.session = session
            entry.client_name = client_name
            entry.pump = asyncio.get_running_loop().create_task(self._drain(entry), name=f"outbox-{session_id[:8]}")
            if entry.stream_open.is_set():
                self._queue_initial_context(entry)
            self._clients_changed()

    def stream_opened(self, session_id: str) -> None:
        """The session's GET stream answered 200; the SDK attaches its writer a moment later."""
        entry = self._sessions.setdefault(session_id, ClientSession(session_id))
        entry.stream_generation += 1
        generation = entry.stream_generation
        asyncio.get_running_loop().call_later(STREAM_SETTLE_SECONDS, self._stream_ready, entry, generation)

    def _stream_ready(self, entry: ClientSession, generation: int) -> None:
        if entry.stream_generation != generation or self._sessions.get(entry.session_id) is not entry:
            return  # closed (or reopened) in the meantime
        entry.stream_open.set()
        if entry.session is not None:
            self._queue_initial_context(entry)
        self._clients_changed()

    def stream_closed(self, session_id: str) -> None:
        entry = self._sessions.get(session_id)
        if entry is not None:
            entry.stream_generation += 1
            entry.stream_open.clear()
            entry.hold()
            self._clients_changed()

    def forget(self, session_id: str) -> None:
        entry = self._sessions.pop(session_id, None)
        if entry is not None and entry.pump is not None:
            entry.pump.cancel()
            self._clients_changed()

    def _clients_changed(self) -> None:
        call_listener(self.on_clients_changed)

    def prune(self, live_session_ids: set[str]) -> None:
        """Drop sessions the transport no longer knows (closed, deleted or reaped when idle)."""
        for session_id in [sid for sid in self._sessions if sid not in live_session_ids]:
            self.forget(session_id)

    def clients(self) -> list[ClientSession]:
        return [s for s in self._sessions.values() if s.session is not None]

    def connected(self) -> list[ClientSession]:
        """Clients listening right now: their notification stream is open."""
        return [s for s in self.clients() if s.stream_open.is_set()]

    # -- sending --

    def broadcast(self, method: str, params: dict[str, Any]) -> None:
        """Queue a validated notification for every session of this window."""
        wire = validated_params(method, params)
        for entry in self._sessions.values():
            if entry.session is not None:
                entry.put(method, wire)

    def _queue_initial_context(self, entry: ClientSession) -> None:
        try:
            params = validated_params(CONTEXT_UPDATE, self._current_context())
        except InvalidNotification as exc:
            log.error("not sending a context update that Gemini CLI would reject: %s", exc)
            return
        entry.put(CONTEXT_UPDATE, params)

    async def _drain(self, entry: ClientSession) -> None:
        while True:
            await entry.queued.wait()
            await entry.stream_open.wait()
            if not entry.outbox:
                entry.queued.clear()
                continue
            method, params = entry.outbox.popleft()
            assert entry.session is not None
            try:
                await entry.session.send_notification(IdeNotification(method=method, params=params))  # type: ignore[arg-type]
                entry.sent += 1
            except Exception as exc:  # a closed connection: the session is pruned by the server
                log.debug("notification %s to session %s failed: %s", method, entry.session_id[:8], exc)

    async def close(self) -> None:
        tasks = [e.pump for e in self._sessions.values() if e.pump is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._sessions.clear()
