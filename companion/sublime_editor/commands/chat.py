"""Palette commands of the chat: New Chat, Continue Last Chat, Chat History, Cancel, Switch Mode,
Switch Model, Chat Options…"""

from __future__ import annotations

import os
from collections.abc import Callable

import sublime
import sublime_plugin

from ...acp.agents import registry
from ...acp.agents.registry import RegistryAgent
from ...acp.asks import config_options
from ...acp.shown_output import plain
from ...acp.view import ConfigOption
from .. import settings
from .. import terminus as terminal
from ..chat import agents as chat_agents
from ..chat import sessions as chat_sessions
from ..chat import tool_cards
from ..chat.agents import ChatAgent, Listed
from ..chat.history import memory as chat_memory
from ..chat.history import past as past_chats
from ..windows import CompanionWindowCommand


def choose_agent(
    window: sublime.Window, named: str | None, then: Callable[[ChatAgent], None], with_registry: bool = False
) -> None:
    """The agent called `named`, else the one the user picks from the `agents` setting (and, for a
    new chat, the ACP registry's agents)."""
    agents, problems = chat_agents.configured()
    for problem in problems:
        print(f"Gemini Companion: {problem}")
    if named is not None:
        found = next((a for a in agents if a.key == named), None)
        if found is None:
            sublime.status_message(f'Gemini Companion: no agent "{named}" in the setting "agents"')
            return
        then(found)
        return
    if with_registry:
        chat_agents.registry_agents(lambda listed, note: _pick(window, agents, listed, then, note))
        return
    _pick(window, agents, [], then)


def _pick(
    window: sublime.Window, agents: list[ChatAgent], listed: Listed, then: Callable[[ChatAgent], None], note: str = ""
) -> None:
    """The quick panel: the setting's agents, then the registry's (installed: started at once;
    not installed: how to install them). `note`: why the registry's are the shipped snapshot."""
    if not window.is_valid():
        return
    listed = chat_agents.not_configured(listed, agents)
    if not agents and not listed:
        sublime.message_dialog(
            'The setting "agents" lists no usable agent (see the console for why). Add {"name": "gemini"}, '
            '{"name": "claude"} or {"name": ..., "command": ...} in Preferences › Package Settings › Gemini Companion.'
        )
        return
    if len(agents) == 1 and not listed:
        then(agents[0])
        return
    items = [[a.spec.name, " ".join(a.spec.command)] for a in agents]
    items += [_registry_item(r, installed) for r, installed in listed]

    def picked(index: int) -> None:
        if index < 0:
            return
        if index < len(agents):
            then(agents[index])
            return
        agent, installed = listed[index - len(agents)]
        if installed:
            then(chat_agents.registry_chat_agent(agent))
        else:
            _offer_install(window, agent)

    placeholder = f"Chat with… (ACP registry: {note})" if note and listed else "Chat with…"
    window.show_quick_panel(items, picked, placeholder=placeholder)


def _registry_item(agent: RegistryAgent, installed: bool) -> list[str]:
    where = f"ACP registry · {agent.version}"
    if installed:
        return [agent.name, f"{where} · {registry.one_line(' '.join([agent.program, *agent.args]))}"]
    return [agent.name, f"{where} · not installed: {agent.install_command}"]


def _offer_install(window: sublime.Window, agent: RegistryAgent) -> None:
    """A registry agent that is not installed: run its install command in a terminal (npx, uvx),
    or copy it."""
    argv = agent.install_argv
    actions: list[tuple[list[str], Callable[[], None]]] = []
    if argv is not None:
        actions.append((["Install in terminal", agent.install_command], lambda: _install(window, agent, argv)))
    copied = agent.install_command if argv is not None else agent.archive
    actions.append(
        (["Copy the install command" if argv else "Copy the download address", copied], lambda: _copy(copied))
    )
    window.show_quick_panel(
        [item for item, _ in actions],
        lambda index: actions[index][1]() if index >= 0 else None,
        placeholder=f"{agent.name} is not installed ({agent.install_command})",
    )


def _install(window: sublime.Window, agent: RegistryAgent, argv: tuple[str, ...]) -> None:
    if not terminal.terminus_installed():
        _copy(agent.install_command)
        sublime.message_dialog(
            f"Run this in a terminal to install {agent.name} (it is on the clipboard):\n\n{agent.install_command}\n\n"
            "Then open New Chat again. With the Terminus package installed, New Chat runs it for you."
        )
        return
    folder = (window.folders() or [os.path.expanduser("~")])[0]
    window.run_command("terminus_open", terminal.command_args(argv, folder, f"Install {agent.name}"))
    sublime.status_message(f"Gemini Companion: once {agent.name} is installed, open New Chat again")


