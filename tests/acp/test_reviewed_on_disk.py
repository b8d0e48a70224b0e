"""Issue 36: a file counts as reviewed only if its bytes on disk are the bytes the user accepted, at
the turn's end, whoever wrote it. Scripted agents (`edit_agent.py`, the SDK's agent side, a real
subprocess through `python -m companion chat`) that, after the user accepted an edit, write other
bytes themselves, append to the file we wrote, rename their own bytes over it, or rewrite a CRLF
file with LF: each is named in a `warning:` line ("changed after your review"), listed not reviewed
in the turn's change set, and the chat exits 3. An agent writing exactly the accepted bytes itself
stays reviewed, exit 0. The rename over the file in the instant after our own write (the race of
a digest taken by reading the file again) runs in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.review.files import AgentFiles
from companion.acp.session import ChatSession
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.test_any_agent_edits import AGENT, bytes_of, file_with, script

CRLF = b"line one\r\nline two\r\nline three\r\n"
EXIT_UNREVIEWED = 3


def ask(path: str, old: str, new: str) -> dict[str, Any]:
    """A permission for an edit of the text read: `old` replaced by `new`."""
    return {"ask": {"toolCallId": "t1", "kind": "edit", "content": [{"diff_of_read": [old, new], "path": path}]}}


def completed() -> dict[str, Any]:
    return {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}}


def own(path: str, data: bytes, how: str = "write") -> dict[str, Any]:
    return {"own": path, "bytes": data.decode("latin-1"), "how": how}


def headless(workspace: str, tmp_path: Any, steps: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """One turn of `chat --checkpoints` (the turn's change set printed), every review accepted."""
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "edit"]
    argv += ["--diff-policy", "accept", "--checkpoints", "--", sys.executable, AGENT, script(tmp_path, steps)]
    env = {**os.environ, "PYTHONPATH": ROOT, "GEMINI_COMPANION_CACHE": os.path.join(str(tmp_path), "cache")}
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING)


def assert_changed_after_review(result: Any, path: str) -> None:
    """The warning line names the file, the change set lists it not reviewed, exit 3."""
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert any("changed after your review" in w and path in w for w in warnings), result.stderr
    listed = [line.strip() for line in result.stdout.splitlines() if f"  {path}  " in line]
    assert len(listed) == 1, result.stdout
    assert "  not reviewed  changed after your review" in listed[0], listed[0]
    assert result.returncode == EXIT_UNREVIEWED, result.stderr


def test_an_agent_that_writes_other_bytes_itself_after_the_permission_is_not_reviewed(
    workspace: str, tmp_path: Any
) -> None:
    path = file_with(workspace, b"hello\n")
    steps = [{"read": path}, ask(path, "hello", "hello world"), own(path, b"something else\n"), completed()]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == b"something else\n"
    assert_changed_after_review(result, path)


def test_an_agent_that_rewrites_a_crlf_file_with_lf_is_not_reviewed(workspace: str, tmp_path: Any) -> None:
    """The review showed one line changed, CRLF kept; the agent wrote the whole file with LF."""
    path = file_with(workspace, CRLF)
    lf = b"line one\nline 2\nline three\n"
    steps = [{"read": path}, ask(path, "line two", "line 2"), own(path, lf), completed()]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == lf
    assert_changed_after_review(result, path)


def ask_whole(path: str, old: bytes, new: bytes) -> dict[str, Any]:
    """A permission for a whole-file diff whose texts are exactly `old` and `new` (no CRLF added)."""
    block = {"type": "diff", "path": path, "oldText": old.decode(), "newText": new.decode()}
    return {"ask": {"toolCallId": "t1", "kind": "edit", "content": [block]}}


def test_an_agent_that_writes_its_own_lf_proposal_gets_the_crlf_you_accepted(workspace: str, tmp_path: Any) -> None:
    """Codex's way: the diff's newText has LF lines, the review shows them with the file's CRLF
    (what the user accepts), and the agent writes its own LF text after the permission. The file
    then holds exactly the agent's proposal, so the companion writes the accepted bytes over it."""
    path = file_with(workspace, CRLF)
    lf = b"line one\nline 2\nline three\n"
    steps = [ask_whole(path, CRLF, lf), own(path, lf), completed()]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == b"line one\r\nline 2\r\nline three\r\n", result.stderr
    assert result.returncode == 0, result.stderr
    assert "warning:" not in result.stderr
    assert f"  modified  {path}  +1 -1  by {os.path.basename(sys.executable)}  reviewed" in result.stdout


