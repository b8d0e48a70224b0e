"""The ChatView port: what a chat shows and asks (the headless terminal, the Sublime chat view).
Called on the chat's event loop; an implementation with a UI thread marshals there and never blocks.

Every argument is a primitive or one of the frozen dataclasses below: no SDK type leaks out, so a
view never imports the SDK (which loads only on the first chat). The names are the protocol's
(reference acp.md §1): one method per `session/update` kind, plus the turn's end and our notices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

# What a notice is, so a view can style it: the agent's own informational message (Claude's
# `_meta.claudeCode.kind: "informational"` chunks), our information (a mode change, "allow for this
# session" in force), or a warning (an edit applied without review, a refused request).
NoticeKind = Literal["agent", "info", "warning"]


@dataclass(frozen=True)
class Choice:
    """One of the agent's permission options, under its own name."""

    option_id: str
    name: str
    kind: str  # allow_once, allow_always, reject_once, reject_always


@dataclass(frozen=True)
class Rejection:
    """A reject option chosen with the user's reason ("Reject and say why…"): the agent gets the
    option, then the reason as words (acp/prompt/reasons.py)."""

    option_id: str
    reason: str


@dataclass(frozen=True)
class Location:
    """A file a tool call reads or changes (ToolCallLocation); `line` is 0-based when given."""

    path: str
    line: int | None = None


@dataclass(frozen=True)
class ToolDiff:
    """A diff block of a tool call: enough for the view to open a diff of it (the review itself, when
    there is one, is opened by the review gate, not from here). `old_text` None: a new file, or an
    agent that sends no old text (Claude's Write)."""

    path: str
    old_text: str | None
    new_text: str
    # False: the texts were over what a chat keeps of a tool call (updates.py); `new_text` only says
    # so, `old_text` is None. Never a proposal to review or write.
    kept: bool = True


@dataclass(frozen=True)
class ToolCall:
    """A tool call as it is now (`tool_call`, then each `tool_call_update` merged into it)."""

    tool_call_id: str
    title: str
    kind: str  # read, edit, delete, move, search, execute, think, fetch, other
    status: str  # pending, in_progress, completed, failed ("" before the agent says)
    locations: tuple[Location, ...] = ()
    diffs: tuple[ToolDiff, ...] = ()
    output: str = ""  # the text content blocks, joined (a command's output, an error)
    # The client terminals the call embeds (`{"type": "terminal"}` content): their output is the
    # card's `output` while they run (terminals.py).
    terminals: tuple[str, ...] = ()
    reviewed: bool = False  # it went through a permission request (an edit: through a review)
    # What the user decided in the review ("accepted", "accepted with your edits", "rejected"; ""
    # before a decision): shown whatever status the agent reports afterwards.
    decision: str = ""


@dataclass(frozen=True)
class PlanEntry:
    content: str
    priority: str  # high, medium, low
    status: str  # pending, in_progress, completed


@dataclass(frozen=True)
class Usage:
    """Context use (`usage_update`): tokens in context of the window's size, the session's cost."""

    used: int
    size: int
    cost: float | None = None
    currency: str | None = None  # ISO 4217, with cost


@dataclass(frozen=True)
class Command:
    """A slash command the agent offers (`available_commands_update`), for completion."""

    name: str  # without the slash
    description: str
    input_hint: str | None = None  # shown while the command's argument is not typed yet


@dataclass(frozen=True)
class Mode:
    """A session mode (`default`, `autoEdit`, `plan` …), also a model of `models()`."""

    id: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class ConfigChoice:
    value: str
    name: str
    description: str | None = None
    group: str | None = None  # the group's name when the agent groups its choices


@dataclass(frozen=True)
class ConfigOption:
    """A session config option (Claude: mode, model, effort …). `kind` "select" has `choices` and a
    str `current`; "boolean" has a bool `current` and no choices."""

    id: str
    name: str
    kind: str  # select, boolean
    current: str | bool
    choices: tuple[ConfigChoice, ...] = ()
    description: str | None = None
    category: str | None = None  # mode, model, model_config, thought_level, or the agent's own


