"""Commands: open Gemini CLI or Claude Code in Terminus, and send selections, files and folders to
the agent the user used last in this window (or the one they pick).

Gemini CLI gets the mention typed at its prompt (`@path#L3-5 `) once its terminal is live. Claude
Code gets an `at_mentioned` notification, which its prompt turns into the same mention; it needs a
connected Claude Code, so a mention for one that is still starting waits until it has connected.
A terminal that is opening is never opened again: what is sent waits for it (`terminal_launch`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import sublime
import sublime_plugin

from ...claude_ide.protocol import IDE_NAME
from ...core.files.paths import is_inside
from .. import settings
from .. import terminus as terminal
from ..chat import sessions as chat_sessions
from ..terminal import launch as terminal_launch
from ..terminal.launch import POLL_MS, TERMINAL_WAIT_MS
from ..terminus import CLAUDE, GEMINI, Agent
from ..windows import WindowState, registry, running_state, state_of

log = logging.getLogger("gemini_companion")

CLAUDE_CONNECT_WAIT_MS = 30_000  # Claude Code connects within a second or two of its start

Lines = tuple[int, int]  # first and last line, 1-based, inclusive
Mention = tuple[str, "Lines | None"]  # a path, and its lines (None: the whole file or folder)


def served_agents() -> list[Agent]:
    return [agent for agent, on in ((GEMINI, settings.serves_gemini()), (CLAUDE, settings.serves_claude())) if on]


def open_agent(window: sublime.Window, agent: Agent, then: Callable[[WindowState], None] | None = None) -> None:
    """Focus the window's terminal of `agent`, opening it first if needed; then run `then` once the
    agent can take it (Gemini: its terminal exists; Claude Code: it has connected)."""
    state = running_state(window)
    if state is None:
        return
    if agent not in served_agents():
        setting = "gemini_cli" if agent is GEMINI else "claude_code"
        sublime.message_dialog(
            f"{agent.title} is turned off in Gemini Companion's settings ({setting}: false). Turn it on in "
            "Preferences › Package Settings › Gemini Companion › Settings."
        )
        return
    state.last_agent = agent.key
    existing = terminal.find_terminal(window, state.handle.runtime.editor_pid, agent)
    pending = terminal_launch.opening(state, agent)
    # Running, or Terminus has not had the shared worker yet to open it: another terminus_open with
    # its tag would kill the one that is starting.
    if existing is not None or (pending is not None and not pending.worker_free):
        if existing is not None:
            terminal.focus_terminal(window, existing, agent)
        if then is not None:
            _deliver(window, state, agent, then)
        return
    if not terminal.terminus_installed():
        program = (terminal.agent_command(agent) or [agent.key])[0]
        sublime.message_dialog(
            f"Gemini Companion opens {agent.title} in a Terminus terminal, and Terminus is not installed.\n\n"
            f"Install it with “Package Control: Install Package” → Terminus, or run `{program}` in any terminal "
            "inside this window's folder: it connects to this window all the same."
            + ("" if agent is GEMINI else f" (in Claude Code, type /ide and pick {IDE_NAME}).")
        )
        return
    folders = window.folders()
    if not folders:
        sublime.message_dialog(
            f"Open a folder first (File › Open Folder…).\n\n{agent.title} works on a folder, and connects to the "
            "Sublime Text window that has that folder open."
        )
        return
    if len(folders) == 1:
        _launch(window, state, agent, folders[0], then)
        return

    def chosen(index: int) -> None:
        if index >= 0:
            _launch(window, state, agent, folders[index], then)

    window.show_quick_panel(
        [[os.path.basename(f) or f, f] for f in folders], chosen, placeholder=f"Run {agent.title} in…"
    )


def open_cli(window: sublime.Window, then: str | None = None) -> None:
    """Gemini CLI's terminal, with `then` typed at its prompt."""
    open_agent(window, GEMINI, None if then is None else lambda state: _type(state, then))


