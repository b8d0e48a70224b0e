"""What an agent wrote through us during a turn, for the change set's attribution: a room records
each applied write (`acp/session.py`: fs/write_text_file, a reviewed edit the agent wrote itself, an
edit it reported without asking) and the turn's end takes the record."""

from __future__ import annotations


class TurnWrites:
    """Real path -> reviewed (callers pass the resolved, real path they wrote). A path written twice
    counts as reviewed only if every write was."""

    def __init__(self) -> None:
        self._writes: dict[str, bool] = {}

    def record(self, path: str, reviewed: bool) -> None:
        self._writes[path] = self._writes.get(path, True) and reviewed

    def take(self) -> dict[str, bool]:
        """The turn's writes, and start recording afresh."""
        taken, self._writes = self._writes, {}
        return taken
