"""Attribution of a turn's writes (core/history/turn_writes.py): a file the agent wrote through us counts as
its write only while the turn leaves it with the content it had just after that write. The real
agents' version of this is tests/acp/test_real_turn_changes.py (Gemini runs a command that rewrites
a file it wrote through a review)."""

from __future__ import annotations

import os
import sys

import pytest

from companion.core.history.checkpoints import MAX_FILE_BYTES, Limits
from companion.core.history.turn_writes import ABSENT, DIGEST_LIMIT_BYTES, TurnWrites, written_digest
from companion.core.history.turns import Turns


@pytest.fixture
def ws(tmp_path: object) -> str:
    """The workspace (its real path); its turns' cache folder is beside it."""
    path = os.path.realpath(os.path.join(str(tmp_path), "workspace"))
    os.makedirs(path)
    return path


def begun(ws: str, limits: Limits | None = None) -> tuple[Turns, TurnWrites]:
    """A turn begun in `ws` (its checkpoint taken) and an empty record of the agent's writes."""
    turns = Turns(os.path.join(os.path.dirname(ws), "cache"), [ws], limits)
    turns.begin()
    return turns, TurnWrites()


def put(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def attribution(turns: Turns, writes: TurnWrites) -> dict[str, tuple[str, bool]]:
    found = turns.end("Agent", *writes.take_turn())
    listed = {c.path: (c.by, c.reviewed) for c in turns.change_set()}  # what `changes --json` reads
    assert listed == {c.path: (c.by, c.reviewed) for c in found}
    return listed


def test_a_file_changed_after_the_agents_write_is_outside_and_not_reviewed(ws: str) -> None:
    names = ("rewritten", "touched", "deleted", "unchecked", "kept")
    paths = {n: os.path.join(ws, n) for n in names}
    for path in paths.values():
        put(path, b"before\n")
    turns, writes = begun(ws)
    for name, path in paths.items():
        put(path, f"{name} by the agent\n".encode())
        writes.record(path, reviewed=True, digest=None if name == "unchecked" else written_digest(path))
    put(paths["rewritten"], b"rewritten by a formatter\n")
    put(paths["unchecked"], b"rewritten, but no digest was taken\n")
    os.utime(paths["touched"], ns=(1, 1))  # the stat changes, the content does not
    os.remove(paths["deleted"])
    assert attribution(turns, writes) == {
        paths["rewritten"]: ("outside", False),
        paths["touched"]: ("Agent", True),
        paths["deleted"]: ("outside", False),
        paths["unchecked"]: ("Agent", True),  # recorded without a digest: as before this check
        paths["kept"]: ("Agent", True),
    }


def test_a_later_write_by_the_agent_is_the_one_compared_and_one_unreviewed_write_makes_it_unreviewed(
    ws: str,
) -> None:
    path = os.path.join(ws, "twice")
    turns, writes = begun(ws)
    put(path, b"first\n")
    writes.record(path, reviewed=True, digest=written_digest(path))
    put(path, b"second, without asking\n")
    writes.record(path, reviewed=False, digest=written_digest(path))
    assert attribution(turns, writes) == {path: ("Agent", False)}


def test_a_file_the_checkpoint_does_not_cover_keeps_its_record(ws: str) -> None:
    path = os.path.join(ws, "large")
    turns, writes = begun(ws, Limits(max_file_bytes=10))
    put(path, b"small\n")
    writes.record(path, reviewed=True, digest=written_digest(path))
    put(path, b"now larger than the limit\n")
    assert attribution(turns, writes) == {path: ("Agent", True)}  # cannot be compared: not judged


def test_take_clears_the_digests_too(ws: str) -> None:
    path = os.path.join(ws, "file")
    put(path, b"x")
    writes = TurnWrites()
    writes.record(path, reviewed=True, digest=written_digest(path))
    assert writes.take() == {path: True}
    assert writes.take_turn() == ({}, {}, [])


def test_written_digest_reads_only_a_regular_file_within_the_limit(ws: str) -> None:
    assert DIGEST_LIMIT_BYTES == MAX_FILE_BYTES  # a file a checkpoint covers by default is compared
    path, link = os.path.join(ws, "file"), os.path.join(ws, "link")
    put(path, b"12345")
    assert written_digest(path) == "5994471abb01112afcc18159f6cc74b4f511b99806da59b3caf5a9c173cacfc5"
    assert written_digest(path, limit=4) is None
    assert written_digest(os.path.join(ws, "missing")) is None
    assert written_digest(ws) is None  # a folder
    if sys.platform != "win32":
        os.symlink(path, link)
        assert written_digest(link) is None  # never through a link
        fifo = os.path.join(ws, "fifo")
        os.mkfifo(fifo)
        assert written_digest(fifo) is None  # opened without waiting for a writer, then refused


def test_the_turns_end_finds_each_reviewed_file_whose_bytes_are_not_the_accepted_ones(ws: str) -> None:
    """Issue 36: compared with the bytes written or accepted, never with a reading taken after the
    write; a file of another size is not read; an unreviewed write is not a review to check."""
    names = ("kept", "renamed_over", "appended", "gone", "never_written", "same_bytes_again", "unreviewed")
    paths = {n: os.path.join(ws, n) for n in names}
    writes = TurnWrites()
    for name, path in paths.items():
        if name != "never_written":
            put(path, b"accepted\r\n")
        writes.wrote(path, reviewed=name != "unreviewed", data=b"accepted\r\n")
    put(paths["renamed_over"] + ".tmp", b"accepted\n\n")  # the same size, other bytes
    os.replace(paths["renamed_over"] + ".tmp", paths["renamed_over"])
    with open(paths["appended"], "ab") as handle:
        handle.write(b"x" * (DIGEST_LIMIT_BYTES + 1))
    os.remove(paths["gone"])
    put(paths["same_bytes_again"], b"accepted\r\n")
    put(paths["unreviewed"], b"other\n")
    changed = writes.changed_after_review()
    assert changed == sorted(paths[n] for n in ("renamed_over", "appended", "gone", "never_written"))
    assert writes.changed_after_review() == []  # each turn's writes are checked once
    taken = writes.take_turn()
    assert taken.changed == changed
    assert {p: r for p, r in taken.writes.items() if r} == {paths["kept"]: True, paths["same_bytes_again"]: True}


def test_an_accepted_deletion_is_reviewed_where_the_file_is_gone_and_only_there(ws: str) -> None:
    """Review finding F5: a deletion expects the file gone (ABSENT), never "empty": gone is the
    agent's reviewed change, an emptied or rewritten file is changed after the review."""
    names = ("deleted", "emptied", "rewritten")
    paths = {n: os.path.join(ws, n) for n in names}
    for path in paths.values():
        put(path, b"before\n")
    turns, writes = begun(ws)
    os.remove(paths["deleted"])
    put(paths["emptied"], b"")
    put(paths["rewritten"], b"other\n")
    for path in paths.values():
        writes.record(path, reviewed=True, digest=ABSENT, size=-2)
    assert writes.changed_after_review() == sorted([paths["emptied"], paths["rewritten"]])
    listed = attribution(turns, writes)
    assert listed[paths["deleted"]] == ("Agent", True)
    assert listed[paths["emptied"]][1] is False and listed[paths["rewritten"]][1] is False
