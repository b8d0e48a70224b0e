"""What a write changes beyond its lines is said above the review's diff (issue #36): line endings,
the final newline, the encoding and the BOM (core/write_notes.py), and the headless review prints it."""

from __future__ import annotations

import codecs
import os

import pytest

from companion.core.files import disk_text
from companion.core.files.textfile import decode
from companion.core.write_notes import review_notes
from companion.headless.editor import unified_diff


def _disk(tmp_path: str, data: bytes | None) -> disk_text.DiskText:
    path = os.path.join(str(tmp_path), "f.txt")
    if data is not None:
        with open(path, "wb") as handle:
            handle.write(data)
    return disk_text.read(path)


@pytest.mark.parametrize(
    ("data", "proposal", "notes"),
    [
        (b"a\nb\n", "a\nc\n", []),  # an edit of a line: nothing beyond the diff
        (b"a\r\nb\r\n", "a\nc\n", []),  # an LF proposal of a CRLF file: our write keeps CRLF
        (b"a\nb\n", "a\nb", ["no newline at end of file"]),
        (b"a\r\nb\r\n", "a\r\nb", ["no newline at end of file"]),
        (b"a\nb", "a\nb\n", ["newline added at end of file"]),
        (b"a\nb", "a\nc", []),  # had none, still none: the diff says enough
        (None, "line 1\nline 2", ["no newline at end of file"]),
        (None, "line 1\nline 2\n", []),
        (None, "line 1\r\nline 2\r\n", ["line endings: CRLF"]),
        (b"one\n", "one\r\ntwo\r\n", []),  # the file's own LF is kept for every line
        (b"", "x", ["no newline at end of file"]),
    ],
)
def test_the_notes_say_what_the_write_changes_besides_the_lines(
    tmp_path: str, data: bytes | None, proposal: str, notes: list[str]
) -> None:
    assert review_notes(_disk(tmp_path, data), proposal) == notes


def test_a_changed_encoding_bom_and_endings_are_each_named() -> None:
    from companion.core.write_notes import write_notes

    old, old_format = decode(codecs.BOM_UTF8 + b"a\r\nb\r\n")
    _, new_format = decode(b"a\nb\n")
    assert write_notes(old, old_format, "a\nb\n", new_format) == ["line endings: CRLF → LF", "BOM removed"]
    latin, latin_format = decode("caf\xe9\n".encode("latin-1"))
    assert write_notes(latin, latin_format, "café\n", new_format) == [f"encoding: {latin_format.encoding} → utf-8"]
    assert write_notes("a\nb\r\n", None, "a\r\nb\r\n", new_format) == ["line endings: mixed (CRLF, LF) → CRLF"]


def test_the_headless_review_shows_a_missing_final_newline_above_the_diff(tmp_path: str) -> None:
    """The issue: the headless review never showed that the final newline goes."""
    disk = _disk(tmp_path, b"line 1\nline 2\n")
    shown = unified_diff(os.path.join(str(tmp_path), "f.txt"), "line 1\nline 2", disk)
    assert shown.startswith("no newline at end of file\n")


def test_a_change_of_the_final_newline_alone_is_not_shown_as_no_change(tmp_path: str) -> None:
    disk = _disk(tmp_path, b"same\n")
    shown = unified_diff(os.path.join(str(tmp_path), "f.txt"), "same", disk)
    assert "no newline at end of file" in shown and "(no changes" not in shown
