"""A chat's view in Sublime: the transcript (Markdown), cards as phantoms, the prompt at the end.

`ChatPanel` owns the scratch view and runs on Sublime's main thread only. `StreamingChatView` is the
ChatView port (companion/acp/view.py) the session calls on the loop thread: it only queues what
happened, and one main-thread tick drains the queue into the view, at most MAX_CHARS_PER_TICK
characters of text per tick, so a 10 MB answer is many short ticks, never one long one.

The view's text: the transcript, then SEPARATOR, then the prompt the user types (from `input_start`
to the end). Everything before `input_start` is the companion's: the view is read-only while a
caret is there, so the user can select and copy the transcript but types only in the prompt.
What the agent and the user wrote goes in through `chat_text.ForeignText`: it cannot imitate the
companion's headings and notices, break the view's layout with a very long line, or leave a code
fence open over them.
"""

from __future__ import annotations

import asyncio
import html
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import sublime

from ...acp.shown_output import line_count
from ...acp.view import (
    Choice,
    Command,
    ConfigOption,
    Location,
    LoginCommand,
    Mode,
    NoticeKind,
    PlanEntry,
    Rejection,
    ToolCall,
    ToolDiff,
    Usage,
)
from .. import review_ui
from ..review_ui import LEAVE_ALONE
from ..settings import syntax_path
from . import asking, tool_cards
from .terminal_panel import TerminalOutputs
from .text import CONTINUATION, ForeignText

CHAT_SETTING = "gemini_companion.chat"  # the chat's id, on its view
DIFF_SETTING = "gemini_companion.chat_diff"  # the chat's id, on the view of an edit applied without review
SEPARATOR = "\n\n❯ "  # between the transcript and the prompt
MAX_CHARS_PER_TICK = 32 * 1024  # text put into the view per main-thread tick (bench_adapter.py --chat)
THOUGHT_PREVIEW_CHARS = 4000  # an expanded thought shows this much of its end
CARD_KEY = "gemini_companion.chat.card."
NOTICE_SCOPE = "markup.quote"
NOTICE_KEY = "gemini_companion.chat.notices"
BREAK_KEY = "gemini_companion.chat.breaks"  # where ForeignText broke a long line: copy leaves them out
HEADING_KEY = "gemini_companion.chat.headings"  # underlines the companion's headings, as no text can
HEADING_FLAGS = sublime.DRAW_NO_FILL | sublime.DRAW_NO_OUTLINE | sublime.DRAW_SOLID_UNDERLINE
AGENT_STATUS_KEY = "gemini_companion.chat_agent_status"  # the agent's own status line (status bar)
Answer = Callable[["str | Rejection | None"], None]  # a permission card's answer (main thread)
ICONS = {"pending": "○", "in_progress": "◐", "completed": "●", "failed": "✕", "": "○"}


@dataclass
class Card:
    """A phantom on a line of its own in the transcript: a tool call, a permission, thoughts, a plan."""

    key: str
    point: int  # where its line starts; text is only ever inserted after it
    html: str = ""
    links: dict[str, Callable[[], None]] = field(default_factory=dict)
    phantoms: sublime.PhantomSet | None = None