def _launch(
    window: sublime.Window, state: WindowState, agent: Agent, folder: str, then: Callable[[WindowState], None] | None
) -> None:
    if not state.handle.ready.done() or state.handle.ready.exception() is not None:
        sublime.status_message("Gemini Companion: the server is not ready yet; try again in a moment.")
        return
    state.terminal_folder = folder
    editor_pid = state.handle.runtime.editor_pid
    args = terminal.open_args(window, state.handle, folder, editor_pid, agent)
    log.debug("opening %s in Terminus: %s in %s (port %s)", agent.title, args["cmd"], folder, state.handle.port)
    terminal_launch.open_terminal(state, agent, args)
    if then is not None:
        _deliver(window, state, agent, then)


def _deliver(window: sublime.Window, state: WindowState, agent: Agent, then: Callable[[WindowState], None]) -> None:
    """Run `then` once `agent` can take it: after its opening terminal is live, if one is opening
    (unless Claude Code is already connected: it takes mentions over its connection)."""
    pending = terminal_launch.opening(state, agent)
    if pending is None or (agent is CLAUDE and state.handle.claude_clients):
        _when_ready(window, state, agent, then, _wait_for(agent))
    else:
        terminal_launch.when_live(pending, lambda live: _when_ready(window, live, agent, then, _wait_for(agent)))


def _wait_for(agent: Agent) -> int:
    return CLAUDE_CONNECT_WAIT_MS if agent is CLAUDE else TERMINAL_WAIT_MS


def _ready(window: sublime.Window, state: WindowState, agent: Agent) -> bool:
    if agent is CLAUDE:
        return bool(state.handle.claude_clients)
    return terminal.live_terminal(window, state.handle.runtime.editor_pid, agent) is not None


def _when_ready(
    window: sublime.Window, state: WindowState, agent: Agent, then: Callable[[WindowState], None], remaining_ms: int
) -> None:
    if _ready(window, state, agent):
        then(state)
    elif remaining_ms > 0:
        sublime.set_timeout(lambda: _when_ready(window, state, agent, then, remaining_ms - POLL_MS), POLL_MS)
    elif agent is CLAUDE:
        sublime.status_message(
            "Gemini Companion: Claude Code did not connect to this window; nothing was sent (in Claude Code, run /ide)."
        )
    else:
        sublime.status_message(
            "Gemini Companion: the Gemini CLI terminal did not start, so nothing was sent. Terminus' error is in "
            "the console (View › Show Console); fix it, then send again."
        )


def _type(state: WindowState, text: str) -> None:
    """Type `text` into the window's live Gemini CLI terminal (`_ready` saw it on this turn)."""
    window = state.window
    view = terminal.live_terminal(window, state.handle.runtime.editor_pid)
    if view is None:  # it finished on this very turn
        sublime.status_message("Gemini Companion: the Gemini CLI terminal has closed; nothing was sent.")
        return
    terminal.type_into(view, text + " ")
    terminal.focus_terminal(window, view)


def _mention_to_claude(state: WindowState, mentions: list[Mention]) -> None:
    """One `at_mentioned` per path (0-based lines), then Claude Code's terminal is focused."""
    for path, lines in mentions:
        first, last = (lines[0] - 1, lines[1] - 1) if lines is not None else (None, None)
        state.handle.at_mentioned(path, first, last)
    view = terminal.find_terminal(state.window, state.handle.runtime.editor_pid, CLAUDE)
    if view is not None:
        terminal.focus_terminal(state.window, view, CLAUDE)


def send(window: sublime.Window, mentions: list[Mention]) -> None:
    """Send `mentions` to the agent (terminal or chat) used last in this window; with none yet and
    several to choose from, ask."""
    state = state_of(window)
    agents = served_agents()
    last = terminal.agent_named(state.last_agent) if state is not None else None
    last_chat = chat_sessions.by_target(window, state.last_agent) if state is not None else None
    chats = [c for c in chat_sessions.chats(window) if not c.ended]
    if state is not None and last_chat is not None:
        _send_to_chat(state, last_chat, mentions)
        return
    if last in agents or (len(agents) == 1 and not chats):
        _send_to(window, last if last in agents else agents[0], mentions)
        return
    if not agents and not chats:
        sublime.status_message("Gemini Companion: both agents are turned off in the settings; nothing was sent.")
        return

    def chosen(index: int) -> None:
        if index >= len(agents) and state is not None:
            _send_to_chat(state, chats[index - len(agents)], mentions)
        elif index >= 0:
            _send_to(window, agents[index], mentions)

    titles = [agent.title for agent in agents] + [c.panel.view.name() for c in chats]
    window.show_quick_panel(titles, chosen, placeholder="Send to…")