def test_an_agent_that_writes_anything_but_its_own_proposal_is_never_overwritten(workspace: str, tmp_path: Any) -> None:
    """The same proposal, but the agent writes other bytes (its proposal and one more line): the
    companion keeps them, and says the file changed after the review."""
    path = file_with(workspace, CRLF)
    lf = b"line one\nline 2\nline three\n"
    steps = [ask_whole(path, CRLF, lf), own(path, lf + b"more\n"), completed()]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == lf + b"more\n"
    assert_changed_after_review(result, path)


def test_an_agent_that_writes_exactly_the_accepted_bytes_itself_stays_reviewed(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, CRLF)
    accepted = b"line one\r\nline 2\r\nline three\r\n"
    steps = [{"read": path}, ask(path, "line two", "line 2"), own(path, accepted), completed()]
    result = headless(workspace, tmp_path, steps)
    assert result.returncode == 0, result.stderr
    assert "warning:" not in result.stderr
    assert f"  modified  {path}  +1 -1  by {os.path.basename(sys.executable)}  reviewed" in result.stdout


@pytest.mark.parametrize(
    "appended", [b"one more line\n", b"one more line\n" + b"x" * (17 << 20)], ids=["line", "17MiB"]
)
def test_an_agent_that_appends_after_our_reviewed_write_is_not_reviewed(
    workspace: str, tmp_path: Any, appended: bytes
) -> None:
    """Also past the checkpoints' size limit (16 MiB): the file's size alone tells it differs."""
    path = file_with(workspace, b"hello\n")
    write = {"write": path, "content": {"read_with": ["hello", "hello world"]}}
    steps = [{"read": path}, ask(path, "hello", "hello world"), write, own(path, appended, "append")]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == b"hello world\n" + appended
    assert_changed_after_review(result, path)


def test_an_agent_that_renames_its_bytes_over_our_reviewed_write_is_not_reviewed(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"hello\n")
    write = {"write": path, "content": {"read_with": ["hello", "hello world"]}}
    steps = [{"read": path}, ask(path, "hello", "hello world"), write, own(path, b"the agent's own\n", "rename")]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == b"the agent's own\n"
    assert_changed_after_review(result, path)


@pytest.mark.anyio
async def test_a_rename_over_the_file_right_after_our_write_is_not_taken_for_our_bytes(
    workspace: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the agent's rename lands between our write and anything we do after it (here,
    deterministically, as our write returns). What we record is the bytes we wrote."""
    path = file_with(workspace, b"hello\n")
    write = {"write": path, "content": {"read_with": ["hello", "hello world"]}}
    real_write = AgentFiles.write_accepted

    async def write_then_rename_over(self: AgentFiles, *args: Any, **kwargs: Any) -> Any:
        written = await real_write(self, *args, **kwargs)
        with open(f"{path}.agent-tmp", "wb") as handle:
            handle.write(b"renamed over\n")
        os.replace(f"{path}.agent-tmp", path)
        return written

    monkeypatch.setattr(AgentFiles, "write_accepted", write_then_rename_over)
    view, editor = RecordingView(), AsyncEditor()
    editor.decide = lambda r: r.accept(r.proposal)
    steps = [{"read": path}, ask(path, "hello", "hello world"), write]
    session = ChatSession(
        AgentSpec("Edits", (sys.executable, AGENT, script(tmp_path, steps))), [workspace], editor, view
    )
    try:
        await session.start()
        assert await session.prompt("edit") == "end_turn"
    finally:
        await session.close()
    assert bytes_of(path) == b"renamed over\n"
    assert session.unchecked.changed.named == [path]
    assert session.writes.take() == {path: False}
    assert any("changed after your review" in text for text in view.notices)


@pytest.mark.parametrize("wrote", [b"hello world\n", b"hello, other bytes\n"], ids=["accepted", "other"])
def test_an_agent_that_writes_itself_and_never_reports_the_call_done_is_checked_too(
    workspace: str, tmp_path: Any, wrote: bytes
) -> None:
    """The agent was allowed the edit, wrote the file itself and said nothing more: reviewed when it
    wrote the accepted bytes, changed after your review otherwise."""
    path = file_with(workspace, b"hello\n")
    steps = [{"read": path}, ask(path, "hello", "hello world"), own(path, wrote)]
    result = headless(workspace, tmp_path, steps)
    assert bytes_of(path) == wrote
    if wrote == b"hello world\n":
        assert result.returncode == 0, result.stderr
        assert f"  modified  {path}  +1 -1  by {os.path.basename(sys.executable)}  reviewed" in result.stdout
    else:
        assert_changed_after_review(result, path)