class ChatPanel:
    """The chat view of one session (main thread)."""

    def __init__(self, window: sublime.Window, chat_id: str, agent_name: str) -> None:
        self._window = window  # where it opened; `window` follows the tab when it is dragged away
        self.chat_id = chat_id
        self.agent_name = agent_name
        self.view = window.new_file()
        self.buffer_id = self.view.buffer_id()  # a clone shares it (a view never changes buffer)
        self.view.set_scratch(True)
        self.view.set_name(f"Chat: {agent_name}")
        self.view.assign_syntax(syntax_path())
        view_settings = self.view.settings()
        view_settings.set(CHAT_SETTING, chat_id)
        for key, value in {**LEAVE_ALONE, "word_wrap": True, "line_numbers": False, "gutter": False}.items():
            view_settings.set(key, value)
        # Typing "/" in the prompt opens the completions (the agent's slash commands), "@" the
        # window's files, folders and symbols (chat/mentions.py).
        view_settings.set("auto_complete_triggers", [{"selector": "text.gemini-companion.chat", "characters": "/@"}])
        self.transcript_end = 0
        self.input_start = 0
        self.cards: dict[str, Card] = {}
        self.commands: list[Command] = []
        self.mode_id = ""
        self.modes: list[Mode] = []
        self.models: tuple[str, list[Mode]] = ("", [])
        self.options: list[ConfigOption] = []
        self.replying = False  # the agent's heading is shown for this turn
        self.reply = ForeignText(agent_name)  # the agent's text of this turn, as shown
        self.thinking: str | None = None  # the key of the thought card this turn writes to
        self.thought_text = ""
        self.thought_open = False
        self.notice_regions: list[sublime.Region] = []
        self.heading_regions: list[sublime.Region] = []
        self.tool_calls: dict[str, tuple[ToolCall, int]] = {}  # each card's call as shown, its output's lines
        self.unfolded: set[str] = set()  # the cards whose output is unfolded
        self.followed: set[tuple[str, int | None]] = set()  # the locations Follow the Agent opened
        self.terminal_outputs = TerminalOutputs(chat_id)  # for "show in panel" (terminal_panel.py)
        self._insert(0, SEPARATOR)
        self.transcript_end, self.input_start = 0, len(SEPARATOR)
        self._heading(f"# Chat: {agent_name}")

    @property
    def window(self) -> sublime.Window:
        """The window the chat's tab is in now (diffs open and focus goes there)."""
        current = self.view.window()
        if current is not None:
            self._window = current
        return self._window

    def is_valid(self) -> bool:
        return self.view.is_valid()

    # -- the transcript --

    def _insert(self, point: int, text: str) -> None:
        self._edit("gemini_companion_chat_insert", {"point": point, "characters": text})

    def _erase_prompt(self) -> None:
        self._edit("gemini_companion_chat_erase", {"begin": self.input_start, "end": self.view.size()})

    def _edit(self, command: str, args: dict[str, Any]) -> None:
        """A companion edit, kept out of the undo history so that Ctrl+Z and redo only ever replay
        the user's own typing in the prompt: an undo is itself a change (`change_count`,
        `on_modified`), so no count of changes can tell whose the newest undo step is. Cleared after
        the command has run, once its step is recorded; this also bounds the history's memory."""
        self.view.run_command(command, args)
        self.view.clear_undo_stack()

    def write(self, text: str) -> None:
        """Put `text` at the end of the transcript (before the prompt)."""
        if not text:
            return
        self._insert(self.transcript_end, text)
        self.transcript_end += len(text)
        self.input_start += len(text)

    def _show(self, text: ForeignText, shown: str) -> None:
        """Put `shown`, what `text` just returned, at the end of the transcript, its breaks marked."""
        start = self.transcript_end
        self.write(shown)
        if text.breaks:
            marked = [sublime.Region(start + at, start + at + len(CONTINUATION)) for at in text.breaks]
            self.view.add_regions(BREAK_KEY, self.view.get_regions(BREAK_KEY) + marked, "", "", sublime.HIDDEN)

    def copied_text(self) -> str | None:
        """What Copy puts in the clipboard when the selection holds a line break of the view's own
        (else None: Sublime's copy is right): the selected text without the breaks."""
        breaks = self.view.get_regions(BREAK_KEY)
        selected = [r for r in self.view.sel() if not r.empty()]
        if not any(b.intersects(r) for r in selected for b in breaks):
            return None
        pieces: list[str] = []
        for region in selected:
            point, parts = region.begin(), []
            for cut in (b.intersection(region) for b in breaks if b.intersects(region)):
                parts.append(self.view.substr(sublime.Region(point, cut.begin())))
                point = cut.end()
            parts.append(self.view.substr(sublime.Region(point, region.end())))
            pieces.append("".join(parts))
        return "\n".join(pieces)

    def _line_start(self) -> None:
        """Before a line of the companion's own: the agent's text is cut off (its fence closed)."""
        self._show(self.reply, self.reply.interrupt())
        if self.transcript_end and self.view.substr(self.transcript_end - 1) != "\n":
            self.write("\n")

    def _heading(self, line: str) -> None:
        """A heading line of the companion's own, underlined (a region: no Markdown can draw one)."""
        start = self.transcript_end
        self.write(f"{line}\n")
        self.heading_regions.append(sublime.Region(start, self.transcript_end - 1))
        self.view.add_regions(HEADING_KEY, list(self.heading_regions), "markup.heading", "", HEADING_FLAGS)

    def agent_text(self, text: str) -> None:
        if not self.replying:
            self._end_thinking()
            self._line_start()
            self.write("\n")
            self._heading(f"## {self.agent_name}")
            self.write("\n")
            self.replying = True
        self._show(self.reply, self.reply.feed(text))

    def user_prompt(self, text: str) -> None:
        self._end_thinking()
        self._show(self.reply, self.reply.finish())  # a new turn: the last reply is over, whatever it left open
        self._line_start()
        prompt = ForeignText(self.agent_name)
        self.write("\n")
        self._heading("## You")
        self.write("\n")
        self._show(prompt, prompt.feed(text))
        self._show(prompt, prompt.finish())
        self.replying = False

    def notice(self, text: str, kind: NoticeKind = "info") -> None:
        """A notice is a quote of its own, marked, never inside the model's text. What the agent
        says as a notice says so, on one line: it cannot pass for the companion's. The companion's
        own notices keep their lines, each in the quote."""
        self._line_start()
        mark = {"warning": "⚠", "agent": "ⓘ", "info": "ⓘ"}.get(kind, "ⓘ")
        lead = f"> {mark} {self.agent_name}: " if kind == "agent" else f"> {mark} "
        body = ForeignText(self.agent_name, column=len(lead))
        text = " ".join(text.splitlines()) if kind == "agent" else "\n> ".join(text.splitlines())
        start = self.transcript_end
        self.write(lead)
        self._show(body, body.feed(text))
        self._show(body, body.finish())
        self.notice_regions.append(sublime.Region(start, self.transcript_end - 1))
        scope = "region.yellowish" if kind == "warning" else "region.bluish"
        self.view.add_regions(NOTICE_KEY + kind, [r for r in self.notice_regions], scope, "", sublime.DRAW_NO_FILL)
        self.replying = False  # the model's text resumes under its own heading

    def mode_offer(self, text: str, mode: Mode) -> None:
        """A warning with a link that switches this chat to `mode` (the newest offer only)."""
        self.notice(text, "warning")
        self.remove_card("mode-offer")
        args = {"mode": mode.id, "chat": self.chat_id}
        switch = lambda: self.window.run_command("gemini_companion_chat_mode", args)  # noqa: E731
        link = f'<a href="switch">Switch to {html.escape(mode.name or mode.id)}</a>, which asks before each edit'
        self.card("mode-offer", link, {"switch": switch})

    def turn_ended(self, stop_reason: str) -> None:
        self._end_thinking()
        self._show(self.reply, self.reply.finish())  # a turn cancelled inside a code fence leaves none open
        if stop_reason not in ("end_turn", ""):
            self.notice(f"The turn ended: {stop_reason.replace('_', ' ')}.", "info")
        self.replying = False

    # -- cards (phantoms on a line of their own) --

    def card(self, key: str, content: str, links: dict[str, Callable[[], None]] | None = None) -> Card:
        """Show or replace the card `key`; a new one gets a line at the end of the transcript."""
        card = self.cards.get(key)
        if card is None:
            self._line_start()
            card = Card(key, self.transcript_end)
            self.write("\n")
            card.phantoms = sublime.PhantomSet(self.view, CARD_KEY + key)
            self.cards[key] = card
        card.html, card.links = content, dict(links or {})
        assert card.phantoms is not None
        card.phantoms.update(
            [
                sublime.Phantom(
                    sublime.Region(card.point, card.point),
                    _card_html(content),
                    sublime.PhantomLayout.BLOCK,
                    on_navigate=lambda href, c=card: self._clicked(c, href),
                )
            ]
        )
        return card

    def remove_card(self, key: str) -> None:
        card = self.cards.pop(key, None)
        if card is not None and card.phantoms is not None:
            card.phantoms.update([])

    def _clicked(self, card: Card, href: str) -> None:
        action = card.links.get(href)
        if action is not None:
            action()

    def tool_call(self, call: ToolCall) -> None:
        self._end_thinking()
        # What re-showing the card (its output unfolded) needs: the output's end and its line
        # count, not up to 64 KiB a call for the whole chat.
        lines = line_count(call.output)
        self.tool_calls[f"tool.{call.tool_call_id}"] = (replace(call, output=tool_cards.kept(call.output)), lines)
        if call.terminals:  # its output is the terminal's (thread.terminal_output)
            self.terminal_outputs.update(self.window, f"tool.{call.tool_call_id}", call.title or call.kind, call.output)
        self._tool_card(call, lines)
        if tool_cards.following():
            self._follow(call)

    def _tool_card(self, call: ToolCall, lines: int) -> None:
        icon = ICONS.get(call.status, "○")
        status = call.status.replace("_", " ") or "pending"
        review = " · reviewed" if call.reviewed and call.kind == "edit" else ""
        if call.decision:  # the user's decision, whatever the agent reports afterwards
            css = "warning" if call.decision == "rejected" else "dim"
            review += f' · <span class="{css}">you {html.escape(call.decision)}</span>'
        links: dict[str, Callable[[], None]] = {}
        diffs = ""
        if call.diffs and not call.reviewed and call.status == "completed":
            # Never presented as reviewed: the agent wrote it without asking; its diff is a click away.
            links = {f"diff-{i}": lambda d=d: self.show_diff(d) for i, d in enumerate(call.diffs)}
            diffs = " · ".join(
                f'<a href="diff-{i}">diff of {html.escape(os.path.basename(d.path) or d.path)}</a>'
                for i, d in enumerate(call.diffs)
            )
            review = f' · <span class="warning">applied without review</span><br>{diffs}'
        key = f"tool.{call.tool_call_id}"
        where, opens = tool_cards.locations_html(call, self.window.folders(), self.open_location)
        links.update(opens)
        links["output"] = lambda: self._toggle_output(key)
        in_panel = ""
        if call.terminals:
            links["panel"] = lambda: self.terminal_outputs.show(self.window, key)
            in_panel = '<br><a href="panel">show in panel</a>'
        self.card(
            key,
            f"{icon} <b>{html.escape(call.title or call.kind)}</b> "
            f'<span class="dim">{html.escape(call.kind)} · {status}</span>{review}{where}{in_panel}'
            f"{tool_cards.output_html(call.output, lines, key in self.unfolded)}",
            links,
        )
        self.replying = False

    def open_location(self, location: Location) -> None:
        """A location's link: its file at its line (the chat's prompt keeps its text and caret)."""
        tool_cards.open_location(self.window, location)

    def _follow(self, call: ToolCall) -> None:
        """Follow the Agent: each location not opened yet, beside the chat, the focus kept here."""
        folders = self.window.folders()
        for location in call.locations:
            seen = (location.path, tool_cards.line_of(location))
            if seen in self.followed or not tool_cards.inside_folders(location.path, folders):
                continue  # only the window's files open by themselves
            self.followed.add(seen)
            tool_cards.open_location(self.window, location, self.view)

    def _toggle_output(self, key: str) -> None:
        shown = self.tool_calls.get(key)
        if shown is None:
            return
        self.unfolded ^= {key}
        self._tool_card(*shown)

    def show_diff(self, diff: ToolDiff) -> None:
        """An edit applied without review, as the agent described it: its new text, with the old text
        as the reference (Sublime's incremental diff marks the changes; nothing is computed here)."""
        view = self.window.new_file()
        view.set_scratch(True)
        view.settings().set(DIFF_SETTING, self.chat_id)  # a restart's copy of it is closed (close_leftovers)
        view.set_name(f"{os.path.basename(diff.path) or diff.path} (applied without review)")
        syntax = sublime.find_syntax_for_file(diff.path)
        if syntax is not None:
            view.assign_syntax(syntax)
        view.run_command("append", {"characters": diff.new_text, "force": True, "scroll_to_end": False})
        view.set_reference_document(diff.old_text or "")
        view.set_read_only(True)
        view.run_command("toggle_inline_diff")
        self.window.focus_view(view)

    def choice(self, key: str, title: str, choices: list[Choice], answer: Answer) -> None:
        """A permission that is not an edit: the agent's own options as links, and "Reject and say
        why…" when it offers a reject option (the agent hears the reason: acp/prompt/reasons.py)."""
        links: dict[str, Callable[[], None]] = {}
        for index, option in enumerate(choices):
            links[f"option-{index}"] = lambda o=option: self._chose(key, o, answer)
        options = " · ".join(f'<a href="option-{i}">{html.escape(o.name)}</a>' for i, o in enumerate(choices))
        reject = next((o for o in choices if o.kind == "reject_once"), None)
        if reject is not None:
            links["reject-why"] = lambda: self._ask_why(key, title, reject, answer)
            options += ' · <a href="reject-why">Reject and say why…</a>'
        self.card(key, f"<b>{html.escape(self.agent_name)}</b> asks: {html.escape(title)}<br>{options}", links)
        self.replying = False
        waits = f"{self.agent_name} waits for you (permission)"
        review_ui.attention_asked(self.view, self.chat_id, key, waits)  # unseen: the status bar says so

    def _ask_why(self, key: str, title: str, reject: Choice, answer: Answer) -> None:
        def done(reason: str) -> None:
            card = self.cards.get(key)
            if card is None or not card.links:  # answered or withdrawn meanwhile: the words are kept
                sublime.set_clipboard(reason)
                sublime.status_message("The agent no longer asks; your reason is on the clipboard")
                return
            self._chose(key, reject, answer, reason)

        self.window.show_input_panel(f"Why reject {title}? (the agent hears it)", "", done, None, None)

    def _chose(self, key: str, option: Choice, answer: Answer, reason: str = "") -> None:
        card = self.cards.get(key)
        if card is None or not card.links:
            return  # answered already, or withdrawn
        said = f": {html.escape(reason.strip())}" if reason.strip() else ""
        self.card(key, f"{card.html.split('<br>')[0]}<br>→ {html.escape(option.name)}{said}")
        review_ui.attention_answered(self.chat_id, key)
        answer(Rejection(option.option_id, reason) if reason.strip() else option.option_id)

    def choice_withdrawn(self, key: str) -> None:
        card = self.cards.get(key)
        review_ui.attention_answered(self.chat_id, key)
        if card is not None and card.links:
            self.card(key, f"{card.html.split('<br>')[0]}<br>(no answer needed any more)")

    def thought(self, text: str) -> None:
        """Thoughts are folded into a one-line card; its link shows them."""
        if self.thinking is None:
            self.thought_text = ""
            self.thought_open = False
            self.thinking = f"thought.{len(self.cards)}"
            self.replying = False
        self.thought_text += text
        self._render_thought(self.thinking, self.thought_text, self.thought_open)

    def _render_thought(self, key: str, text: str, expanded: bool) -> None:
        words = f"Thinking… ({len(text)} characters)"
        if not expanded:
            self.card(key, f'💭 <a href="expand">{words}</a>', {"expand": lambda: self._toggle(key, text, True)})
            return
        shown = html.escape(text[-THOUGHT_PREVIEW_CHARS:]).replace("\n", "<br>")
        self.card(
            key,
            f'💭 <a href="fold">{words}</a><div class="thought">{shown}</div>',
            {"fold": lambda: self._toggle(key, text, False)},
        )

    def _toggle(self, key: str, text: str, expanded: bool) -> None:
        if key == self.thinking:
            self.thought_open = expanded
            text = self.thought_text
        self._render_thought(key, text, expanded)

    def _end_thinking(self) -> None:
        self.thinking = None

    def plan(self, entries: list[PlanEntry]) -> None:
        rows = "".join(f"<div>{ICONS.get(e.status, '○')} {html.escape(e.content)}</div>" for e in entries)
        self.card("plan", f"<b>Plan</b>{rows}")
        self.replying = False

    def usage(self, usage: Usage) -> None:
        cost = f" · {usage.cost:.2f} {usage.currency or ''}".rstrip() if usage.cost is not None else ""
        self.view.set_status("gemini_companion.chat_usage", f"context {usage.used}/{usage.size}{cost}")

    def agent_status(self, text: str | None) -> None:
        """The agent's own status (its `_…` notifications) in the status bar, while the chat shows."""
        if text:
            self.view.set_status(AGENT_STATUS_KEY, text)
        else:
            self.view.erase_status(AGENT_STATUS_KEY)

    # -- the prompt --

    def prompt_text(self) -> str:
        return self.view.substr(sublime.Region(self.input_start, self.view.size()))

    def take_prompt(self) -> str:
        """The typed prompt, removed from the view."""
        text = self.prompt_text()
        self._erase_prompt()
        return text

    def set_prompt(self, text: str) -> None:
        self._erase_prompt()
        self._insert(self.input_start, text)
        self.view.sel().clear()
        self.view.sel().add(sublime.Region(self.view.size()))

    def add_to_prompt(self, text: str) -> None:
        current = self.prompt_text()
        self._insert(self.view.size(), text if not current or current.endswith((" ", "\n")) else " " + text)

    def in_prompt(self) -> bool:
        """Whether every caret is in the prompt (main thread)."""
        return all(r.begin() >= self.input_start for r in self.view.sel())

    def caret_at_prompt_start(self) -> bool:
        return any(r.empty() and r.begin() == self.input_start for r in self.view.sel())

    def focus_prompt(self) -> None:
        self.view.sel().clear()
        self.view.sel().add(sublime.Region(self.view.size()))
        self.guard()  # a selection set through the API may not be reported to on_selection_modified
        self.window.focus_view(self.view)
        self.view.show(self.view.size())

    def guard(self) -> None:
        """Read-only while a caret is in the transcript (the user types only in the prompt)."""
        read_only = not self.in_prompt()
        if self.view.is_read_only() != read_only:
            self.view.set_read_only(read_only)