def _send_to_chat(state: WindowState, chat: chat_sessions.Chat, mentions: list[Mention]) -> None:
    reg = registry()
    if reg is not None:
        chat_sessions.send_files(state, chat, mentions, reg.policy)


def _send_to(window: sublime.Window, agent: Agent, mentions: list[Mention]) -> None:
    if agent is CLAUDE:
        open_agent(window, CLAUDE, lambda state: _mention_to_claude(state, mentions))
        return
    text = " ".join(terminal.mention(path, _folder_for(window, path), lines) for path, lines in mentions)
    open_cli(window, text)


def _folder_for(window: sublime.Window, path: str) -> str | None:
    state = state_of(window)
    if state is not None and state.terminal_folder:
        return state.terminal_folder
    containing = [f for f in window.folders() if is_inside(path, f)]  # Windows: case-insensitive
    return containing[0] if containing else None


def selected_lines(view: sublime.View) -> Lines:
    """The lines of the first selection (the cursor's line when empty), 1-based."""
    region = view.sel()[0]
    first = view.rowcol(region.begin())[0] + 1
    end = region.end()
    if not region.empty() and view.rowcol(end)[1] == 0 and end > region.begin():
        end -= 1  # a selection ending at the start of a line does not include that line
    return first, view.rowcol(end)[0] + 1


class GeminiCompanionOpenCliCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Open Gemini CLI."""

    def run(self) -> None:
        open_agent(self.window, GEMINI)


class GeminiCompanionOpenClaudeCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Open Claude Code."""

    def run(self) -> None:
        open_agent(self.window, CLAUDE)

    def is_enabled(self) -> bool:
        return settings.serves_claude()


class GeminiCompanionSendSelectionCommand(sublime_plugin.TextCommand):
    """Send the selection (or the current line) as `@path#Lstart-end`; `agent` picks the agent."""

    def run(self, edit: sublime.Edit, agent: str | None = None) -> None:
        window, path = self.view.window(), self.view.file_name()
        if window is not None and path is not None:
            _send_or_choose(window, agent, [(path, selected_lines(self.view))])

    def is_enabled(self, agent: str | None = None) -> bool:
        return self.view.file_name() is not None and len(self.view.sel()) > 0


class GeminiCompanionSendFileCommand(sublime_plugin.TextCommand):
    """Send the whole file as `@path`."""

    def run(self, edit: sublime.Edit, agent: str | None = None) -> None:
        window, path = self.view.window(), self.view.file_name()
        if window is not None and path is not None:
            _send_or_choose(window, agent, [(path, None)])

    def is_enabled(self, agent: str | None = None) -> bool:
        return self.view.file_name() is not None


class GeminiCompanionSendPathsCommand(sublime_plugin.WindowCommand):
    """Side bar: send the chosen files and folders."""

    def run(self, paths: list[str] | None = None, agent: str | None = None) -> None:
        chosen = paths or []
        if chosen:
            _send_or_choose(self.window, agent, [(path, None) for path in chosen])

    def is_enabled(self, paths: list[str] | None = None, agent: str | None = None) -> bool:
        return bool(paths)


class GeminiCompanionTerminalFocusListener(sublime_plugin.EventListener):
    """The agent whose terminal the user focuses becomes the one Send goes to."""

    def on_activated(self, view: sublime.View) -> None:
        # On the main thread, in the order focus really moved: an `_async` activation of the other
        # agent's terminal can run after the user opened this one (the shared worker was late).
        window = view.window()
        agent = terminal.note_focus(view, window) if window is not None else None
        state = state_of(window)
        if agent is not None and state is not None:
            state.last_agent = agent.key
        chat = chat_sessions.for_view(view)
        if chat is not None and state is not None:  # a chat the user focuses is a Send target too
            state.last_agent = f"chat:{chat.id}"


def _send_or_choose(window: sublime.Window, agent: str | None, mentions: list[Mention]) -> None:
    """`agent` given (a key binding or menu entry naming one): that agent; else the last used."""
    named = terminal.agent_named(agent)
    if named is not None:
        _send_to(window, named, mentions)
    else:
        send(window, mentions)
