"""What an agent wrote through us during a turn, for the change set's attribution: a room records
each applied write (`acp/session.py`: fs/write_text_file, a reviewed edit the agent wrote itself, an
edit it reported without asking) and the turn's end takes the record.

Each write also keeps the sha256 of the bytes the file must hold: the bytes we wrote (taken from
what we passed to the write, never by reading the file again: an agent renaming its own bytes over
the file right after our write would be taken for ours; for the editor's save of its open buffer,
the few forms that save may store), or, when the agent writes the file itself after a permission,
the bytes the user accepted encoded as the file is written (`wrote`, `record`). At the
turn's end `changed_after_review` compares them with the disk: "reviewed" holds only where the disk
has exactly those bytes; any other content (other bytes, an append, a rename over, a rewrite with
other line endings, a write that never came) is "changed after your review". An accepted deletion
expects the file gone (`ABSENT`): gone is reviewed, any content is not. A file the turn leaves
with other content (a formatter, `sed -i` or a code generator the agent ran after writing it) is no
longer the agent's write either (`left_as_written`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from ..files.reading import iter_at_most

if TYPE_CHECKING:  # a chat without checkpoints does not load their machinery (headless/chat.py)
    from .checkpoints import Checkpoint

# A checkpoint's default size limit (checkpoints.MAX_FILE_BYTES; a test keeps them equal): a larger
# file is not covered, so there is nothing to compare its digest with.
DIGEST_LIMIT_BYTES = 16 * 1024 * 1024

# As a checkpoint opens files: never through a link, never waiting on a FIFO.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


# The "digest" of a file that must be gone: an accepted deletion (no sha256 is this string).
ABSENT = "absent"


def digest_of(data: bytes) -> str:
    """The sha256 `record` takes: of the bytes written (or to be written), as the checkpoints hash them."""
    return hashlib.sha256(data).hexdigest()


class Expected(NamedTuple):
    """The bytes a file may hold after a write: one form for bytes we wrote, a few for the editor's
    save of its buffer (`AgentFiles.write_accepted`)."""

    forms: frozenset[tuple[int, str]]  # (length, sha256); length -1: not known (read the file)


class Taken(NamedTuple):
    writes: dict[str, bool]  # real path -> reviewed
    digests: dict[str, str]  # real path -> sha256 of the bytes the agent's last write must have left
    changed: list[str]  # the reviewed files whose bytes were not the accepted ones (changed_after_review)


class TurnWrites:
    """Real path -> reviewed (callers pass the resolved, real path they wrote). A path written twice
    counts as reviewed only if every write was."""

    def __init__(self) -> None:
        self._writes: dict[str, bool] = {}
        self._digests: dict[str, str] = {}
        self._unchecked: dict[str, Expected] = {}  # recorded since the last `changed_after_review`
        self._changed: list[str] = []  # what it found since the last take

    def record(self, path: str, reviewed: bool, digest: str | None = None, size: int | None = None) -> None:
        """`digest` (and `size`): of the bytes the file must hold after this write (`digest_of` the
        bytes written or accepted); None: not checked. `wrote` takes the bytes themselves."""
        self._writes[path] = self._writes.get(path, True) and reviewed
        if digest is None:
            self._digests.pop(path, None)
            self._unchecked.pop(path, None)
        else:
            self._digests[path] = digest
            self._unchecked[path] = Expected(frozenset({(-1 if size is None else size, digest)}))

    def wrote(self, path: str, reviewed: bool, data: bytes, *others: bytes) -> None:
        """We wrote `data` to `path` (the very bytes passed to the write); `others`: other bytes the
        write may have left instead (the editor saving its buffer with the line endings it keeps)."""
        self.record(path, reviewed, digest_of(data), len(data))
        self._unchecked[path] = Expected(frozenset((len(d), digest_of(d)) for d in (data, *others)))

    def changed_after_review(self) -> list[str]:
        """The reviewed files recorded since the last call whose bytes on disk are not the bytes
        recorded (sorted); each is no longer reviewed. Blocking: a worker thread."""
        checking, self._unchecked = self._unchecked, {}
        changed: list[str] = []
        for path, expected in sorted(checking.items()):
            found = holds(path, expected) if self._writes.get(path) else ""
            if found is None:
                changed.append(path)
                self._writes[path] = False
            elif found:
                self._digests[path] = found  # the form it holds: what the turn's end state must have
        self._changed += [p for p in changed if p not in self._changed]
        return changed

    def take(self) -> dict[str, bool]:
        """The turn's writes, and start recording afresh."""
        return self.take_turn().writes

    def take_turn(self) -> Taken:
        """The turn's writes with their digests (for `Turns.end`), and start recording afresh."""
        taken = Taken(self._writes, self._digests, self._changed)
        self._writes, self._digests, self._changed, self._unchecked = {}, {}, [], {}
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


def holds(path: str, expected: Expected) -> str | None:
    """The digest of the expected form the regular file at `path` holds exactly; None when it holds
    none (any size: read only when its size is one of theirs). Blocking: a worker thread."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:  # gone: what an accepted deletion expects, nothing else does
        return ABSENT if any(d == ABSENT for _, d in expected.forms) else None
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not any(size in (-1, st.st_size) for size, _ in expected.forms):
            return None
        digest = hashlib.sha256()
        for chunk in iter_at_most(fd, st.st_size + 1):
            digest.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    found = digest.hexdigest()
    return found if any(found == d for _, d in expected.forms) else None


def left_as_written(writes: Mapping[str, bool], digests: Mapping[str, str], after: Checkpoint) -> dict[str, bool]:
    """The writes whose file the turn's end state `after` holds as the agent wrote it; a file changed
    since (other content, gone, no longer a file) is someone else's change. A file `after` does not
    cover (too large) cannot be compared and keeps its record."""
    kept: dict[str, bool] = {}
    for path, reviewed in writes.items():
        expected, entry = digests.get(path), after.entries.get(path)
        if expected == ABSENT:  # an accepted deletion is the agent's where the file is gone
            if entry is None:
                kept[path] = reviewed
            continue
        if expected is not None and (entry is None or entry.kind != "file" or entry.digest not in ("", expected)):
            continue
        kept[path] = reviewed
    return kept
