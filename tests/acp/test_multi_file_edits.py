"""One permission, several files (issue #36): every file of the edit is reviewed, one after the
other, and the edit is allowed only when the user accepted all of them; a rename is reviewed as a
rename. With `edit_agent.py` (the SDK's agent side, a real subprocess): several diff blocks,
locations without a change, Codex's apply_patch and a unified diff in `rawInput`, a partial
answer, a rename and a rename with an edit; in-process and headless (`chat`, scripted y/n)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.session import ChatSession
from companion.core.reviews import Review
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.test_any_agent_edits import AGENT, bytes_of, file_with, records, script

pytestmark = pytest.mark.anyio

ALLOWED = {"permission": {"outcome": "selected", "optionId": "allow"}}
REJECTED = {"permission": {"outcome": "selected", "optionId": "reject"}}


async def run(
    workspace: str, tmp_path: Any, steps: list[dict[str, Any]], reject: tuple[str, ...] = ()
) -> tuple[RecordingView, AsyncEditor, str]:
    """One turn in-process: the user rejects the reviews of the files named in `reject` (by base
    name), accepts every other one as it shows."""
    view, editor = RecordingView(), AsyncEditor()
    editor.decide = lambda r: r.reject() if os.path.basename(r.file_path) in reject else r.accept(r.proposal)
    env = {**os.environ, "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl")}
    spec = AgentSpec("Edits", (sys.executable, AGENT, script(tmp_path, steps)))
    session = ChatSession(spec, [workspace], editor, view, env=env)
    try:
        await session.start()
        stop = await session.prompt("edit")
    finally:
        await session.close()
    return view, editor, stop


def chat(
    workspace: str, tmp_path: Any, steps: list[dict[str, Any]], *args: str, answers: str = "", env: Any = None
) -> Any:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "edit", *args]
    argv += ["--", sys.executable, AGENT, script(tmp_path, steps)]
    record = os.path.join(str(tmp_path), "record.jsonl")
    env = {**os.environ, "PYTHONPATH": ROOT, "EDIT_AGENT_RECORD": record, **(env or {})}
    return subprocess.run(argv, cwd=ROOT, env=env, input=answers, capture_output=True, text=True, timeout=CEILING)


def reviews(editor: AsyncEditor) -> list[Review]:
    return [review for review, _, _ in editor.shown]


def three_files(workspace: str) -> list[str]:
    return [file_with(workspace, f"{name} one\n".encode(), f"{name}.txt") for name in ("a", "b", "c")]


def whole_file_diffs(paths: list[str]) -> list[dict[str, Any]]:
    blocks = []
    for path in paths:
        old = bytes_of(path).decode()
        blocks.append({"type": "diff", "path": path, "oldText": old, "newText": old.replace("one", "two")})
    return blocks


def writes_itself(paths: list[str]) -> list[dict[str, Any]]:
    return [{"disk": p, "content": bytes_of(p).decode().replace("one", "two")} for p in paths]


async def test_an_edit_of_three_files_in_diff_blocks_is_reviewed_file_by_file(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    ask = {"toolCallId": "t1", "kind": "edit", "title": "Patch", "content": whole_file_diffs(paths)}
    steps = [{"ask": ask}] + [{"write": p, "content": bytes_of(p).decode().replace("one", "two")} for p in paths]
    _view, editor, stop = await run(workspace, tmp_path, steps)
    assert stop == "end_turn"
    assert [(r.file_path, r.proposal, r.part) for r in reviews(editor)] == [
        (p, f"{os.path.basename(p)[0]} two\n", (n, 3)) for n, p in enumerate(paths, 1)
    ]
    assert records(tmp_path) == [ALLOWED, {"write": "ok"}, {"write": "ok"}, {"write": "ok"}]
    assert [bytes_of(p) for p in paths] == [b"a two\n", b"b two\n", b"c two\n"]


async def test_one_rejected_file_rejects_the_whole_edit_and_says_which(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    ask = {"toolCallId": "t1", "kind": "edit", "content": whole_file_diffs(paths)}
    view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, *writes_itself(paths)], reject=("b.txt",))
    assert [r.file_path for r in reviews(editor)] == paths[:2]  # c is not asked about: the edit is already refused
    assert records(tmp_path) == [REJECTED]
    assert [bytes_of(p) for p in paths] == [b"a one\n", b"b one\n", b"c one\n"]
    assert (
        f"You rejected {paths[1]}, so Edits's whole edit of 3 files was rejected (accepted: {paths[0]}; "
        f"not reviewed: {paths[2]})."
    ) in view.notices


def test_headless_partial_answer_is_the_reject_option_with_one_line(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    ask = {"toolCallId": "t1", "kind": "edit", "content": whole_file_diffs(paths)}
    result = chat(workspace, tmp_path, [{"ask": ask}, *writes_itself(paths)], answers="y\nn\n")
    assert result.returncode == 0, result.stderr
    assert records(tmp_path) == [REJECTED]
    assert [bytes_of(p) for p in paths] == [b"a one\n", b"b one\n", b"c one\n"]
    assert "file 1 of 3 of one edit: all must be accepted" in result.stdout
    assert "file 2 of 3 of one edit: all must be accepted" in result.stdout
    assert f"You rejected {paths[1]}, so python's whole edit of 3 files was rejected" in result.stdout


async def test_locations_naming_a_file_without_its_change_refuse_the_whole_edit(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    locations = [{"path": p} for p in paths]
    ask = {"toolCallId": "t1", "kind": "edit", "content": whole_file_diffs(paths[:1]), "locations": locations}
    view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, *writes_itself(paths)])
    assert reviews(editor) == []  # never a review of a subset
    assert records(tmp_path) == [REJECTED]
    assert [bytes_of(p) for p in paths] == [b"a one\n", b"b one\n", b"c one\n"]
    assert any(f"it names {paths[1]}, {paths[2]} but carries no change for it" in n for n in view.notices), view.notices


CODEX_PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-a one
+a two
*** Add File: d.txt
+d new
*** Delete File: c.txt
*** Update File: b.txt
*** Move to: e.txt
@@
-b one
+e two
*** End Patch
"""