def _copy(text: str) -> None:
    sublime.set_clipboard(text)
    sublime.status_message("Gemini Companion: copied to the clipboard")


def _needs_folder(window: sublime.Window) -> bool:
    if window.folders():
        return False
    sublime.message_dialog(
        "Open a folder first (File › Open Folder…).\n\nA chat's agent works in the window's first folder, "
        "and may only read and change files inside the window's folders."
    )
    return True


class GeminiCompanionNewChatCommand(CompanionWindowCommand):
    """Gemini Companion: New Chat — with the agent given, or chosen from the `agents` setting."""

    def run(self, agent: str | None = None) -> None:
        state = self.running_state()
        if state is None or _needs_folder(self.window):
            return

        def chosen(picked: ChatAgent) -> None:
            chat_sessions.open_chat(state, picked.key, picked.spec)

        choose_agent(self.window, agent, chosen, with_registry=True)


class GeminiCompanionContinueChatCommand(CompanionWindowCommand):
    """Gemini Companion: Continue Last Chat — the agent's last session in this folder (session/load)."""

    def run(self, agent: str | None = None) -> None:
        state = self.running_state()
        if state is None or _needs_folder(self.window):
            return
        folder = self.window.folders()[0]

        def recalled(chosen: ChatAgent, session_id: str | None) -> None:
            if not self.window.is_valid():
                return
            if session_id is None:
                sublime.status_message(
                    f"Gemini Companion: no earlier chat with {chosen.spec.name} here; a new one starts"
                )
            chat_sessions.open_chat(state, chosen.key, chosen.spec, load=session_id)

        choose_agent(
            self.window, agent, lambda a: chat_memory.recall_later(folder, a.key, lambda found: recalled(a, found))
        )


class GeminiCompanionPastChatsCommand(CompanionWindowCommand):
    """Gemini Companion: Chat History… — this folder's past sessions of an agent (chat/past.py)."""

    def run(self, agent: str | None = None) -> None:
        state = self.running_state()
        if state is None or _needs_folder(self.window):
            return
        choose_agent(self.window, agent, lambda chosen: past_chats.show(state, chosen))


class GeminiCompanionChatCancelCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Cancel Chat Turn (Escape in a chat): session/cancel."""

    def run(self) -> None:
        chat = chat_sessions.target(self.window)
        if chat is not None:
            chat.cancel()

    def is_enabled(self) -> bool:
        chat = chat_sessions.target(self.window)
        return chat is not None and chat.busy


class GeminiCompanionChatCancelQueuedCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Cancel Queued Prompt (Escape in a chat while one waits): the last one."""

    def run(self) -> None:
        chat = chat_sessions.target(self.window)
        if chat is not None:
            chat.cancel_queued()

    def is_enabled(self) -> bool:
        chat = chat_sessions.target(self.window)
        return chat is not None and len(chat.queued) > 0


class GeminiCompanionChatFollowAgentCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Follow the Agent — turns the setting `chat_follow_agent` on or off: each
    new location of a tool call opens beside the chat, the focus staying in its prompt."""

    def run(self) -> None:
        settings.settings().set(tool_cards.FOLLOW_SETTING, not tool_cards.following())
        sublime.save_settings(settings.SETTINGS_FILE)
        state = "on" if tool_cards.following() else "off"
        sublime.status_message(f"Gemini Companion: Follow the Agent is {state}")

    def is_checked(self) -> bool:
        return tool_cards.following()


class GeminiCompanionChatModeCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Switch Chat Mode — the agent's own modes; with `mode` (and the `chat` id,
    as the "applied without review" card's link gives them) straight to that mode."""

    def run(self, mode: str | None = None, chat: str | None = None) -> None:
        target = _chat(self.window, chat)
        if target is None:
            sublime.status_message("Gemini Companion: that chat has ended; start a new one")
        elif mode is not None:
            target.set_mode(mode)
        else:
            self._pick(target)

    def _pick(self, chat: chat_sessions.Chat) -> None:
        modes = chat.panel.modes
        self.window.show_quick_panel(
            [[("● " if m.id == chat.panel.mode_id else "") + m.name, m.description or m.id] for m in modes],
            lambda index: chat.set_mode(modes[index].id) if index >= 0 else None,
            placeholder=f"Mode of {chat.spec.name}",
        )

    def is_enabled(self, mode: str | None = None, chat: str | None = None) -> bool:
        found = _chat(self.window, chat)
        return found is not None and found.ready and bool(found.panel.modes)


