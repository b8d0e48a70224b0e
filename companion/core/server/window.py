"""What a protocol room sees of the window it serves, and what the window sees of a room on its port.

The window's server (window_server.py, which owns the listening socket and the window's `Reviews`)
and the rooms mounted on it (Gemini CLI's MCP endpoint with the workspace tools, Claude Code's
WebSocket) meet only through these shapes, so that no room imports another: the runtime builds
them and joins them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..context import ContextTracker
from ..editor import Editor
from ..files.disk_text import DiskText
from ..reviews import BY_TOOL, Outcome, Review, Reviews

if TYPE_CHECKING:
    from .security import ASGIApp, Receive, Scope, Send

log = logging.getLogger("gemini_companion")


class Window(Protocol):
    """One editor window as a room serves it: its port, context, folders, editor and reviews."""

    port: int
    context: ContextTracker
    editor: Editor
    folders: Callable[[], list[str]]
    reviews: Reviews

    async def request_review(
        self,
        file_path: str,
        proposal: str,
        requested_by: str,
        timeout: float | None,
        disk: DiskText | None = None,
        agent: str = BY_TOOL,
        on_open: Callable[[Review], None] | None = None,
    ) -> tuple[Outcome, str | None]:
        """Show a review the caller waits on; (outcome, accepted text). A timeout is a rejection."""
        ...

    async def close_review(self, review: Review, outcome: Outcome = Outcome.CLOSED) -> bool:
        """End `review` without the user's decision; False if it had already ended."""
        ...

    def finish(self, review: Review, outcome: Outcome, content: str | None = None) -> bool:
        """End `review` once (without closing its view); False if it had already ended."""
        ...

    async def close_in_editor(self, review: Review) -> str:
        """Close `review`'s view; its proposal as the editor last held it."""
        ...


class HttpRoom(Protocol):
    """A room served over HTTP at `/mcp` on the window's port (Gemini CLI's, with the workspace tools)."""

    def app(self) -> ASGIApp:
        """Its ASGI app, built on the loop as the window's server starts (it gets uvicorn's lifespan)."""
        ...

    def context_changed(self) -> None:
        """The window's context changed (after its debounce)."""
        ...

    def review_decided(self, review: Review, outcome: Outcome, content: str | None) -> None:
        """The user decided a review no caller waits on (one this room opened)."""
        ...

    async def close(self) -> None:
        """End every session; the window closes their reviews."""
        ...


class WebSocketRoom(Protocol):
    """A room served as a WebSocket on the window's port (Claude Code's `/ide`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def selection_changed(self) -> None:
        """The window's context changed (after its debounce)."""
        ...

    async def close(self) -> None:
        """End every connection; the window closes their reviews."""
        ...


def call_listener(listener: Callable[[], None] | None) -> None:
    """Tell the editor that the connected clients changed; its callback must never break the server."""
    if listener is not None:
        try:
            listener()
        except Exception as exc:
            log.debug("clients-changed callback failed: %r", exc)