async def test_a_codex_patch_in_raw_input_is_reviewed_file_by_file_with_its_rename(
    workspace: str, tmp_path: Any
) -> None:
    paths = three_files(workspace)
    ask = {"toolCallId": "t1", "kind": "edit", "title": "apply_patch", "rawInput": {"input": CODEX_PATCH}}
    steps = [{"ask": ask}, {"disk": paths[0], "content": "a two\n"}, {"remove": paths[2]}]
    _view, editor, _ = await run(workspace, tmp_path, steps)
    shown = [(r.file_path, r.proposal, r.renamed_from) for r in reviews(editor)]
    assert shown == [
        (paths[0], "a two\n", None),
        (os.path.join(workspace, "d.txt"), "d new\n", None),
        (paths[2], "", None),
        (os.path.join(workspace, "e.txt"), "e two\n", paths[1]),
    ]
    assert records(tmp_path) == [ALLOWED]


async def test_a_unified_diff_of_two_files_in_raw_input_is_two_reviews(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    patch = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a one\n+a two\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b one\n+b 2\n"
    )
    ask = {"toolCallId": "t1", "kind": "edit", "rawInput": {"patch": patch}}
    _view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}], reject=("b.txt",))
    assert [(r.file_path, r.proposal) for r in reviews(editor)] == [(paths[0], "a two\n"), (paths[1], "b 2\n")]
    assert records(tmp_path) == [REJECTED]


async def test_a_rename_is_reviewed_as_a_rename(workspace: str, tmp_path: Any) -> None:
    old = file_with(workspace, b"kept\n", "old.txt")
    new = os.path.join(workspace, "new.txt")
    ask = {"toolCallId": "t1", "kind": "move", "locations": [{"path": old}, {"path": new}]}
    _view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, {"rename": [old, new]}])
    assert [(r.file_path, r.proposal, r.renamed_from) for r in reviews(editor)] == [(new, "kept\n", old)]
    assert records(tmp_path) == [ALLOWED] and bytes_of(new) == b"kept\n"


def test_a_rename_with_an_edit_is_reviewed_headless_as_rename_and_diff(workspace: str, tmp_path: Any) -> None:
    old = file_with(workspace, b"one\ntwo\n", "old.txt")
    new = os.path.join(workspace, "new.txt")
    diff = {"type": "diff", "path": new, "oldText": "one\ntwo\n", "newText": "one\n2\n"}
    ask = {"toolCallId": "t1", "kind": "move", "content": [diff], "locations": [{"path": old}, {"path": new}]}
    steps = [{"ask": ask}, {"rename": [old, new]}, {"disk": new, "content": "one\n2\n"}]
    result = chat(workspace, tmp_path, steps, answers="y\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the text it replaces is not in the file" not in result.stdout
    assert f"(rename {old} → {new})" in result.stdout
    assert "-two\n+2\n" in result.stdout  # the content change, against the old file's text
    assert records(tmp_path) == [ALLOWED] and bytes_of(new) == b"one\n2\n"


def test_a_turn_cancelled_right_after_a_rejection_is_not_an_error(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\n")
    diff = {"type": "diff", "path": path, "oldText": "one\n", "newText": "two\n"}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}}, {"stop_if_rejected": "cancelled"}]
    result = chat(workspace, tmp_path, steps, "--diff-policy", "reject")
    assert result.returncode == 0, result.stderr
    assert "instead of end_turn" not in result.stderr
    assert "python stopped its turn after you rejected its edit." in result.stdout
    assert bytes_of(path) == b"one\n"


