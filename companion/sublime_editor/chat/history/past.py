"""Chat History…: the agent's past sessions of this folder in a quick panel (title, agent, date;
newest first, every page of `session/list`, bounded), and per session Open (`session/resume`
where the agent offers it, else `session/load`), Close (`session/close`, for one open in a tab) and
Delete… (`session/delete`, after a confirmation). An agent that lists none (Gemini CLI) offers the
last session Continue Last Chat remembers.

The agent is asked on the companion's loop (a connection of its own, opening no session, ended
after the answer); the panels are shown on the main thread.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import sublime

from ....acp.past_sessions import MAX_SESSIONS, Listing, Offered, PastSession, when
from ....runtime import RuntimeStopped
from ...window_state import WindowState
from .. import sessions as chat_sessions
from ..agents import ChatAgent
from . import memory as chat_memory

if TYPE_CHECKING:
    from ....acp.session import ChatSession

T = TypeVar("T")
REMEMBERED = "Last chat (remembered by Continue Last Chat)"
_CUT = f"Only the {MAX_SESSIONS:,} newest sessions are listed".replace(",", " ")


def show(state: WindowState, chosen: ChatAgent) -> None:
    """Ask `chosen` for this folder's sessions, then show them (main thread)."""
    folders = list(state.window.folders())
    sublime.status_message(f"Gemini Companion: asking {chosen.spec.name} for its sessions…")
    _submit(state, lambda: _listing(state, chosen, folders), lambda found: _listed(state, chosen, folders, *found))


def _submit(state: WindowState, make: Callable[[], Coroutine[Any, Any, T]], then: Callable[[T], None]) -> None:
    """`make()` on the loop; `then(result)` on the main thread; a failure is one status line."""
    try:
        future = state.handle.runtime.submit(make)
    except RuntimeStopped:
        sublime.status_message("Gemini Companion has stopped; reload the package, then open Chat History again")
        return

    def done(f: concurrent.futures.Future[T]) -> None:  # on the loop thread
        error = f.exception()
        if error is not None:
            reason = chat_sessions._reason(error)
            sublime.set_timeout(lambda: _failed(reason))
            return
        result = f.result()
        sublime.set_timeout(lambda: then(result) if state.window.is_valid() else None)

    future.add_done_callback(done)


def _failed(reason: str) -> None:
    print(f"Gemini Companion: Chat History: {reason}")
    sublime.status_message(f"Gemini Companion: {reason}")


async def _connected(state: WindowState, chosen: ChatAgent, folders: list[str]) -> ChatSession:
    from ....acp.past_sessions import Unseen
    from ....acp.session import ChatSession  # the SDK loads here, on the loop

    session = ChatSession(chosen.spec, folders, state.handle.editor, Unseen())
    try:
        await session.connect()
    except BaseException:
        await session.close()
        raise
    return session


async def _listing(state: WindowState, chosen: ChatAgent, folders: list[str]) -> tuple[Offered, Listing | None]:
    session = await _connected(state, chosen, folders)
    try:
        return session.offered, (await session.sessions() if session.offered.list else None)
    finally:
        await session.close()


def _listed(
    state: WindowState, chosen: ChatAgent, folders: list[str], offered: Offered, listing: Listing | None
) -> None:
    name = chosen.spec.name
    if offered.reopen_with is None:
        sublime.status_message(
            f"Gemini Companion: {name} cannot open past sessions (it offers neither session/resume nor session/load)"
        )
        return
    if listing is not None:
        if not listing.sessions:
            sublime.status_message(f"Gemini Companion: no earlier chats with {name} in {folders[0]}")
            return
        _panel(state, chosen, offered, listing)
        return

    def recalled(found: str | None) -> None:  # an agent that lists none: the one remembered
        if not state.window.is_valid():
            return
        if found is None:
            sublime.status_message(
                f"Gemini Companion: {name} does not list its sessions, and no earlier chat with it here is remembered"
            )
            return
        _panel(state, chosen, offered, Listing([PastSession(found, REMEMBERED, "", folders[0])]))

    chat_memory.recall_later(folders[0], chosen.key, recalled)