def _chat(window: sublime.Window, chat_id: str | None) -> chat_sessions.Chat | None:
    """The chat `chat_id` of the window (a card's link names it), else the one the palette acts on."""
    if chat_id is None:
        return chat_sessions.target(window)
    return next((c for c in chat_sessions.chats(window) if c.id == chat_id and not c.ended), None)


class GeminiCompanionChatModelCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Switch Chat Model — Gemini's `models`, or a config option of category model."""

    def run(self) -> None:
        chat = chat_sessions.target(self.window)
        if chat is None:
            return
        choices = _models(chat)
        self.window.show_quick_panel(
            [[("● " if current else "") + name, value] for value, name, current in choices],
            lambda index: chat.set_model(choices[index][0]) if index >= 0 else None,
            placeholder=f"Model of {chat.spec.name}",
        )

    def is_enabled(self) -> bool:
        chat = chat_sessions.target(self.window)
        return chat is not None and chat.ready and bool(_models(chat))


def _models(chat: chat_sessions.Chat) -> list[tuple[str, str, bool]]:
    current, models = chat.panel.models
    if models:
        return [(m.id, m.name, m.id == current) for m in models]
    for option in chat.panel.options:
        if option.category == "model" or option.id == "model":
            return [(c.value, c.name, c.value == option.current) for c in option.choices]
    return []


class GeminiCompanionChatOptionsCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Chat Options… — every config option the agent offers (selects and
    booleans) with its current value; a boolean is toggled, a select offers its values."""

    def run(self) -> None:
        chat = chat_sessions.target(self.window)
        if chat is None:
            return
        options = list(chat.panel.options)
        items = [[o.name, f"{config_options.current_text(o)} · {o.description or o.id}"] for o in options]
        self.window.show_quick_panel(
            items,
            lambda index: self._chosen(chat, options[index]) if index >= 0 else None,
            placeholder=f"Options of {chat.spec.name}",
        )

    def _chosen(self, chat: chat_sessions.Chat, option: ConfigOption) -> None:
        if option.kind == "boolean":
            chat.set_option(option.id, option.current is not True)
            return
        choices = list(option.choices)
        self.window.show_quick_panel(
            [
                [("● " if c.value == option.current else "") + (c.name or c.value), c.description or c.value]
                for c in choices
            ],
            lambda index: chat.set_option(option.id, choices[index].value) if index >= 0 else None,
            placeholder=f"{option.name} of {chat.spec.name}",
        )

    def is_enabled(self) -> bool:
        chat = chat_sessions.target(self.window)
        return chat is not None and chat.ready and bool(chat.panel.options)


class GeminiCompanionShowTerminalOutputCommand(sublime_plugin.WindowCommand):
    """Gemini Companion: Show Terminal Output — a client terminal's output of the chat in an output
    panel, followed while its command runs (chat/terminal_panel.py); several: the user picks one."""

    def run(self) -> None:
        chat = chat_sessions.target(self.window)
        outputs = chat.panel.terminal_outputs if chat is not None else None
        if outputs is None or not outputs.outputs:
            sublime.status_message("Gemini Companion: no command of this chat ran in a terminal")
            return
        cards = list(reversed(outputs.outputs))  # the newest first
        if len(cards) == 1:
            outputs.show(self.window, cards[0])
            return
        self.window.show_quick_panel(
            [[outputs.outputs[card][0], _last_line(outputs.outputs[card][1])] for card in cards],
            lambda index: outputs.show(self.window, cards[index]) if index >= 0 else None,
            placeholder="The output of…",
        )

    def is_enabled(self) -> bool:
        chat = chat_sessions.target(self.window)
        return chat is not None and bool(chat.panel.terminal_outputs.outputs)


def _last_line(output: str) -> str:
    """The output's last line that says something, as shown (without terminal escapes)."""
    return next((line for line in reversed(plain(output[-1000:]).splitlines()) if line.strip()), "")
