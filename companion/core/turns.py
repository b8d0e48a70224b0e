"""A chat's turns in one workspace: a checkpoint before each prompt, the state at its end, the change
set between them, and revert/restore of the last turn, which the `changes` command works on later.

The record of the last turn (`last_turn.json` in the workspace's store, keyed by the folders' real
paths) names both checkpoints, the agent and what it wrote through us; a later chat in the same
folders replaces it. Blocking I/O: run it on a worker thread, never on Sublime's main thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .change_set import FileChange, diff
from .checkpoint_store import CheckpointStore
from .checkpoints import Checkpoint, Checkpointer, Limits, load
from .restore import RestoreFailed, RestoreRefused, restore
from .turn_writes import left_as_written


class NoTurn(Exception):
    """No chat left a turn in this workspace (or its checkpoints are gone); the message says so."""


@dataclass(frozen=True)
class LastTurn:
    agent: str
    before: Checkpoint
    after: Checkpoint
    writes: dict[str, bool]


class Turns:
    def __init__(self, cache_folder: str, folders: Sequence[str], limits: Limits | None = None) -> None:
        self.store = CheckpointStore(cache_folder, folders)
        self.checkpointer = Checkpointer(self.store, folders, limits)
        self._before: Checkpoint | None = None

    def begin(self) -> Checkpoint:
        """The checkpoint before a prompt."""
        self._before = self.checkpointer.take()
        return self._before

    def end(self, agent: str, writes: dict[str, bool], digests: Mapping[str, str] | None = None) -> list[FileChange]:
        """Record the turn's end state and return its change set. `digests` (TurnWrites.take_turn):
        a written file the turn left with other content is not the agent's (turn_writes.py)."""
        before = self._before or self.checkpointer.take()
        after = self.checkpointer.take()
        writes = left_as_written(writes, digests or {}, after)
        self._save(LastTurn(agent, before, after, writes))
        self.checkpointer.prune(pinned=(before.id, after.id))
        return diff(before, after, self.store, writes, agent)

    def last(self) -> LastTurn:
        record = self.store.load_record()
        if record is None:
            raise NoTurn("no chat has left a turn in this workspace; run `chat --checkpoints` there first.")
        before, after = load(self.store, record["before"]), load(self.store, record["after"])
        if before is None or after is None:
            raise NoTurn("the last turn's checkpoints are gone from the cache; nothing can be restored.")
        return LastTurn(str(record["agent"]), before, after, {str(k): bool(v) for k, v in record["writes"].items()})

    def change_set(self) -> list[FileChange]:
        """The last turn's files, without line counts (`changes --json` prints none)."""
        turn = self.last()
        return diff(turn.before, turn.after, self.store, turn.writes, turn.agent, counted=False)

    def revert(self, paths: Sequence[str] | None) -> list[str]:
        """Revert `paths` (all when None) to the last turn's checkpoint; RestoreRefused writes
        nothing. Returns the paths left alone as not covered. The turn's end state is updated, so a
        later restore does not take these reverts for someone else's change."""
        turn = self.last()
        after, skipped = restore(self.store, turn.before, turn.after, paths)
        self.store.save_point(after.id, after.payload())
        self._save(LastTurn(turn.agent, turn.before, after, turn.writes))
        return skipped

    def _save(self, turn: LastTurn) -> None:
        self.store.save_record(
            {"agent": turn.agent, "before": turn.before.id, "after": turn.after.id, "writes": turn.writes}
        )


__all__ = ["NoTurn", "RestoreFailed", "RestoreRefused", "Turns"]
