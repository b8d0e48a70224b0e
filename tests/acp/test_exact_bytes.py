"""Write exactly what the agent sent (issue #36 item 4): a new file keeps its final newline, an
overwrite gains none, with `edit_agent.py` (the SDK's agent side, a real subprocess)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.acp.test_any_agent_edits import bytes_of, file_with, run, shown

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("old_text", [None, ""])
async def test_a_new_file_ending_in_a_newline_is_written_with_it(
    workspace: str, tmp_path: Any, old_text: str | None
) -> None:
    path = os.path.join(workspace, "made.txt")
    diff = {"type": "diff", "path": path, "oldText": old_text, "newText": "line 1\nline 2\n"}
    steps = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}},
        {"write": path, "content": "line 1\nline 2\n"},
    ]
    _, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["line 1\nline 2\n"]
    assert bytes_of(path) == b"line 1\nline 2\n"


async def test_an_overwrite_without_a_final_newline_gains_none(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    diff = {"type": "diff", "path": path, "oldText": "one\ntwo\n", "newText": "one\nthree"}
    steps = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}},
        {"write": path, "content": "one\nthree"},
    ]
    _, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["one\nthree"]
    assert bytes_of(path) == b"one\nthree"


async def test_a_crlf_overwrite_without_a_final_newline_gains_none(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\r\ntwo\r\n")
    diff = {"type": "diff", "path": path, "oldText": "one\r\ntwo\r\n", "newText": "one\r\nthree"}
    steps = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}},
        {"write": path, "content": "one\r\nthree"},
    ]
    _, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["one\r\nthree"]
    assert bytes_of(path) == b"one\r\nthree"


@pytest.mark.parametrize(
    ("old", "diff_text", "sent"),
    [
        (None, "line 1\nline 2", "line 1\nline 2\n"),  # a diff without the final newline the write has
        (b"one\ntwo\n", "one\nthree", "one\nthree\n"),
        (b"one\ntwo", "one\nthree\n", "one\nthree"),  # an overwrite gains no newline the agent did not send
    ],
)
async def test_the_write_keeps_the_final_newline_the_agent_sent_when_its_lines_are_the_reviewed_ones(
    workspace: str, tmp_path: Any, old: bytes | None, diff_text: str, sent: str
) -> None:
    path = os.path.join(workspace, "f.txt") if old is None else file_with(workspace, old, "f.txt")
    old_text = None if old is None else old.decode()
    diff = {"type": "diff", "path": path, "oldText": old_text, "newText": diff_text}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}}, {"write": path, "content": sent}]
    await run(workspace, tmp_path, steps)
    assert bytes_of(path) == sent.encode()
