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


def kind(mode: Mode) -> Kind:
    """What the mode does with edits, from its id (else its name)."""
    for word in (mode.id, mode.name):
        key = _key(word)
        if key in ASKING:
            return Kind.ASKS
        if key in WRITING:
            return Kind.WRITES
        if key in READING:
            return Kind.READS
    return Kind.UNKNOWN


def asking_mode(modes: Sequence[Mode]) -> Mode | None:
    """The agent's mode that asks before each edit: by id first (`ask`, then `default`, …), then
    by name, only for ids we do not know (a mode with id `auto` named "Default" still writes)."""
    for wanted in ASKING:
        found = next((m for m in modes if _key(m.id) == wanted), None)
        if found is not None:
            return found
    unknown = [m for m in modes if kind(Mode(m.id, "")) is Kind.UNKNOWN]
    for wanted in ASKING:
        found = next((m for m in unknown if _key(m.name) == wanted), None)
        if found is not None:
            return found
    return None


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
        if current and kind(now) is Kind.WRITES:
            raise NoAskingMode(
                f"{agent} starts in mode {current!r}, which applies edits without review, and offers no "
                f'mode that asks before each edit (its modes: {ids}); set its "mode" in the setting '
                '"agents" (or --mode) to one of them if you accept that'
            )
        return ModeChoice(None)
    if asking.id == current:
        return ModeChoice(None)
    return ModeChoice(asking.id, f"{asking.name or asking.id} asks before each edit")