def _card_html(content: str) -> str:
    return (
        '<body id="gemini-companion-chat-card"><style>'
        "div.card { padding: 0.2rem 0.5rem; border-radius: 0.3rem; background-color: color(var(--background) "
        "blend(var(--foreground) 92%)); } a { text-decoration: none; font-weight: bold; } "
        ".dim { color: color(var(--foreground) alpha(0.6)); } .thought { font-style: italic; } "
        ".warning { color: var(--yellowish); } .output { font-family: monospace; }"
        f'</style><div class="card">{content}</div></body>'
    )


class StreamingChatView:
    """The ChatView port: called on the loop thread, shown on the main thread in batches."""

    def __init__(self, panel: ChatPanel, on_state: Callable[[], None] | None = None) -> None:
        self.panel = panel
        self.on_state = on_state  # mode, model or commands changed (main thread)
        self._lock = threading.Lock()
        self._queue: list[tuple[str, Any]] = []
        self._scheduled = False
        self._silent = False  # Sublime has exited: nothing more is queued or scheduled
        self._asked = 0
        self._status: list[str | None] = []  # the agent's latest status, while one is queued

    # -- the port (loop thread) --

    def user_text(self, text: str) -> None:
        self._put("user", text)

    def agent_text(self, text: str) -> None:
        self._put("text", text)

    def thought(self, text: str) -> None:
        self._put("thought", text)

    def tool_call(self, call: ToolCall) -> None:
        self._put("tool", call)

    def plan(self, entries: list[PlanEntry]) -> None:
        self._put("plan", list(entries))

    def usage(self, usage: Usage) -> None:
        self._put("usage", usage)

    def available_commands(self, commands: list[Command]) -> None:
        self._put("commands", list(commands))

    def mode(self, current_id: str, modes: list[Mode]) -> None:
        self._put("mode", (current_id, list(modes)))

    def models(self, current_id: str, models: list[Mode]) -> None:
        self._put("models", (current_id, list(models)))

    def config_options(self, options: list[ConfigOption]) -> None:
        self._put("options", list(options))

    def session_info(self, title: str | None) -> None:
        self._put("title", title)

    def turn_ended(self, stop_reason: str) -> None:
        self._put("end", stop_reason)

    def notice(self, text: str, kind: NoticeKind = "info") -> None:
        self._put("notice", (text, kind))

    def offer_mode(self, text: str, mode: Mode) -> None:
        self._put("offer", (text, mode))

    def status(self, text: str | None) -> None:
        with self._lock:  # a flood of statuses is one queued item showing the latest
            queued = bool(self._status)
            self._status[:] = [text]
        if not queued:
            self._put("status", self._status)

    async def choose(self, title: str, choices: list[Choice]) -> str | Rejection | None:
        loop = asyncio.get_running_loop()
        decided: asyncio.Future[str | Rejection | None] = loop.create_future()

        def answer(option_id: str | Rejection | None) -> None:  # main thread
            if not loop.is_closed():  # the runtime may have stopped meanwhile
                loop.call_soon_threadsafe(lambda: decided.done() or decided.set_result(option_id))

        with self._lock:
            self._asked += 1
            key = f"ask.{self._asked}"
        self._put("ask", (key, title, list(choices), answer))
        try:
            return await decided
        finally:
            if not decided.done() or decided.cancelled():
                self._put("withdrawn", key)

    # What the agent asks outside a permission (acp/asks/auth.py, acp/asks/elicitation.py): shown in order
    # with the transcript, answered on the main thread (chat/asking.py).

    async def pick(self, title: str, items: list[str]) -> int | None:
        return await self._question(lambda panel, answer: asking.pick(panel.window, title, list(items), answer))

    async def ask_text(self, title: str, hint: str = "") -> str | None:
        return await self._question(lambda panel, answer: asking.ask_text(panel.window, title, hint, answer))

    async def confirm_url(self, text: str, url: str) -> bool | None:
        return await self._question(lambda _panel, answer: asking.confirm_url(text, url, answer))

    def open_url(self, url: str) -> None:
        self._put("question", (lambda _panel, _answer: asking.open_url(url), lambda _value: None))

    async def run_login(self, command: LoginCommand) -> bool:
        """Terminus runs the login; the chat goes on when the user says it is done."""
        self._put("question", (lambda panel, _answer: asking.run_login(panel.window, command), lambda _value: None))
        done = Choice("done", "Continue: I have logged in", "allow_once")
        chosen = await self.choose(
            f"log in with {command.title!r} in the terminal, then continue",
            [done, Choice("cancel", "Cancel", "reject_once")],
        )
        return chosen == "done"

    async def _question(self, show: Callable[[ChatPanel, Callable[[Any], None]], None]) -> Any:
        loop = asyncio.get_running_loop()
        decided: asyncio.Future[Any] = loop.create_future()

        def answer(value: Any) -> None:  # main thread; a late answer (the chat closed) is dropped
            if not loop.is_closed():
                loop.call_soon_threadsafe(lambda: decided.done() or decided.set_result(value))

        self._put("question", (show, answer))
        return await decided

    # -- batching --

    def silence(self) -> None:
        """From now on (exit: the API is gone) every update is dropped (any thread)."""
        with self._lock:
            self._silent = True
            self._queue.clear()

    def _put(self, what: str, payload: Any) -> None:
        with self._lock:
            if self._silent:
                return
            self._queue.append((what, payload))
            if self._scheduled:
                return
            self._scheduled = True
        sublime.set_timeout(self.flush)

    def flush(self) -> None:
        """One main-thread tick: everything queued, but at most MAX_CHARS_PER_TICK characters of
        text; the rest waits for the next tick. Chunks in a row (text, or thought) are shown at
        once: a 1000-chunk thought is one card update, not 1000."""
        with self._lock:
            if self._silent:
                return
            queue, self._queue = self._queue, []
        budget = MAX_CHARS_PER_TICK
        run: tuple[str, list[str]] = ("", [])  # the chunks in a row, of one kind
        rest: list[tuple[str, Any]] = []
        for index, (what, payload) in enumerate(queue):
            if what in ("text", "thought"):
                if what == "text":
                    if budget <= 0:
                        rest = queue[index:]
                        break
                    piece = payload[:budget]
                    if len(piece) < len(payload):
                        rest = [("text", payload[len(piece) :]), *queue[index + 1 :]]
                    payload, budget = piece, budget - len(piece)
                if run[0] != what:
                    self._show_run(run)
                    run = (what, [])
                run[1].append(payload)
                if rest:
                    break
                continue
            self._show_run(run)
            run = ("", [])
            self._show(what, payload)
        self._show_run(run)
        with self._lock:
            self._queue[:0] = rest
            again = bool(self._queue)
            self._scheduled = again
        if again:
            sublime.set_timeout(self.flush)

    def _show_run(self, run: tuple[str, list[str]]) -> None:
        what, chunks = run
        if chunks and self.panel.is_valid():
            (self.panel.agent_text if what == "text" else self.panel.thought)("".join(chunks))

    def _show(self, what: str, payload: Any) -> None:
        panel = self.panel
        if not panel.is_valid():
            if what == "ask":
                payload[3](None)  # the chat's view is gone: no answer
            elif what == "question":
                payload[1](None)
            return
        if what == "user":
            panel.user_prompt(payload)
        elif what == "tool":
            panel.tool_call(payload)
        elif what == "plan":
            panel.plan(payload)
        elif what == "usage":
            panel.usage(payload)
        elif what == "status":
            with self._lock:
                text = payload.pop() if payload else None
            panel.agent_status(text)
        elif what == "notice":
            panel.notice(*payload)
        elif what == "offer":
            panel.mode_offer(*payload)
        elif what == "ask":
            key, title, choices, answer = payload
            panel.choice(key, title, choices, answer)
        elif what == "withdrawn":
            panel.choice_withdrawn(payload)
        elif what == "question":
            show, answer = payload
            show(panel, answer)
        elif what == "end":
            panel.turn_ended(payload)
        else:
            self._state(what, payload)

    def _state(self, what: str, payload: Any) -> None:
        panel = self.panel
        if what == "commands":
            panel.commands = payload
        elif what == "mode":
            current, modes = payload
            changed = panel.mode_id and current != panel.mode_id
            panel.mode_id = current
            panel.modes = modes or panel.modes
            if changed:
                panel.notice(f"Mode: {_name(current, panel.modes)}.", "info")
        elif what == "models":
            panel.models = payload
        elif what == "options":
            panel.options = payload
        elif what == "title" and payload:
            panel.view.set_name(f"Chat: {panel.agent_name} — {payload}")
        if self.on_state is not None:
            self.on_state()


def _name(mode_id: str, modes: list[Mode]) -> str:
    return next((m.name for m in modes if m.id == mode_id), mode_id)