async def test_a_snippet_edit_naming_a_second_location_is_refused_whole(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    raw = {"file_path": paths[0], "old_string": "one", "new_string": "two"}
    ask = {"toolCallId": "t1", "kind": "edit", "rawInput": raw, "locations": [{"path": p} for p in paths[:2]]}
    view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, *writes_itself(paths[:2])])
    assert reviews(editor) == [] and records(tmp_path) == [REJECTED]
    assert [bytes_of(p) for p in paths[:2]] == [b"a one\n", b"b one\n"]
    assert any(f"it names {paths[1]} but carries no change for it" in n for n in view.notices), view.notices


async def test_a_location_naming_the_edited_file_another_way_is_the_same_file(workspace: str, tmp_path: Any) -> None:
    paths = three_files(workspace)
    ask = {"toolCallId": "t1", "kind": "edit", "content": whole_file_diffs(paths[:1]), "locations": [{"path": "a.txt"}]}
    _view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, *writes_itself(paths[:1])])
    assert [(r.file_path, r.part) for r in reviews(editor)] == [(paths[0], None)]
    assert records(tmp_path) == [ALLOWED] and bytes_of(paths[0]) == b"a two\n"


async def test_a_new_file_whose_text_is_a_diff_is_one_file_not_a_patch(workspace: str, tmp_path: Any) -> None:
    path = os.path.join(workspace, "fix.patch")
    text = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a one\n+a two\n--- a/b.txt\n+++ b/b.txt\n"
    raw = {"file_path": path, "content": text}
    diff = {"type": "diff", "path": path, "oldText": None, "newText": text}
    ask = {"toolCallId": "t1", "kind": "edit", "rawInput": raw, "content": [diff]}
    _view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, {"write": path, "content": text}])
    assert [(r.file_path, r.proposal, r.part) for r in reviews(editor)] == [(path, text, None)]
    assert records(tmp_path) == [ALLOWED, {"write": "ok"}] and bytes_of(path) == text.encode()


def test_an_accepted_rename_is_the_agents_reviewed_change_in_the_change_set(workspace: str, tmp_path: Any) -> None:
    old = file_with(workspace, b"one\ntwo\n", "old.txt")
    new = os.path.join(workspace, "new.txt")
    diff = {"type": "diff", "path": new, "oldText": "one\ntwo\n", "newText": "one\n2\n"}
    call = {"toolCallId": "t1", "kind": "move", "content": [diff], "locations": [{"path": old}, {"path": new}]}
    done = {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}
    steps = [
        {"update": {"sessionUpdate": "tool_call", "title": "Move", **call}},
        {"ask": {"toolCallId": "t1"}},
        {"rename": [old, new]},
        {"disk": new, "content": "one\n2\n"},
        {"update": done},
    ]
    env_cache = {"GEMINI_COMPANION_CACHE": os.path.join(str(tmp_path), "cache")}
    result = chat(workspace, tmp_path, steps, "--diff-policy", "accept", "--checkpoints", env=env_cache)
    assert result.returncode == 0, result.stdout + result.stderr
    agent = os.path.basename(sys.executable)
    assert f"  deleted  {old}  +0 -2  by {agent}  reviewed" in result.stdout, result.stdout
    assert f"  added  {new}  +2 -0  by {agent}  reviewed" in result.stdout, result.stdout


async def test_one_file_whose_text_cannot_be_built_refuses_the_whole_edit_before_any_review(
    workspace: str, tmp_path: Any
) -> None:
    paths = three_files(workspace)
    blocks = whole_file_diffs(paths)
    blocks[1] = {"type": "diff", "path": paths[1], "oldText": "not in b\n", "newText": "b two\n"}
    ask = {"toolCallId": "t1", "kind": "edit", "content": blocks}
    view, editor, _ = await run(workspace, tmp_path, [{"ask": ask}, *writes_itself(paths)])
    assert reviews(editor) == [] and records(tmp_path) == [REJECTED]
    assert [bytes_of(p) for p in paths] == [b"a one\n", b"b one\n", b"c one\n"]
    assert (
        f"Rejected Edits's edit of 3 files ({', '.join(paths)}): {paths[1]}: the text it replaces is not in the "
        "file as it is now; nothing of it was reviewed."
    ) in view.notices
