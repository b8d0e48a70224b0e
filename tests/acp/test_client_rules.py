"""The client's rules without an agent process: what an edit proposes as a full text, what the
agent may read and write, what reaches the agent's environment, and edits nobody reviewed."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from acp import RequestError, tool_diff_content
from acp.schema import ToolCallProgress

from companion.acp.agents.agents import PRESETS, agent_environment, custom_agent
from companion.acp.review.edits import NotRebuildable, proposed_text
from companion.acp.review.files import AgentFiles, FsRefused
from companion.acp.session import ChatSession
from companion.acp.view import Choice
from companion.core.files.paths import PathPolicy
from companion.headless.chat import TerminalView
from tests.acp.conftest import ROOT, AsyncEditor, RecordingView

pytestmark = pytest.mark.anyio

BEFORE = "alpha\nbeta\nbeta\ngamma\n"


def claude_edit(old: str, new: str, replace_all: bool = False) -> dict[str, object]:
    # What claude-agent-acp sends for an Edit: the snippet as the diff, the arguments in rawInput.
    raw = {"file_path": "/w/f.txt", "old_string": old, "new_string": new, "replace_all": replace_all}
    return {
        "toolCallId": "t",
        "kind": "edit",
        "rawInput": raw,
        "content": [{"type": "diff", "path": "/w/f.txt", "oldText": old, "newText": new}],
    }


def test_claudes_edit_is_rebuilt_into_the_full_text() -> None:
    assert proposed_text(claude_edit("gamma", "GAMMA"), BEFORE) == "alpha\nbeta\nbeta\nGAMMA\n"
    assert proposed_text(claude_edit("beta", "B", replace_all=True), BEFORE) == "alpha\nB\nB\ngamma\n"


@pytest.mark.parametrize(("old", "why"), [("beta", "occurs 2 times"), ("delta", "is not in the file")])
def test_an_edit_that_does_not_fit_the_file_is_not_guessed(old: str, why: str) -> None:
    with pytest.raises(NotRebuildable, match=why):
        proposed_text(claude_edit(old, "x"), BEFORE)


def test_claudes_write_with_a_null_old_text_proposes_the_whole_new_text() -> None:
    call = {
        "kind": "edit",
        "rawInput": {"file_path": "/w/f.txt", "content": "new\n"},
        "content": [{"type": "diff", "path": "/w/f.txt", "oldText": None, "newText": "new\n"}],
    }
    assert proposed_text(call, BEFORE) == "new\n"


def test_the_agents_environment_has_no_ide_companion_variables() -> None:
    env = agent_environment(
        {"PATH": "/bin", "GEMINI_CLI_IDE_SERVER_PORT": "1", "GEMINI_CLI_IDE_AUTH_TOKEN": "t", "KEEP": "1"}
    )
    assert env == {"PATH": "/bin", "KEEP": "1"}


def test_claudes_program_by_path_keeps_the_reviewing_preset() -> None:
    spec = custom_agent(["/opt/x/node_modules/.bin/claude-agent-acp", "--flag"])
    assert spec.command == ("/opt/x/node_modules/.bin/claude-agent-acp", "--flag")
    assert spec.review_mode == "default" and spec.session_meta == PRESETS["claude"].session_meta


@pytest.fixture
def files(workspace: str) -> tuple[AgentFiles, AsyncEditor]:
    editor = AsyncEditor()
    return AgentFiles(PathPolicy([workspace]), editor), editor


async def test_reading_honours_line_and_limit_and_prefers_the_unsaved_buffer(
    files: tuple[AgentFiles, AsyncEditor], workspace: str
) -> None:
    agent_files, editor = files
    path = os.path.join(workspace, "f.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(BEFORE)
    assert await agent_files.read(path, 2, 2) == "beta\nbeta\n"
    editor.buffers[path] = "unsaved\ntext\n"
    assert await agent_files.read(path, None, None) == "unsaved\ntext\n"


async def test_a_missing_file_inside_reads_as_empty(files: tuple[AgentFiles, AsyncEditor], workspace: str) -> None:
    assert await files[0].read(os.path.join(workspace, "not-yet.txt"), None, None) == ""


async def test_reading_outside_the_workspace_or_through_a_symlink_out_is_refused(
    files: tuple[AgentFiles, AsyncEditor], workspace: str, tmp_path: str
) -> None:
    secret = os.path.join(str(tmp_path), "secret.txt")
    with open(secret, "w", encoding="utf-8") as handle:
        handle.write("secret\n")
    with pytest.raises(FsRefused, match="outside the window's folders"):
        await files[0].read(secret, None, None)
    link = os.path.join(workspace, "link.txt")
    os.symlink(secret, link)
    with pytest.raises(FsRefused, match="symbolic link"):
        await files[0].read(link, None, None)


async def test_a_write_no_review_accepted_is_refused_and_nothing_is_written(workspace: str) -> None:
    view = RecordingView()
    session = ChatSession(custom_agent(["agent"]), [workspace], AsyncEditor(), view)
    path = os.path.join(workspace, "f.txt")
    with pytest.raises(RequestError, match="no review accepted it"):
        await session.write_text_file("s", path, "unreviewed\n")
    assert not os.path.exists(path)
    assert view.notices == [f"Refused the write of {path}: no review accepted it. Every edit goes through a review."]


async def test_an_edit_without_a_permission_request_is_reported_as_applied_without_review(workspace: str) -> None:
    view = RecordingView()
    session = ChatSession(custom_agent(["agent"]), [workspace], AsyncEditor(), view)
    path = os.path.join(workspace, "f.txt")
    update = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id="t1",
        kind="edit",
        status="completed",
        content=[tool_diff_content(path, "new\n", "old\n")],
    )
    await session.session_update("s", update)
    assert view.notices == [f"agent changed {path} without asking: applied without review."]


def test_the_sdk_is_not_imported_until_a_chat_starts() -> None:
    # The window servers' start-up must not grow: importing the companion, its CLI (which offers
    # `chat`) and the server loads no `acp` module; the chat's session module does.
    code = (
        "import sys, companion.cli, companion.runtime, companion.gemini_ide.server, companion.headless.chat;"
        "before = sorted(m for m in sys.modules if m == 'acp' or m.startswith('acp.'));"
        "import companion.acp.session;"
        "print(before, 'acp' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[] True", result.stderr


@pytest.mark.parametrize(("policy", "chosen"), [("accept", "proceed_once"), ("reject", "cancel")])
async def test_the_headless_policy_answers_other_permissions_with_the_one_time_option(policy: str, chosen: str) -> None:
    # Gemini CLI's own options (reference acp.md §2): never "allow for this session" unasked.
    choices = [
        Choice("proceed_always", "Allow for this session", "allow_always"),
        Choice("proceed_once", "Allow", "allow_once"),
        Choice("cancel", "Reject", "reject_once"),
    ]
    assert await TerminalView(policy, io.StringIO()).choose("Run echo hi", choices) == chosen
