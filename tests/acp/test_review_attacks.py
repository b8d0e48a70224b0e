"""Attacks on the multi-file review and the "reviewed == bytes on disk" check (issue 36, review
findings F1, F2, F3, F5, F7), each with `edit_agent.py` (the SDK's agent side, a real subprocess):
a rename onto a file that exists, a rawInput naming another file than its diff block, one file
changed twice in one patch, an accepted deletion carried out exactly, and an agent rewriting with
LF a CRLF file the editor saved from its open buffer."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.session import ChatSession
from tests.acp.conftest import AsyncEditor, RecordingView
from tests.acp.test_any_agent_edits import AGENT, bytes_of, file_with, records, script
from tests.acp.test_multi_file_edits import REJECTED, chat, reviews, run, three_files

pytestmark = pytest.mark.anyio

DONE = {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}}


def changed_after_review(notices: list[str]) -> list[str]:
    return [n for n in notices if "changed after your review" in n]


# F1: a rename onto an existing file destroys its content: the review shows that content replaced.


def test_a_rename_onto_an_existing_file_is_reviewed_as_replacing_it_headless(workspace: str, tmp_path: Any) -> None:
    old = file_with(workspace, b"scratch\n", "old.txt")
    keep = file_with(workspace, b"the user's only copy of important notes\n", "notes.txt")
    ask = {"toolCallId": "t1", "kind": "move", "locations": [{"path": old}, {"path": keep}]}
    result = chat(workspace, tmp_path, [{"ask": ask}, {"rename": [old, keep]}, DONE], answers="n\n")
    assert "-the user's only copy of important notes" in result.stdout  # the loss is in the diff
    assert "+scratch" in result.stdout
    assert f"rename {old} → {keep}, replacing {keep}" in result.stdout
    assert "(no changes" not in result.stdout
    assert bytes_of(keep) == b"the user's only copy of important notes\n"  # rejected: nothing renamed
    assert records(tmp_path) == [REJECTED]


async def test_a_codex_move_onto_an_existing_file_shows_the_file_it_replaces(workspace: str, tmp_path: Any) -> None:
    file_with(workspace, b"b one\n", "b.txt")
    target = file_with(workspace, b"precious\n", "e.txt")
    patch = "*** Begin Patch\n*** Update File: b.txt\n*** Move to: e.txt\n@@\n-b one\n+e two\n*** End Patch\n"
    ask = {"toolCallId": "t1", "kind": "edit", "title": "apply_patch", "rawInput": {"input": patch}}
    _view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}], reject=("e.txt",))
    [review] = reviews(editor)
    assert review.file_path == target and review.replaces
    assert review.disk is not None and review.disk.text == "precious\n"  # the left side: what is lost
    assert review.proposal == "e two\n"


# F2: a call whose rawInput names a file its diff blocks do not cover is refused whole.


async def test_a_raw_input_naming_another_file_than_its_diff_block_is_refused(workspace: str, tmp_path: Any) -> None:
    a, b, _ = three_files(workspace)
    raw = {"file_path": a, "old_string": "a one", "new_string": "a two"}
    diff = {"type": "diff", "path": b, "oldText": "b one\n", "newText": "b EVIL\n"}
    ask = {"toolCallId": "t1", "kind": "edit", "rawInput": raw, "content": [diff]}
    steps = [{"ask": ask}, {"disk": a, "content": "a two\n"}, {"disk": b, "content": "b EVIL\n"}, DONE]
    view, editor, _ = await run(workspace, tmp_path, steps)
    assert reviews(editor) == []  # never one review standing for two files
    assert records(tmp_path) == [REJECTED]
    assert (bytes_of(a), bytes_of(b)) == (b"a one\n", b"b one\n")
    assert any(f"it names {a} but carries no change for it" in n for n in view.notices), view.notices


# F3: one file changed twice in one call: refused whole, never two half-reviews.


async def test_one_file_changed_twice_in_one_patch_is_refused_naming_it(workspace: str, tmp_path: Any) -> None:
    a = file_with(workspace, b"x one\ny one\n", "a.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-x one\n+x two\n"
        "*** Update File: ./a.txt\n@@\n-y one\n+y two\n*** End Patch\n"
    )
    ask = {"toolCallId": "t1", "kind": "edit", "title": "apply_patch", "rawInput": {"input": patch}}
    steps = [{"ask": ask}, {"disk": a, "content": "x two\ny two\n"}, DONE]
    view, editor, _ = await run(workspace, tmp_path, steps)
    assert reviews(editor) == []
    assert records(tmp_path) == [REJECTED]
    assert bytes_of(a) == b"x one\ny one\n"
    assert [n for n in view.notices if "it changes ./a.txt twice (also as a.txt)" in n], view.notices


async def test_diff_blocks_naming_one_file_two_ways_are_refused(workspace: str, tmp_path: Any) -> None:
    a = file_with(workspace, b"x one\ny one\n", "a.txt")
    blocks = [
        {"type": "diff", "path": a, "oldText": "x one\ny one\n", "newText": "x two\ny one\n"},
        {
            "type": "diff",
            "path": os.path.join(workspace, ".", "a.txt"),
            "oldText": "x one\ny one\n",
            "newText": "x one\ny two\n",
        },
    ]
    ask = {"toolCallId": "t1", "kind": "edit", "content": blocks}
    view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, {"disk": a, "content": "x two\ny two\n"}])
    assert reviews(editor) == []
    assert records(tmp_path) == [REJECTED]
    assert bytes_of(a) == b"x one\ny one\n"
    assert [n for n in view.notices if "twice" in n], view.notices


# F5: an accepted deletion is reviewed as a deletion, and carried out exactly it stays reviewed.


async def test_an_accepted_deletion_carried_out_exactly_stays_reviewed(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a one\n+a two\n*** Delete File: c.txt\n*** End Patch\n"
    ask = {"toolCallId": "t1", "kind": "edit", "title": "apply_patch", "rawInput": {"input": patch}}
    steps = [{"ask": ask}, {"disk": paths[0], "content": "a two\n"}, {"remove": paths[2]}, DONE]
    view, editor, _ = await run(workspace, tmp_path, steps)
    assert [(r.file_path, r.delete) for r in reviews(editor)] == [(paths[0], False), (paths[2], True)]
    assert not os.path.exists(paths[2])
    assert changed_after_review(view.notices) == []


async def test_an_accepted_deletion_left_as_an_empty_file_is_changed_after_review(
    workspace: str, tmp_path: Any
) -> None:
    paths = three_files(workspace)
    patch = "*** Begin Patch\n*** Delete File: c.txt\n*** Update File: a.txt\n@@\n-a one\n+a two\n*** End Patch\n"
    ask = {"toolCallId": "t1", "kind": "edit", "title": "apply_patch", "rawInput": {"input": patch}}
    steps = [{"ask": ask}, {"disk": paths[0], "content": "a two\n"}, {"disk": paths[2], "content": ""}, DONE]
    view, _editor, _ = await run(workspace, tmp_path, steps)
    assert bytes_of(paths[2]) == b""
    assert [n for n in changed_after_review(view.notices) if paths[2] in n], view.notices


def test_a_deletion_is_asked_as_a_deletion_headless(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a one\n+a two\n*** Delete File: c.txt\n*** End Patch\n"
    ask = {"toolCallId": "t1", "kind": "edit", "title": "apply_patch", "rawInput": {"input": patch}}
    steps = [{"ask": ask}, {"disk": paths[0], "content": "a two\n"}, {"remove": paths[2]}, DONE]
    result = chat(workspace, tmp_path, steps, answers="y\ny\n")
    assert f"Delete {paths[2]} (file 2 of 2 of one edit" in result.stdout, result.stdout
    assert result.returncode == 0, result.stderr
    assert "changed after your review" not in result.stderr


# F7: the editor's save of its open buffer stores one line ending: only that form is the reviewed one.


class SavingEditor(AsyncEditor):
    """Sublime's save of an open view whose line-ending setting is Windows: the text saved with
    CRLF, and that break reported."""

    async def write_through_buffer(self, path: str, text: str) -> bool | str:
        if path not in self.buffers:
            return False
        with open(path, "wb") as handle:
            handle.write(text.replace("\r\n", "\n").replace("\n", "\r\n").encode())
        self.written[path] = text
        return "\r\n"


async def test_a_crlf_file_saved_through_its_buffer_then_rewritten_with_lf_is_changed_after_review(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"one\r\ntwo\r\n", "a.txt")
    view, editor = RecordingView(), SavingEditor()
    editor.buffers[path] = "one\ntwo\n"
    editor.decide = lambda r: r.accept(r.proposal)
    ask = {"toolCallId": "t1", "kind": "edit", "content": [{"diff_of_read": ["two", "TWO"], "path": path}]}
    write = {"write": path, "content": {"read_with": ["two", "TWO"]}}
    steps = [{"read": path}, {"ask": ask}, write, {"own": path, "bytes": "one\nTWO\n"}]
    env = {**os.environ, "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl")}
    session = ChatSession(
        AgentSpec("Edits", (sys.executable, AGENT, script(tmp_path, steps))), [workspace], editor, view, env=env
    )
    try:
        await session.start()
        await session.prompt("edit")
    finally:
        await session.close()
    assert path in editor.written  # our write went through the open buffer
    assert bytes_of(path) == b"one\nTWO\n"
    assert [n for n in changed_after_review(view.notices) if path in n], view.notices


@pytest.mark.parametrize(
    ("source", "replaced"),
    [(b"kept\r\nline\r\n", b"other\n"), (b"kept\nline\n", b"other\r\nx\r\n"), ("\ufeffkept\n".encode(), b"x\n")],
    ids=["crlf-over-lf", "lf-over-crlf", "bom-over-plain"],
)
async def test_an_accepted_rename_onto_an_existing_file_carried_out_stays_reviewed(
    workspace: str, tmp_path: Any, source: bytes, replaced: bytes
) -> None:
    """The rename moves the source's bytes: what must land is the source as stored, not the text
    encoded as the file it replaces was."""
    old = file_with(workspace, source, "old.txt")
    new = file_with(workspace, replaced, "new.txt")
    ask = {"toolCallId": "t1", "kind": "move", "locations": [{"path": old}, {"path": new}]}
    view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, {"rename": [old, new]}, DONE])
    [review] = reviews(editor)
    assert review.replaces and review.disk is not None and review.disk.text == replaced.decode()
    assert bytes_of(new) == source
    assert changed_after_review(view.notices) == []
