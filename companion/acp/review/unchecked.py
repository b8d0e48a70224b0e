"""The edits of a turn that did not go through the review, for `chat`'s summary and exit status:
applied without one (the agent wrote in a mode that does not ask), changed after the review (the
file's bytes at the turn's end are not the bytes the user accepted: core/history/turn_writes.py), or
refused before one (the request could not be reviewed: no file named, outside the workspace,
nothing to show).

Counted whole; only the first few paths are kept, to name them (an agent may send thousands)."""

from __future__ import annotations

from dataclasses import dataclass, field

NAMED = 3  # paths named in the summary; the rest are counted


@dataclass
class Tally:
    count: int = 0
    named: list[str] = field(default_factory=list[str])

    def add(self, path: str) -> None:
        self.count += 1
        if len(self.named) < NAMED and path not in self.named:
            self.named.append(path)

    def names(self) -> str:
        more = self.count - len(self.named)
        return ", ".join(self.named) + (f" and {more} more" if more > 0 else "")


@dataclass
class UncheckedEdits:
    applied: Tally = field(default_factory=Tally)  # reached the file with no review
    refused: Tally = field(default_factory=Tally)  # refused before any review
    changed: Tally = field(default_factory=Tally)  # reviewed, but the disk does not hold what was accepted

    def take(self) -> UncheckedEdits:
        """What was counted since the last take (one turn's), and start counting afresh."""
        taken = UncheckedEdits(self.applied, self.refused, self.changed)
        self.applied, self.refused, self.changed = Tally(), Tally(), Tally()
        return taken
