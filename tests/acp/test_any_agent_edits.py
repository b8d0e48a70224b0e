"""Edits as agents we never tested send them (issue #27), with `edit_agent.py` (the SDK's agent
side, a real subprocess): a permission request naming only the call's id, or the path with the
diff in an earlier update; snippets under camelCase or unknown argument names, decided from the
diff block; a snippet that is not unique; a snippet with a whole-file diff; a file created by an
edit with an empty old_string; a CRLF file read, edited and written with exact bytes; a rejected
edit the agent reports as done. Headless (`python -m companion chat`) and in-process; and the
fs/write_text_file path over random texts and line breaks (hypothesis)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import pytest
from acp import tool_diff_content
from acp.schema import PermissionOption, ToolCallUpdate
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.acp.agents.agents import AgentSpec, custom_agent
from companion.acp.session import ChatSession
from companion.acp.view import ToolCall
from companion.core.files.textfile import decode
from companion.core.reviews import Review
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.line_endings import Case, as_lf, assert_written_as_reviewed, cases

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edit_agent.py")
CRLF = b"line one\r\nline two\r\nline three\r\n"


def script(tmp_path: Any, steps: list[dict[str, Any]]) -> str:
    path = os.path.join(str(tmp_path), "script.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(steps, handle)
    return path


def file_with(workspace: str, data: bytes, name: str = "notes.txt") -> str:
    path = os.path.join(workspace, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def bytes_of(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def records(tmp_path: Any) -> list[dict[str, Any]]:
    path = os.path.join(str(tmp_path), "record.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def chat_cli(
    workspace: str, tmp_path: Any, steps: list[dict[str, Any]], policy: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "edit", "--diff-policy"]
    argv += [policy, "--", sys.executable, AGENT, script(tmp_path, steps)]
    env = {**os.environ, "PYTHONPATH": ROOT, "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl")}
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING)


def edit_call(path: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit", "kind": "edit", **fields}


async def run(
    workspace: str, tmp_path: Any, steps: list[dict[str, Any]], decide: str = "accept"
) -> tuple[RecordingView, AsyncEditor]:
    """One turn in-process: the user accepts (or rejects) every review as it shows."""
    view, editor = RecordingView(), AsyncEditor()
    editor.decide = (lambda r: r.accept(r.proposal)) if decide == "accept" else (lambda r: r.reject())
    env = {**os.environ, "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl")}
    session = ChatSession(
        AgentSpec("Edits", (sys.executable, AGENT, script(tmp_path, steps))), [workspace], editor, view, env=env
    )
    try:
        await session.start()
        assert await session.prompt("edit") == "end_turn"
    finally:
        await session.close()
    return view, editor


def shown(editor: AsyncEditor) -> list[str]:
    return [proposal for _, proposal, _ in editor.shown]


def test_a_crlf_file_read_edited_and_written_keeps_one_crlf_per_line(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, CRLF)
    steps = [
        {"read": path},
        {
            "ask": {
                "toolCallId": "t1",
                "kind": "edit",
                "content": [{"diff_of_read": ["line two", "line 2"], "path": path}],
            }
        },
        {"write": path, "content": {"read_with": ["line two", "line 2"]}},
    ]
    result = chat_cli(workspace, tmp_path, steps, "accept")
    assert result.returncode == 0, result.stderr
    assert bytes_of(path) == b"line one\r\nline 2\r\nline three\r\n"
    assert records(tmp_path)[1:] == [{"permission": {"outcome": "selected", "optionId": "allow"}}, {"write": "ok"}]


def test_a_permission_naming_only_the_calls_id_is_reviewed_from_the_earlier_tool_call(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    steps = [
        {"read": path},
        {"update": edit_call(path, content=[{"diff_of_read": ["two", "2"], "path": path}])},
        {"ask": {"toolCallId": "t1"}},
        {"write": path, "content": {"read_with": ["two", "2"]}},
    ]
    result = chat_cli(workspace, tmp_path, steps, "accept")
    assert result.returncode == 0, result.stderr
    assert "names no file" not in result.stdout
    assert bytes_of(path) == b"one\n2\n"


async def test_a_permission_with_the_path_only_takes_the_diff_from_an_update(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\ntwo\n")
    steps = [
        {"read": path},
        {"update": edit_call(path, status="pending")},
        {
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t1",
                "content": [{"diff_of_read": ["one", "1"], "path": path}],
            }
        },
        {"ask": {"toolCallId": "t1", "rawInput": {"path": path}, "content": []}},
        {"write": path, "content": {"read_with": ["one", "1"]}},
    ]
    view, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["1\ntwo\n"] and view.notices == []
    assert bytes_of(path) == b"1\ntwo\n"


@pytest.mark.parametrize(
    "raw",
    [
        {"filePath": "PATH", "oldString": "beta\n", "newString": "BETA\n"},
        {"target": "PATH", "find": "beta\n", "replacement": "BETA\n"},
    ],
    ids=["camelCase", "unknown-keys"],
)
async def test_a_snippet_edit_is_applied_to_the_file_whatever_its_arguments_are_called(
    workspace: str, tmp_path: Any, raw: dict[str, str]
) -> None:
    path = file_with(workspace, b"alpha\nbeta\ngamma\n")
    raw = {k: path if v == "PATH" else v for k, v in raw.items()}
    diff = {"type": "diff", "path": path, "oldText": "beta\n", "newText": "BETA\n"}
    steps = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "rawInput": raw, "content": [diff]}},
        {"write": path, "content": "BETA\n"},
    ]
    view, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["alpha\nBETA\ngamma\n"]  # the review shows the real change, not "replace all"
    assert bytes_of(path) == b"alpha\nBETA\ngamma\n"  # the reviewed text, never the agent's snippet
    assert view.notices == []


async def test_camelcase_arguments_without_a_diff_and_replace_all(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"a b a\n")
    raw = {"filePath": path, "oldString": "a", "newString": "A", "replaceAll": True}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "rawInput": raw}}, {"write": path, "content": "A"}]
    _, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["A b A\n"]
    assert bytes_of(path) == b"A b A\n"


async def test_a_snippet_that_is_not_unique_is_refused_with_a_notice_and_nothing_changes(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"beta\nbeta\n")
    diff = {"type": "diff", "path": path, "oldText": "beta", "newText": "B"}
    steps = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "rawInput": {"filePath": path}, "content": [diff]}},
        {"write": path, "content": "B", "anyway": True},
    ]
    view, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == []
    assert view.notices[0] == (
        f"Rejected Edits's edit of {path}: the text it replaces occurs 2 times in the file, so the change is ambiguous."
    )
    assert records(tmp_path)[0] == {"permission": {"outcome": "selected", "optionId": "reject"}}
    assert records(tmp_path)[1]["write"] == "refused"
    assert bytes_of(path) == b"beta\nbeta\n"


async def test_unknown_arguments_without_a_diff_are_refused_not_guessed(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"alpha\n")
    raw = {"path": path, "find": "alpha", "replacement": "ALPHA"}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "rawInput": raw}}]
    view, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == []
    assert "it carries neither a diff nor the new text" in view.notices[0]


async def test_a_multiline_snippet_of_a_crlf_file_with_a_whole_file_diff_is_judged_by_the_diff(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, CRLF)
    raw = {"file_path": path, "old_string": "line one\nline two", "new_string": "line 1\nline 2"}
    steps = [
        {"read": path},
        {
            "ask": {
                "toolCallId": "t1",
                "kind": "edit",
                "rawInput": raw,
                "content": [{"diff_of_read": ["line one\r\nline two", "line 1\r\nline 2"], "path": path}],
            }
        },
        {"write": path, "content": "line 1\nline 2\nline three\n"},
    ]
    view, editor = await run(workspace, tmp_path, steps)
    assert view.notices == []
    assert shown(editor) == ["line 1\r\nline 2\r\nline three\r\n"]
    assert bytes_of(path) == b"line 1\r\nline 2\r\nline three\r\n"


async def test_a_multiline_lf_snippet_of_a_crlf_file_alone_keeps_the_files_breaks(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, CRLF)
    diff = {"type": "diff", "path": path, "oldText": "line one\nline two", "newText": "line 1\nline 2"}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "content": [diff]}}, {"write": path, "content": "x"}]
    _, editor = await run(workspace, tmp_path, steps)
    assert shown(editor) == ["line 1\r\nline 2\r\nline three\r\n"]
    assert bytes_of(path) == b"line 1\r\nline 2\r\nline three\r\n"


async def test_a_file_created_by_an_edit_with_an_empty_old_string(workspace: str, tmp_path: Any) -> None:
    path = os.path.join(workspace, "new", "made.txt")
    raw = {"file_path": path, "old_string": "", "new_string": "made\n"}
    diff = {"type": "diff", "path": path, "oldText": "", "newText": "made\n"}
    steps = [
        {"ask": {"toolCallId": "t1", "kind": "edit", "rawInput": raw, "content": [diff]}},
        {"write": path, "content": "made\n"},
    ]
    view, editor = await run(workspace, tmp_path, steps)
    assert view.notices == [] and shown(editor) == ["made\n"]
    assert bytes_of(path) == b"made\n"


async def test_a_rejected_edit_the_agent_reports_as_done_is_marked_rejected(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\n")
    diff = {"type": "diff", "path": path, "oldText": "one\n", "newText": "ONE\n"}
    steps = [
        {"update": edit_call(path, status="pending", content=[diff])},
        {"ask": {"toolCallId": "t1"}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}},
    ]
    view, _ = await run(workspace, tmp_path, steps, decide="reject")
    cards: list[ToolCall] = view.called("tool_call")
    assert cards[-1].status == "completed" and cards[-1].decision == "rejected"
    assert any(c.decision == "rejected" and c.status == "pending" for c in cards)  # marked as soon as decided
    assert view.notices == [
        f"Edits reports its edit of {path} as done, but you rejected it: nothing was written through the editor; "
        "if the file changed anyway, the agent wrote it itself."
    ]
    assert bytes_of(path) == b"one\n"


async def test_an_accepted_edit_is_marked_accepted_and_a_review_decided_before_any_update_gets_a_card(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"one\n")
    diff = {"type": "diff", "path": path, "oldText": "one\n", "newText": "ONE\n"}
    steps = [
        {"ask": {"toolCallId": "t9", "title": "Write notes", "kind": "edit", "content": [diff]}},
        {"write": path, "content": "ONE\n"},
    ]
    view, _ = await run(workspace, tmp_path, steps)
    (card,) = view.called("tool_call")
    assert (card.tool_call_id, card.title, card.decision) == ("t9", "Write notes", "accepted")


async def _review_and_write(folder: str, path: str, case: Case, edited: bool) -> str:
    """What an agent that read the raw file asks and writes; the user accepts (maybe with a line
    added). Returns the text the user accepted."""
    editor, view = AsyncEditor(), RecordingView()
    accepted: list[str] = []

    def decide(review: Review) -> None:
        accepted.append(("# mine\n" if edited else "") + review.proposal)
        review.accept(accepted[0])

    editor.decide = decide
    session = ChatSession(custom_agent(["agent"]), [folder], editor, view)
    options = [
        PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
        PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    ]
    call = ToolCallUpdate(
        tool_call_id="t", kind="edit", content=[tool_diff_content(path, case.reviewed, case.original)]
    )
    answer = await session.request_permission(options, "s", call)
    assert answer.outcome.model_dump().get("option_id") == "allow", view.notices
    await session.write_text_file("s", path, case.reviewed)
    return accepted[0]


@given(case=cases(), edited=st.booleans())
@settings(max_examples=60, deadline=None)
def test_fs_write_text_file_puts_the_reviewed_text_on_disk(case: Case, edited: bool) -> None:
    """The ACP path in-process: the diff the agent built from the raw text it read (any breaks), the
    review, the user's decision (with an edit of their own or not), fs/write_text_file."""
    with tempfile.TemporaryDirectory() as folder:
        folder = os.path.realpath(folder)
        path = file_with(folder, case.original.encode("utf-8"), "f.txt")
        accepted = asyncio.run(_review_and_write(folder, path, case, edited))
        newline = decode(case.original.encode("utf-8"))[1].newline
        assert_written_as_reviewed(case.original, accepted, decode(bytes_of(path))[0], newline)
        assert as_lf(accepted) == ("# mine\n" if edited else "") + as_lf(case.reviewed)


def test_headless_a_rejected_edit_reported_as_done_says_what_the_user_decided(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"one\n")
    diff = {"type": "diff", "path": path, "oldText": "one\n", "newText": "ONE\n"}
    steps = [
        {"update": edit_call(path, status="pending", content=[diff])},
        {"ask": {"toolCallId": "t1"}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}},
    ]
    result = chat_cli(workspace, tmp_path, steps, "reject")
    assert f"reports its edit of {path} as done, but you rejected it" in result.stdout
    assert bytes_of(path) == b"one\n"


def test_headless_a_snippet_that_is_not_unique_is_refused_with_a_notice(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"beta\nbeta\n")
    diff = {"type": "diff", "path": path, "oldText": "beta", "newText": "B"}
    steps = [{"ask": {"toolCallId": "t1", "kind": "edit", "rawInput": {"filePath": path}, "content": [diff]}}]
    result = chat_cli(workspace, tmp_path, steps, "accept")
    assert "the text it replaces occurs 2 times in the file, so the change is ambiguous" in result.stdout
    assert records(tmp_path) == [{"permission": {"outcome": "selected", "optionId": "reject"}}]
    assert bytes_of(path) == b"beta\nbeta\n"
