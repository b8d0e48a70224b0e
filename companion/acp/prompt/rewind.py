"""Rewind the conversation with the code: the chat's own transcript (each prompt's text and the
agent's reply) and the note that carries the turns before prompt N to a new session.

No pinned agent offers a rewind of its own (ACP has none; `session/fork` forks at the end of a
conversation, not at prompt N), so a rewind opens a new session of the same agent whose first prompt
carries the turns before prompt N as a note, bounded: the newest turns are kept, older ones are cut
and counted in a marker. Pure: no I/O, no SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NOTE_LIMIT_CHARS = 32_000  # the transcript's share of the first prompt of the rewound session
HEAD = "[Note from the editor: the user rewound this conversation. It continues from here; the earlier turns were:]"
PROMPT_PREFIX = "## The user said:"
REPLY_PREFIX = "## You answered:"


@dataclass
class Turn:
    prompt: str
    reply: str = ""
    number: int = 0  # the chat's prompt number (1 = its first), as its checkpoint counts it


@dataclass
class Rewound:
    """What a rewind took: the session it left and that session's transcript, for its undo."""

    session_id: str
    turns: list[Turn]


@dataclass
class Transcript:
    """The prompts sent in this chat's session and what the agent answered to each."""

    turns: list[Turn] = field(default_factory=list[Turn])
    count: int = 0  # every prompt of the chat, rewound ones too: the numbers go on as its checkpoints do

    def prompted(self, text: str) -> None:
        self.count += 1
        self.turns.append(Turn(text, "", self.count))

    def replied(self, text: str) -> None:
        if self.turns:  # a replay before any prompt of ours is the agent's, not this chat's
            self.turns[-1].reply += text

    def prompt_text(self, number: int) -> str:
        """The text of prompt `number` (1 = the first); ValueError saying what to do when there is none."""
        found = next((t for t in self.turns if t.number == number), None)
        if found is None:
            shown = ", ".join(str(t.number) for t in self.turns) or "none"
            raise ValueError(
                f"this conversation has no prompt {number} (its prompts: {shown}; an earlier rewind "
                "left out the others); pick one of them."
            )
        return found.prompt

    def cut_before(self, number: int) -> list[Turn]:
        """Keep the turns before prompt `number`; return the whole transcript as it was (for the undo)."""
        self.prompt_text(number)
        kept, self.turns = self.turns, [Turn(t.prompt, t.reply, t.number) for t in self.turns if t.number < number]
        return kept


def seed_note(turns: list[Turn], limit: int = NOTE_LIMIT_CHARS) -> str:
    """The turns as one note of at most `limit` characters (empty for no turns): the newest whole
    turns that fit, older ones replaced by "[… N earlier turns cut]"; a newest turn longer than the
    bound keeps its end."""
    if not turns:
        return ""
    blocks = [f"{PROMPT_PREFIX}\n{t.prompt.strip()}\n\n{REPLY_PREFIX}\n{t.reply.strip() or '(no text)'}" for t in turns]
    kept: list[str] = []
    for block in reversed(blocks):
        marker = _marker(len(blocks) - len(kept) - 1)
        if len(_joined([marker, block, *kept])) > limit:
            break
        kept.insert(0, block)
    cut = len(blocks) - len(kept)
    if not kept:  # not even the newest turn fits: its end, after the marker
        marker = _marker(cut - 1)
        room = max(0, limit - len(_joined([marker, ""])) - 1)
        return _joined([marker, "…" + blocks[-1][len(blocks[-1]) - room :]])[:limit]
    return _joined([_marker(cut), *kept])


def _marker(cut: int) -> str:
    return f"{HEAD}\n[… {cut} earlier turn{'s' * (cut != 1)} cut]" if cut else HEAD


def _joined(parts: list[str]) -> str:
    return "\n\n".join(parts)