def _panel(state: WindowState, chosen: ChatAgent, offered: Offered, listing: Listing) -> None:
    sessions = listing.sessions
    live = {c.session_id for c in chat_sessions.chats(state.window) if not c.ended and c.key == chosen.key}
    items = [_item(chosen, s, s.session_id in live) for s in sessions]
    if listing.cut:
        items.append([_CUT, "older ones are not shown"])

    def picked(index: int) -> None:
        if 0 <= index < len(sessions):
            _actions(state, chosen, offered, sessions[index])

    state.window.show_quick_panel(items, picked, placeholder=f"Past chats with {chosen.spec.name} in this folder")


def _item(chosen: ChatAgent, past: PastSession, live: bool) -> list[str]:
    details = [chosen.spec.name, when(past), past.session_id[:8]]
    if live:
        details.append("open in a tab")
    return [past.title or "(untitled)", " · ".join(d for d in details if d)]


def _live(state: WindowState, chosen: ChatAgent, past: PastSession) -> chat_sessions.Chat | None:
    """The window's chat that has this session open, if any."""
    return next(
        (
            c
            for c in chat_sessions.chats(state.window)
            if not c.ended and c.key == chosen.key and c.session_id == past.session_id
        ),
        None,
    )


def _actions(state: WindowState, chosen: ChatAgent, offered: Offered, past: PastSession) -> None:
    """The second panel: what to do with this session."""
    live = _live(state, chosen, past)
    actions: list[tuple[list[str], Callable[[], None]]] = []
    if live is not None:
        actions.append((["Go to Its Tab", "the chat with this session"], live.panel.focus_prompt))
        actions.append((["Close", "ends the chat; the session stays in the history"], lambda: _close(live)))
    else:
        how = "resumes it" if offered.reopen_with == "session/resume" else "replays it into a new chat tab"
        actions.append((["Open", f"{chosen.spec.name} {how}"], lambda: _open(state, chosen, past)))
    if offered.delete:
        forget = ["Delete…", "the agent forgets it; this cannot be undone"]
        actions.append((forget, lambda: _delete(state, chosen, past)))
    state.window.show_quick_panel(
        [item for item, _ in actions],
        lambda index: actions[index][1]() if index >= 0 else None,
        placeholder=past.title or past.session_id,
    )


def _open(state: WindowState, chosen: ChatAgent, past: PastSession) -> None:
    chat_sessions.open_chat(state, chosen.key, chosen.spec, load=past.session_id, reopen=True)


def _close(chat: chat_sessions.Chat) -> None:
    """`session/close` (where offered), then the chat ends; its tab stays, with what was typed."""

    async def close() -> None:
        if chat.session is not None:
            await chat.session.close_session(chat.session_id)

    def closed(_: None) -> None:
        chat.close()
        if chat.panel.is_valid():
            chat.panel.notice("This session was closed; Chat History opens it again.", "info")
            chat._show_status()

    _submit(chat.state, close, closed)


def _delete(state: WindowState, chosen: ChatAgent, past: PastSession) -> None:
    title = past.title or past.session_id
    question = (
        f"Delete the chat “{title}” from {chosen.spec.name}'s history?\n\n"
        "The agent forgets the conversation. This cannot be undone."
    )
    if not sublime.ok_cancel_dialog(question, "Delete"):
        return
    live = _live(state, chosen, past)
    folders = list(state.window.folders())

    async def delete() -> None:
        if live is not None and live.session is not None:  # through the agent that has it open
            await live.session.delete_session(past.session_id)
            return
        session = await _connected(state, chosen, folders)
        try:
            await session.delete_session(past.session_id)
        finally:
            await session.close()

    def deleted(_: None) -> None:
        if live is not None:
            live.close()
            if live.panel.is_valid():
                live.panel.notice("This session was deleted from the agent's history.", "info")
                live._show_status()
        sublime.status_message(f"Gemini Companion: deleted “{title}” from {chosen.spec.name}'s history")

    _submit(state, delete, deleted)
