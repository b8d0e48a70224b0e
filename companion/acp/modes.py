"""Which of an agent's session modes asks before each edit: the mode a chat starts in.

Agents name their modes freely. These are the ids and names recognised, as real ACP agents
advertise them (reference acp.md §2–4; the agents' sources):

- asking: `default` (Gemini CLI "Prompts for approval", claude-agent-acp "Manual", Qwen Code),
  `ask`, `manual`, `approve` (goose).
- writing without asking: `auto`, `autoEdit` / `auto-edit` (Gemini CLI, Qwen Code), `acceptEdits`
  (claude-agent-acp) / `accept-edits`, `auto-approve`, `yolo`, `bypassPermissions`, `full-access`,
  `dontAsk`, `smart_approve` (goose: asks only about what it judges risky).
- writing nothing: `plan`, `read-only`, `chat`.

Ids and names compare without case, spaces, `-` or `_`, so `accept-edits`, `acceptEdits` and
"Accept Edits" are one. No SDK import here.

Names are hints, never proof: what a mode does is decided, in this order, by
1. what the chat saw the agent do in it (`Seen`): a permission request before an edit makes it an
   asking mode, an edit applied without one a writing mode (that one wins: a single unasked edit
   is enough), whatever its id: an agent whose `read-only` mode asks before each edit asks there;
2. its id, then its name, against the lists above;
3. its description: one that says the mode asks (approval, permission, confirm) asks.
An agent starting in a writing mode without a mode known to ask is moved to a mode not known to
write (reading modes first): there, an edit either comes with a permission request (reviewed) or is
seen writing (a warning, exit 3). Only an agent whose every mode is known to write is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from .view import Mode


class Kind(Enum):
    ASKS = "asks before each edit"
    WRITES = "applies edits without review"
    READS = "makes no edits"
    UNKNOWN = "unknown"


# In order of preference: an agent offering both `ask` and `default` asks in `ask`.
ASKING = ("ask", "default", "manual", "approve")
WRITING = (
    "auto",
    "autoedit",
    "acceptedits",
    "autoapprove",
    "yolo",
    "bypasspermissions",
    "fullaccess",
    "dontask",
    "smartapprove",
)
READING = ("plan", "readonly", "chat")


def _key(word: str) -> str:
    return re.sub(r"[\s_-]+", "", word).lower()


_ASKS_WORDS = re.compile(r"\b(asks?|approv\w*|permission|confirm\w*|prompts? for)\b", re.I)
_NOT_ASKING_WORDS = re.compile(r"\b(without|never|no|auto\w*|skips?|bypass\w*)\b", re.I)


class Seen:
    """What the agent was seen doing with edits in each mode during this chat, by mode id."""

    def __init__(self) -> None:
        self.kinds: dict[str, Kind] = {}

    def asked(self, mode_id: str | None) -> None:
        """A permission request for an edit arrived in `mode_id`."""
        if mode_id is not None and self.kinds.get(mode_id) is not Kind.WRITES:
            self.kinds[mode_id] = Kind.ASKS

    def wrote(self, mode_id: str | None) -> None:
        """An edit was applied (or attempted through fs/*) without asking in `mode_id`."""
        if mode_id is not None:
            self.kinds[mode_id] = Kind.WRITES


def kind(mode: Mode, seen: Seen | None = None) -> Kind:
    """What the mode does with edits: as seen in this chat, else from its id (else its name),
    else from its description."""
    if seen is not None and mode.id in seen.kinds:
        return seen.kinds[mode.id]
    for word in (mode.id, mode.name):
        key = _key(word)
        if key in ASKING:
            return Kind.ASKS
        if key in WRITING:
            return Kind.WRITES
        if key in READING:
            return _described(mode) or Kind.READS
    return _described(mode) or Kind.UNKNOWN


def _described(mode: Mode) -> Kind | None:
    """ASKS when the description says the mode asks before editing (not "without approval")."""
    words = mode.description or ""
    return Kind.ASKS if _ASKS_WORDS.search(words) and not _NOT_ASKING_WORDS.search(words) else None


def asking_mode(modes: Sequence[Mode], seen: Seen | None = None) -> Mode | None:
    """The agent's mode that asks before each edit: one seen asking first; else by id (`ask`, then
    `default`, …), then by name, only for ids we do not know (a mode with id `auto` named "Default"
    still writes), then by description. Never one seen writing without asking."""
    modes = [m for m in modes if seen is None or seen.kinds.get(m.id) is not Kind.WRITES]
    if seen is not None:
        found = next((m for m in modes if seen.kinds.get(m.id) is Kind.ASKS), None)
        if found is not None:
            return found
    for wanted in ASKING:
        found = next((m for m in modes if _key(m.id) == wanted), None)
        if found is not None:
            return found
    unknown = [m for m in modes if kind(Mode(m.id, "")) is Kind.UNKNOWN]
    for wanted in ASKING:
        found = next((m for m in unknown if _key(m.name) == wanted), None)
        if found is not None:
            return found
    return next((m for m in modes if kind(m) is Kind.ASKS), None)


@dataclass(frozen=True)
class ModeChoice:
    """The mode to set when a session opens (None: keep the agent's), and why, for a notice."""

    mode_id: str | None
    why: str = ""


class NoAskingMode(ValueError):
    """The agent starts in a mode that applies edits without review and offers none that asks;
    the message says what the user can do."""


def starting_mode(agent: str, current: str | None, modes: Sequence[Mode], wanted: str | None) -> ModeChoice:
    """The mode a new chat with `agent` runs in: `wanted` (the user's `mode` setting or `--mode`;
    ValueError when the agent lacks it), else the asking mode. An agent in a mode we do not
    recognise and with no asking mode keeps its mode; one that applies edits without review and
    has no asking mode raises NoAskingMode."""
    ids = [m.id for m in modes]
    if wanted:
        if modes and wanted not in ids:
            raise ValueError(f"{agent} has no mode {wanted!r}; its modes are {ids}: set one of them as its mode")
        return ModeChoice(None if wanted == current else wanted, f"the mode you set for {agent}")
    asking = asking_mode(modes)
    if asking is None:
        now = next((m for m in modes if m.id == current), Mode(current or "", current or ""))
        if not current or kind(now) is not Kind.WRITES:
            return ModeChoice(None)
        # No mode is known to ask: one not known to write is better than one known to write; an
        # edit there comes with a permission request (reviewed) or is seen writing (a warning).
        other = next((m for k in (Kind.READS, Kind.UNKNOWN) for m in modes if kind(m) is k), None)
        if other is None:
            raise NoAskingMode(
                f"{agent} starts in mode {current!r}, which applies edits without review, and offers no "
                f'mode that asks before each edit (its modes: {ids}); set its "mode" in the setting '
                '"agents" (or --mode) to one of them if you accept that'
            )
        return ModeChoice(
            other.id,
            f"{current!r} applies edits without review and no mode is known to ask; in {other.id!r} every edit "
            "must come with a permission request, else the chat warns",
        )
    if asking.id == current:
        return ModeChoice(None)
    return ModeChoice(asking.id, f"{asking.name or asking.id} asks before each edit")
