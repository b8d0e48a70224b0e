"""The change set calls a file text or binary, and counts its lines, as the review shows it
(`textfile.decode`, the reader of `disk_text.read` and of the change-set review, and
`textfile.lines`): one definition."""

from __future__ import annotations

import codecs
import os
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from companion.core.files import disk_text
from companion.core.files.textfile import lines
from companion.core.history.turns import Turns

FF = "\x0c"  # a form feed: Python's str.splitlines breaks a line there, the review (and Sublime) do not

CASES = {
    # name: (before, after, expected (added, removed) or "binary")
    "utf-16 with a BOM is text": (
        codecs.BOM_UTF16_LE + "one\ntwo\n".encode("utf-16-le"),
        codecs.BOM_UTF16_LE + "one\nTWO\n".encode("utf-16-le"),
        (1, 1),
    ),
    "a changed windows-1252 letter is a changed line": (b"caf\xe9\nbar\n", b"caf\xe8\nbar\n", (1, 1)),
    "a form feed does not end a line": (f"a{FF}b\nc\n".encode(), f"A{FF}B\nc\n".encode(), (1, 1)),
    "CR-only line endings split lines": (b"a\rb\rc\r", b"a\rB\rc\rd\r", (2, 1)),
    "control characters without a NUL are binary": (b"\x01\x02\x03\x04" * 10, b"\x01\x02\x03\x05" * 10, "binary"),
    "a NUL past 8000 bytes is binary": (b"a" * 8100 + b"\0", b"a" * 8100 + b"\0b", "binary"),
    "a BOM added changes no line": (
        b"one\ntwo\n",
        codecs.BOM_UTF8 + b"one\ntwo\n",
        (0, 0),  # the review (both sides with "\n" breaks) shows no line changed either
    ),
    "CRLF to LF changes no line": (
        b"one\r\ntwo\r\n",
        b"one\ntwo\n",
        (0, 0),  # the review (both sides with "\n" breaks) shows no line changed either
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_change_set_reads_a_file_as_the_review_shows_it(tmp_path: object, name: str) -> None:
    before, after, expected = CASES[name]
    ws = os.path.realpath(os.path.join(str(tmp_path), "ws"))
    os.makedirs(ws)
    path = os.path.join(ws, "f.txt")
    with open(path, "wb") as handle:
        handle.write(before)
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.begin()
    with open(path, "wb") as handle:
        handle.write(after)
    (change,) = turns.end("Scripted", {})

    review_binary = disk_text.read(path).not_shown == "it is a binary file"
    assert change.binary == review_binary == (expected == "binary")
    counts = None if expected == "binary" else expected
    assert (change.added, change.removed) == (counts or (None, None))
    assert change.note == ""  # a note would make the file not reviewable as text
    assert ("binary" in change.line()) == (expected == "binary")


@given(st.lists(st.sampled_from(["a", "\r", "\n", "\r\n", FF, "\x85", "\u2028"])).map("".join))
def test_lines_ends_a_line_at_each_cr_lf_or_crlf_and_nowhere_else(text: str) -> None:
    pieces = re.split(r"\r\n|\r|\n", text)
    expected = pieces[:-1] if pieces[-1] == "" else pieces  # a break at the very end starts no line
    assert lines(text) == expected
