"""An agent's terminal while Terminus opens it, and what waits for it to be live.

`terminus_open` only queues its work on Sublime's async worker, the one every package shares
(randy3k/Terminus @ 403d10e, `commands.py` L28–29), so a package holding that worker holds the
terminal back for as long as it holds it; and once the view exists, Terminus still needs a moment
before it can type into it (`terminal.LIVE_SETTING`). While a terminal opens, what is sent to it
waits here, in order, and no second `terminus_open` runs: with the same tag it would kill the
terminal that is starting, and whatever had been typed into it (`commands.py` L190–205).

Nothing is dropped without a word: while the worker is held the user is told, every
`TERMINAL_WAIT_MS`, that what they sent will be typed once the terminal opens; when the worker
is free and the terminal still does not come (Terminus failed: its error is only in the console),
the user is told nothing was sent, and what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sublime

from .. import terminus as terminal
from ..terminus import Agent
from ..windows import WindowState, state_of

TERMINAL_WAIT_MS = 10_000  # Terminus opens a terminal well within this once the worker is free
POLL_MS = 200

Then = Callable[[WindowState], None]


@dataclass(eq=False)
class Opening:
    """One `terminus_open` in flight: the window and agent it is for, and what waits for it."""

    state: WindowState
    agent: Agent
    waiting: list[Then] = field(default_factory=list)
    worker_free: bool = False  # the shared worker ran what was queued after `terminus_open`
    remaining_ms: int = 0  # what is left of TERMINAL_WAIT_MS, counted down once the worker is free


_openings: dict[tuple[int, str], Opening] = {}  # (window id, agent key) -> its terminal opening


def opening(state: WindowState, agent: Agent) -> Opening | None:
    """The terminal of `agent` that is opening in the state's window, if any. One that has become
    live since it was last looked at runs what waits for it first, so nothing overtakes that."""
    found = _openings.get((state.window.id(), agent.key))
    if found is None or found.state is not state or _went_live(found):
        return None
    return found


def open_terminal(state: WindowState, agent: Agent, args: dict[str, Any]) -> Opening:
    """Run `terminus_open` with `args` and watch for its terminal (main thread). What waited for an
    earlier opening of the same terminal (it failed or its agent exited at once) waits for this one."""
    earlier = opening(state, agent)
    state.window.run_command("terminus_open", args)
    started = Opening(state, agent, earlier.waiting if earlier is not None else [], remaining_ms=TERMINAL_WAIT_MS)
    _openings[(state.window.id(), agent.key)] = started
    # Queued after Terminus' own work on the shared worker: once it runs, the worker is not held.
    # (Sublime documents no order for the worker's callbacks, so the terminal still has
    # `TERMINAL_WAIT_MS` from then.)
    sublime.set_timeout_async(lambda: sublime.set_timeout(lambda: _worker_reached(started)))
    sublime.set_timeout(lambda: _tell_if_held(started), TERMINAL_WAIT_MS)
    _watch(started)
    return started


def when_live(pending: Opening, then: Then) -> None:
    """Run `then` once the terminal is live (in the order they were sent)."""
    pending.waiting.append(then)


def _current(pending: Opening) -> bool:
    """Whether `pending` still stands: not finished, not replaced, its window and server alive."""
    state = pending.state
    if _openings.get((state.window.id(), pending.agent.key)) is not pending:
        return False
    if state.window.is_valid() and state_of(state.window) is state:
        return True
    _finish(pending)  # the window closed or its server restarted: nobody is left to tell
    return False


def _finish(pending: Opening) -> None:
    if _openings.get((pending.state.window.id(), pending.agent.key)) is pending:
        del _openings[(pending.state.window.id(), pending.agent.key)]


def _worker_reached(pending: Opening) -> None:
    pending.worker_free = True


def _watch(pending: Opening) -> None:
    if not _current(pending):
        return
    if _went_live(pending):
        return
    if pending.worker_free:
        pending.remaining_ms -= POLL_MS
        if pending.remaining_ms <= 0:
            _finish(pending)
            if pending.waiting:
                sublime.status_message(
                    f"Gemini Companion: Terminus did not open {pending.agent.title} (or it exited at once), so "
                    "nothing was sent. The error is in the console (View › Show Console); fix it, then send again."
                )
            return
    sublime.set_timeout(lambda: _watch(pending), POLL_MS)


def _went_live(pending: Opening) -> bool:
    """If its terminal is live: the opening is over, and what waited for it runs, in order."""
    state = pending.state
    if terminal.live_terminal(state.window, state.handle.runtime.editor_pid, pending.agent) is None:
        return False
    _finish(pending)
    for then in pending.waiting:
        then(state)
    return True


def _tell_if_held(pending: Opening) -> None:
    """Still no terminal and the shared worker has not reached Terminus' work: say so, and again
    every `TERMINAL_WAIT_MS` while it lasts."""
    if not _current(pending) or pending.worker_free:
        return
    if pending.waiting:
        sublime.status_message(
            f"Gemini Companion: {pending.agent.title} has not opened yet: another package is keeping Sublime's "
            "shared worker busy. What you sent will be typed when it opens; if it never does, restart Sublime Text."
        )
    sublime.set_timeout(lambda: _tell_if_held(pending), TERMINAL_WAIT_MS)
