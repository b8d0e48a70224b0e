"""Line endings on the disk write paths (issue #27): `textfile.encode`, `write_atomically` (what the
MCP `write_file` and ACP `fs/write_text_file` write with) and `write_file` itself, over random texts
with LF, CRLF, CR, mixed and no final break. The reviewed text reaches the disk with the file's own
breaks: never a doubled `\\r\\r\\n`, untouched lines byte for byte."""

from __future__ import annotations

import asyncio
import os
import tempfile

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from companion.core.files.paths import PathPolicy
from companion.core.files.textfile import decode, encode
from companion.core.files.writing import existing_format, write_atomically
from companion.core.reviews import Review
from companion.runtime import WindowHandle
from tests.line_endings import Case, assert_written_as_reviewed, cases, split
from tests.mcp_tools.test_tools import editor, read_bytes, tool_settings, window, write_and_decide, write_bytes
from tests.scripted_editor import ScriptedEditor

__all__ = ["editor", "tool_settings", "window"]  # fixtures this module uses from test_tools

ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "cp1252")


def test_the_issues_crlf_example_keeps_one_crlf_per_line() -> None:
    text, fmt = decode(b"line one\r\nline two\r\nline three\r\n")
    assert encode(text.replace("line two", "line 2"), fmt, "f", text) == b"line one\r\nline 2\r\nline three\r\n"


@pytest.mark.parametrize(
    ("original", "reviewed"),
    [("\n\na\n\r", "\n\n\n\n"), ("\r\ra\n\n", "\n\n\n\n"), ("a\rb\r\n\r", "a\n\n\n\n"), ("a\rb\rc\r", "a\n\n\nc\n")],
)
def test_a_kept_lone_cr_never_joins_the_next_empty_lines_lf_into_one_break(original: str, reviewed: str) -> None:
    """Found by the property below: a line keeping its lone CR before an empty line ending in LF
    read back as one CRLF, one line fewer than the review showed."""
    text, fmt = decode(original.encode())
    written, _ = decode(encode(reviewed, fmt, "f", text))
    assert_written_as_reviewed(text, reviewed, written, fmt.newline)


@given(case=cases(), encoding=st.sampled_from(ENCODINGS))
@settings(max_examples=400, deadline=None)
def test_encode_writes_the_reviewed_lines_with_the_files_own_breaks(case: Case, encoding: str) -> None:
    data = case.original.encode(encoding)
    original, fmt = decode(data)
    written, _ = decode(encode(case.reviewed, fmt, "f", original))
    assert_written_as_reviewed(original, case.reviewed, written, fmt.newline)


@given(case=cases())
@settings(max_examples=200, deadline=None)
def test_a_line_changed_in_place_keeps_every_lines_own_break(case: Case) -> None:
    lines = split(case.original)
    # Only where the changed line can be told from the others: among equal lines ("\n\r\n" is two
    # empty ones) a diff cannot say which one changed, and either answer keeps the lines and the
    # file's breaks (the other properties check that).
    assume(lines and len({line for line, _ in lines}) == len(lines))
    changed = "".join(("CHANGED" if n == 0 else line) + brk for n, (line, brk) in enumerate(lines))
    original, fmt = decode(case.original.encode("utf-8"))
    assert encode(changed, fmt, "f", original) == changed.encode("utf-8")


@given(case=cases())
@settings(max_examples=150, deadline=None)
def test_write_atomically_puts_the_reviewed_text_on_disk(case: Case) -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = os.path.realpath(folder)
        path = os.path.join(folder, "f.txt")
        write_bytes(path, case.original.encode("utf-8"))
        policy = PathPolicy([folder])
        target = policy.resolve(path, kind="file", must_exist=False)
        write_atomically(policy, target, case.reviewed, existing_format(target, "f.txt"), "f.txt")
        newline = decode(case.original.encode())[1].newline
        assert_written_as_reviewed(case.original, case.reviewed, decode(read_bytes(path))[0], newline)


@given(case=cases())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_write_file_puts_the_reviewed_text_on_disk(window: WindowHandle, editor: ScriptedEditor, case: Case) -> None:
    """The MCP tool end to end: the model sends `reviewed` (any breaks), the user accepts the review."""
    path = os.path.join(window.folders[0], "f.txt")
    write_bytes(path, case.original.encode("utf-8"))
    editor.shown.clear()

    def accept(review: Review) -> None:
        review.accept(review.proposal)

    result = asyncio.run(write_and_decide(window, editor, {"path": path, "content": case.reviewed}, accept))
    assert not result.is_error, result
    newline = decode(case.original.encode())[1].newline
    assert_written_as_reviewed(case.original, case.reviewed, decode(read_bytes(path))[0], newline)


@pytest.mark.parametrize("content", ["line 1\r\nline 2\r\n", "line 1\r\nline 2", "a\rb\r", "mixed\r\nlf\nend\r\n"])
def test_write_file_of_a_new_file_writes_the_breaks_the_agent_sent(
    window: WindowHandle, editor: ScriptedEditor, content: str
) -> None:
    """Issue #36: a new file sent with CRLF was written with LF (the review holds "\\n")."""
    path = os.path.join(window.folders[0], "new", "made.txt")
    result = asyncio.run(
        write_and_decide(window, editor, {"path": path, "content": content}, lambda r: r.accept(r.proposal))
    )
    assert not result.is_error
    assert read_bytes(path) == content.encode()


def test_write_file_of_a_new_file_edited_in_the_review_keeps_the_agents_breaks_on_its_lines(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    path = os.path.join(window.folders[0], "made.txt")
    arguments = {"path": path, "content": "one\r\ntwo\r\n"}
    asyncio.run(write_and_decide(window, editor, arguments, lambda r: r.accept("one\nmine\ntwo\n")))
    assert read_bytes(path) == b"one\r\nmine\r\ntwo\r\n"
