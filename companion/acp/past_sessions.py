"""An agent's past sessions: what it offers for them (`loadSession`, `sessionCapabilities` list,
resume, close, delete) and the whole listing of one folder (`session/list`, every page, bounded).

The SDK calls themselves are ChatSession's (session.py, the only module that imports the SDK); this
module holds what is decided on their answers, so it loads without the SDK. Observed on the pinned
agents (reference acp.md, research 40/41 §2): claude-agent-acp offers all of it (pages of 1000,
newest first, `cwd` honoured); Gemini CLI 0.61.0 only `session/load`, and replays a hidden
`<session_context>` user turn first (updates.hidden_context).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

from .thread import ChatFailed
from .view import Choice, Command, ConfigOption, LoginCommand, Mode, NoticeKind, PlanEntry, ToolCall, Usage

MAX_SESSIONS = 2000  # a listing stops there (and says so): a panel, not an archive
_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Offered:
    """What the agent's `initialize` answer offers for its sessions."""

    load: bool = False
    list: bool = False
    resume: bool = False
    close: bool = False
    delete: bool = False

    @classmethod
    def of(cls, capabilities: Mapping[str, Any]) -> Offered:
        """From `agentCapabilities` as JSON (camelCase): a capability is offered when it is an
        object (`{}`), not when it is omitted or null (the schema's words)."""
        session = capabilities.get("sessionCapabilities")
        session = session if isinstance(session, dict) else {}
        has = lambda name: isinstance(session.get(name), dict)  # noqa: E731
        return cls(
            load=capabilities.get("loadSession") is True,
            list=has("list"),
            resume=has("resume"),
            close=has("close"),
            delete=has("delete"),
        )

    @property
    def reopen_with(self) -> Literal["session/resume", "session/load"] | None:
        """How a past session is opened again: resume (no replay) where offered, else load."""
        if self.resume:
            return "session/resume"
        return "session/load" if self.load else None


@dataclass(frozen=True)
class PastSession:
    """One session of `session/list` (SessionInfo)."""

    session_id: str
    title: str  # "" when the agent names none
    updated_at: str  # ISO 8601 as the agent sent it, "" when it sent none
    cwd: str

    def as_json(self) -> dict[str, str]:
        """The protocol's own names (`chat --sessions --json`)."""
        return {"sessionId": self.session_id, "title": self.title, "updatedAt": self.updated_at, "cwd": self.cwd}


@dataclass(frozen=True)
class Listing:
    sessions: list[PastSession]  # newest first
    cut: bool = False  # stopped at the bound: older sessions are not in it