@dataclass(frozen=True)
class LoginCommand:
    """An agent's terminal login (`AuthMethodTerminal`): its own program with the method's
    arguments, run where the user can answer it. `env` holds only what is added to the inherited
    environment (the agent's `env` setting and the method's): it may hold secrets, so it is never
    logged, shown or put in the transcript."""

    title: str
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict, repr=False)


class ChatView(Protocol):
    def user_text(self, text: str) -> None:
        """A chunk of the user's message, as the agent replays it when a session is continued."""
        ...

    def agent_text(self, text: str) -> None:
        """A chunk of the agent's reply."""
        ...

    def thought(self, text: str) -> None:
        """A chunk of the agent's reasoning."""
        ...

    def tool_call(self, call: ToolCall) -> None:
        """A tool call started or changed (the whole call as known now, not the delta)."""
        ...

    def plan(self, entries: list[PlanEntry]) -> None:
        """The agent's plan, complete: replaces the one shown."""
        ...

    def usage(self, usage: Usage) -> None:
        """Context use and cost so far."""
        ...

    def available_commands(self, commands: list[Command]) -> None:
        """The slash commands the agent offers now (replaces the earlier list)."""
        ...

    def mode(self, current_id: str, modes: list[Mode]) -> None:
        """The current mode and the ones to switch to (`modes` is empty when unknown)."""
        ...

    def models(self, current_id: str, models: list[Mode]) -> None:
        """The current model and the others (Gemini's `models` on session/new and load)."""
        ...

    def config_options(self, options: list[ConfigOption]) -> None:
        """The session's config options, complete (Claude's model lives here)."""
        ...

    def session_info(self, title: str | None) -> None:
        """The session's title as the agent names it (None: cleared)."""
        ...

    def turn_ended(self, stop_reason: str) -> None:
        """The prompt's turn ended: end_turn, max_tokens, max_turn_requests, refusal, cancelled."""
        ...

    def notice(self, text: str, kind: NoticeKind = "info") -> None:
        """Something the user must know that is not the model's text (applied without review, a
        refused request, an agent's informational message)."""
        ...

    def offer_mode(self, text: str, mode: Mode) -> None:
        """A warning notice (an edit applied without review, or a write refused for want of one)
        with a one-click switch to `mode`, the agent's mode that asks before each edit."""
        ...

    def status(self, text: str | None) -> None:
        """What the agent says while it works, outside the protocol (its `_…` notifications, such
        as a model retrying its connection): one line, each replacing the last; None clears it."""
        ...

    async def choose(self, title: str, choices: list[Choice]) -> str | Rejection | None:
        """Ask about a permission that is not an edit; the chosen option id (a Rejection when the
        user rejected and said why), None for no answer."""
        ...

    # What the agent asks of the user outside a permission (acp/asks/auth.py, acp/asks/elicitation.py): each
    # returns None when the user dismisses the question (Escape, end of input) or the chat closes.

    async def pick(self, title: str, items: list[str]) -> int | None:
        """The index of the item the user picks (a quick panel, a numbered question)."""
        ...

    async def ask_text(self, title: str, hint: str = "") -> str | None:
        """One line the user types (an input panel, a console question)."""
        ...

    async def confirm_url(self, text: str, url: str) -> bool | None:
        """Whether the user wants `url` opened; the URL is shown in full, never shortened."""
        ...

    def open_url(self, url: str) -> None:
        """Open `url` in the user's browser (only after `confirm_url` said yes)."""
        ...

    async def run_login(self, command: LoginCommand) -> bool:
        """Run the agent's login command where the user can answer it (Terminus, the console);
        True once it is done (the user said so, or it exited), False when the user gave up."""
        ...
