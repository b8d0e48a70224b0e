"""Random texts with every mix of line breaks, the edits a review makes to them, and the invariant
every write path keeps (issue #27): the text on disk is exactly the reviewed text, each line break
written in the file's own convention, never doubled (`\\r\\r\\n`), and a text the review did not
change comes back byte for byte.

Used by the property tests of each write path (textfile, write_file, fs/write_text_file, the
Sublime review and buffer write-through)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

BREAKS = ("\n", "\r\n", "\r")
_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)")
# Line contents: letters, spaces and tabs, non-ASCII that every encoding we write can hold.
_CONTENT = st.text(alphabet=st.sampled_from("ab xyz\té€"), max_size=6)


@dataclass(frozen=True)
class Case:
    """A file's text (`original`), a reviewed text (`reviewed`) and how the agent spelled its breaks."""

    original: str
    reviewed: str

    def __repr__(self) -> str:
        return f"Case(original={self.original!r}, reviewed={self.reviewed!r})"


@st.composite
def texts(draw: st.DrawFn, min_lines: int = 0) -> str:
    """A text whose lines end in LF, CRLF or CR (all one kind, or mixed), the last maybe with none."""
    lines = draw(st.lists(_CONTENT, min_size=min_lines, max_size=8))
    kind = draw(st.sampled_from(("lf", "crlf", "cr", "mixed")))
    one = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}.get(kind)
    breaks = [one or draw(st.sampled_from(BREAKS)) for _ in lines]
    if lines and draw(st.booleans()):
        breaks[-1] = ""  # no line break at the end
    return "".join(line + brk for line, brk in zip(lines, breaks, strict=True))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A file and a reviewed version of it: some lines changed, added or removed (or none), its
    breaks spelled as the editor holds them ("\\n"), as the agent read them (the file's own), or
    at random."""
    original = draw(texts())
    lines = split(original)
    edited = list(lines)
    for _ in range(draw(st.integers(0, 3))):
        what = draw(st.sampled_from(("change", "add", "remove")))
        at = draw(st.integers(0, len(edited)))
        if what == "add" or not edited:
            edited.insert(at, (draw(_CONTENT), "\n"))
        elif what == "change":
            at = min(at, len(edited) - 1)
            edited[at] = (draw(_CONTENT), edited[at][1])
        else:
            del edited[min(at, len(edited) - 1)]
    if edited and all(brk for _, brk in edited) and draw(st.booleans()):
        edited[-1] = (edited[-1][0], "")
    spelling = draw(st.sampled_from(("editor", "file", "random")))
    reviewed = ""
    for line, brk in edited:
        if brk and spelling == "editor":
            brk = "\n"
        elif brk and spelling == "random":
            brk = draw(st.sampled_from(BREAKS))
        reviewed += line + brk
    return Case(original, reviewed)


def split(text: str) -> list[tuple[str, str]]:
    """(line, its break) for every line; the break is "" for a last line without one."""
    lines = [(m[1], m[2]) for m in _LINE.finditer(text)]
    tail = text[sum(len(line) + len(brk) for line, brk in lines) :]
    return [*lines, (tail, "")] if tail else lines


def as_lf(text: str) -> str:
    return _BREAK.sub("\n", text)


def assert_written_as_reviewed(original: str, reviewed: str, written: str, newline: str | None) -> None:
    """`written` (the file's text after the write) is `reviewed` with the file's own breaks: the
    same lines, a break where the review has one, each break one the file had or its dominant
    `newline` (None: the file had no break, so none to keep); and when the review changed nothing
    but breaks, the file's text exactly."""
    assert as_lf(written) == as_lf(reviewed), f"the lines on disk differ from the review: {written!r}"
    allowed = {brk for _, brk in split(original)} | {newline, ""}
    if newline is not None:  # a file without a line break has no convention to keep
        assert {brk for _, brk in split(written)} <= allowed, f"a line break the file never had: {written!r}"
    if as_lf(reviewed) == as_lf(original):
        assert written == original, f"an unchanged text did not come back as it was: {written!r}"


def draw_lines(draw: Any, most: int, alphabet: str, longest: int) -> list[tuple[str, str]]:
    """1 to `most` numbered lines (`l0:…`), each with a random break (LF, CRLF or CR), the last one
    without a break half the time: the file the property tests of the review's write paths start from."""
    count = draw(st.integers(1, most))
    words = draw(st.lists(st.text(alphabet=alphabet, max_size=longest), min_size=count, max_size=count))
    breaks = draw(st.lists(st.sampled_from(list(BREAKS)), min_size=count, max_size=count))
    if draw(st.booleans()):  # no final newline
        breaks[-1] = ""
    return [(f"l{i}:{w}", brk) for i, (w, brk) in enumerate(zip(words, breaks, strict=True))]