class HistoryRequests(Protocol):
    """The requests on past sessions, over the agent's connection (session.py): a failure is a
    ChatFailed saying why."""

    async def list_sessions(self, cwd: str, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of `session/list`: its sessions (JSON) and its nextCursor (None: the last)."""
        ...

    async def close_session(self, session_id: str) -> None: ...

    async def delete_session(self, session_id: str) -> None: ...


class PastSessions:
    """The agent's past sessions in the chat's folder, as far as it offers them."""

    def __init__(self, agent: str, folder: str, offered: Offered, requests: HistoryRequests) -> None:
        self.agent = agent
        self.folder = folder
        self.offered = offered
        self._requests = requests

    async def listing(self, limit: int | None = None) -> Listing:
        """Every page of `session/list` (bounded), only this folder's, newest first."""
        if not self.offered.list:
            raise ChatFailed(f"{self.agent} does not list its sessions (it does not offer session/list).")
        return await list_all(
            lambda cursor: self._requests.list_sessions(self.folder, cursor), self.folder, limit or MAX_SESSIONS
        )

    async def close(self, session_id: str) -> None:
        """`session/close` where offered: the agent unloads it (it stays listed, to resume later)."""
        if self.offered.close:
            await self._requests.close_session(session_id)

    async def delete(self, session_id: str) -> None:
        """`session/delete`: the agent forgets the session."""
        if not self.offered.delete:
            raise ChatFailed(f"{self.agent} cannot delete its sessions (it does not offer session/delete).")
        await self._requests.delete_session(session_id)


# One page: the sessions of `session/list` (as JSON) and its nextCursor (None on the last page).
Page = Callable[[str | None], Awaitable[tuple[list[dict[str, Any]], str | None]]]


async def list_all(page: Page, folder: str, limit: int = MAX_SESSIONS) -> Listing:
    """Every page of `session/list` until there is no nextCursor, the bound is reached or a cursor
    comes back (an agent that would page forever); only the sessions of `folder` (an agent may
    ignore the `cwd` filter), newest first."""
    found: list[PastSession] = []
    seen: set[str] = set()
    cursor: str | None = None
    cut = False
    while True:
        sessions, cursor = await page(cursor)
        found += [s for s in map(_past, sessions) if s is not None and same_folder(s.cwd, folder)]
        if len(found) >= limit:
            cut = len(found) > limit or cursor is not None
            break
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return Listing(newest_first(found)[:limit], cut)


def _past(data: object) -> PastSession | None:
    if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str) or not data["sessionId"]:
        return None
    text = lambda key: data[key] if isinstance(data.get(key), str) else ""  # noqa: E731
    return PastSession(data["sessionId"], text("title"), text("updatedAt"), text("cwd"))


def same_folder(cwd: str, folder: str) -> bool:
    if not cwd:
        return False
    return os.path.normcase(os.path.abspath(cwd)) == os.path.normcase(os.path.abspath(folder))


def updated(session: PastSession) -> datetime:
    """`updatedAt` as a time (UTC when it names no zone); a missing or unreadable one sorts last."""
    try:
        when = datetime.fromisoformat(session.updated_at.replace("Z", "+00:00"))
    except ValueError:
        return _OLDEST
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def newest_first(sessions: list[PastSession]) -> list[PastSession]:
    return sorted(sessions, key=updated, reverse=True)


def when(session: PastSession, now: datetime | None = None) -> str:
    """The date as a list shows it, in local time: `2026-12-06 03:09`; "" when unknown."""
    moment = updated(session)
    if moment == _OLDEST:
        return ""
    return moment.astimezone(now.tzinfo if now is not None else None).strftime("%Y-%m-%d %H:%M")


class Unseen:
    """The ChatView of a connection that only lists or deletes sessions: it opens none, so nothing
    of a conversation comes; a permission, a question or a login asked anyway gets no answer."""

    def user_text(self, text: str) -> None: ...
    def agent_text(self, text: str) -> None: ...
    def thought(self, text: str) -> None: ...
    def tool_call(self, call: ToolCall) -> None: ...
    def plan(self, entries: list[PlanEntry]) -> None: ...
    def usage(self, usage: Usage) -> None: ...
    def available_commands(self, commands: list[Command]) -> None: ...
    def mode(self, current_id: str, modes: list[Mode]) -> None: ...
    def models(self, current_id: str, models: list[Mode]) -> None: ...
    def config_options(self, options: list[ConfigOption]) -> None: ...
    def session_info(self, title: str | None) -> None: ...
    def turn_ended(self, stop_reason: str) -> None: ...
    def notice(self, text: str, kind: NoticeKind = "info") -> None: ...
    def offer_mode(self, text: str, mode: Mode) -> None: ...
    def status(self, text: str | None) -> None: ...

    async def choose(self, title: str, choices: list[Choice]) -> str | None:
        return None

    async def pick(self, title: str, items: list[str]) -> int | None:
        return None

    async def ask_text(self, title: str, hint: str = "") -> str | None:
        return None

    async def confirm_url(self, text: str, url: str) -> bool | None:
        return None

    def open_url(self, url: str) -> None: ...

    async def run_login(self, command: LoginCommand) -> bool:
        return False
