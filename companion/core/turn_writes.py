"""What an agent wrote through us during a turn, for the change set's attribution: a room records
each applied write (`acp/session.py`: fs/write_text_file, a reviewed edit the agent wrote itself, an
edit it reported without asking) and the turn's end takes the record.

Each write also keeps the sha256 of the file just after it. A file the turn leaves with other
content (a formatter, `sed -i` or a code generator the agent ran after writing it) is no longer the
agent's write, and never "reviewed": the user did not see what is there now (`left_as_written`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from .reading import iter_at_most

if TYPE_CHECKING:  # a chat without checkpoints does not load their machinery (terminal_chat.py)
    from .checkpoints import Checkpoint

# A checkpoint's default size limit (checkpoints.MAX_FILE_BYTES; a test keeps them equal): a larger
# file is not covered, so there is nothing to compare its digest with.
DIGEST_LIMIT_BYTES = 16 * 1024 * 1024

# As a checkpoint opens files: never through a link, never waiting on a FIFO.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


class Taken(NamedTuple):
    writes: dict[str, bool]  # real path -> reviewed
    digests: dict[str, str]  # real path -> sha256 just after the agent's last write (when read)


class TurnWrites:
    """Real path -> reviewed (callers pass the resolved, real path they wrote). A path written twice
    counts as reviewed only if every write was."""

    def __init__(self) -> None:
        self._writes: dict[str, bool] = {}
        self._digests: dict[str, str] = {}

    def record(self, path: str, reviewed: bool, digest: str | None = None) -> None:
        """`digest`: the file's sha256 just after this write (`written_digest`); None: not checked."""
        self._writes[path] = self._writes.get(path, True) and reviewed
        if digest is None:
            self._digests.pop(path, None)
        else:
            self._digests[path] = digest

    def take(self) -> dict[str, bool]:
        """The turn's writes, and start recording afresh."""
        return self.take_turn().writes

    def take_turn(self) -> Taken:
        """The turn's writes with their digests (for `Turns.end`), and start recording afresh."""
        taken = Taken(self._writes, self._digests)
        self._writes, self._digests = {}, {}
        return taken


def written_digest(path: str, limit: int = DIGEST_LIMIT_BYTES) -> str | None:
    """sha256 of the regular file at `path` as it is now; None when it is not one, cannot be read, or
    is larger than `limit` (what a checkpoint would not cover either). Blocking: a worker thread."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest, length = hashlib.sha256(), 0
        for chunk in iter_at_most(fd, limit + 1):
            digest.update(chunk)
            length += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return digest.hexdigest() if length <= limit else None


def left_as_written(writes: Mapping[str, bool], digests: Mapping[str, str], after: Checkpoint) -> dict[str, bool]:
    """The writes whose file the turn's end state `after` holds as the agent wrote it; a file changed
    since (other content, gone, no longer a file) is someone else's change. A file `after` does not
    cover (too large) cannot be compared and keeps its record."""
    kept: dict[str, bool] = {}
    for path, reviewed in writes.items():
        expected, entry = digests.get(path), after.entries.get(path)
        if expected is not None and (entry is None or entry.kind != "file" or entry.digest not in ("", expected)):
            continue
        kept[path] = reviewed
    return kept
