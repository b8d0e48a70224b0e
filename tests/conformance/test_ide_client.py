"""The real Gemini CLI IDE client (@google/gemini-cli-core 0.61.0) against the companion core.

The editor's decisions are made by the test through the Editor port (never by markers in the
proposed content, which a model writes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from companion.context import Position
from companion.discovery import discovery_dir
from companion.runtime import Runtime, WindowHandle
from tests.conformance.harness import IdeClientProcess, active_file, client_env
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.conformance


@pytest.fixture
def workspace(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "project")
    os.makedirs(path)
    return os.path.realpath(path)


@pytest.fixture
def editor() -> ScriptedEditor:
    return ScriptedEditor()


@pytest.fixture
def window(tmp_path: str, workspace: str, editor: ScriptedEditor) -> Iterator[WindowHandle]:
    runtime = Runtime(discovery_directory=discovery_dir({"TMPDIR": str(tmp_path)}))
    handle = runtime.open_window(editor, [workspace])
    handle.ready.result(30)
    yield handle
    runtime.stop()


@pytest.fixture
def cli(tmp_path: str, workspace: str, window: WindowHandle) -> Iterator[IdeClientProcess]:
    with IdeClientProcess(workspace, client_env(str(tmp_path), window.runtime.editor_pid)) as client:
        connected = client.wait_connected()
        assert connected["event"] == "connected", connected
        yield client


def test_the_cli_finds_sublime_by_the_discovery_file_and_sees_both_tools(cli: IdeClientProcess) -> None:
    connected = cli.wait_connected()
    assert connected["ide"] == {"name": "sublimetext", "displayName": "Sublime Text"}
    assert {"openDiff", "closeDiff"} <= set(connected["tools"])


def test_the_cli_receives_the_editor_context(cli: IdeClientProcess, window: WindowHandle, workspace: str) -> None:
    main, other = os.path.join(workspace, "main.py"), os.path.join(workspace, "util.py")
    window.context.activate(other)
    window.context.activate(main, Position(12, 7), "selected words")
    context = cli.wait_context(lambda c: (active_file(c) or {}).get("path") == main)
    files = context["workspaceState"]["openFiles"]
    assert [f["path"] for f in files] == [main, other]
    assert files[0]["cursor"] == {"line": 12, "character": 7}
    assert files[0]["selectedText"] == "selected words"
    assert "cursor" not in files[1] and not files[1].get("isActive")


def test_accepted_in_the_editor_with_the_users_edit(
    cli: IdeClientProcess, editor: ScriptedEditor, workspace: str
) -> None:
    target = os.path.join(workspace, "accept.txt")
    with open(target, "w") as f:
        f.write("before\n")
    diff = cli.open_diff(target, "proposed\n")
    review = editor.wait_shown(1)
    assert review.proposal == "proposed\n"
    review.accept("proposed\nand edited in Sublime\n")
    outcome = cli.wait_diff(diff)
    assert (outcome["status"], outcome["content"]) == ("accepted", "proposed\nand edited in Sublime\n")
    with open(target) as f:
        assert f.read() == "before\n"  # the CLI writes the file, not the companion


def test_rejected_in_the_editor(cli: IdeClientProcess, editor: ScriptedEditor, workspace: str) -> None:
    diff = cli.open_diff(os.path.join(workspace, "reject.txt"), "nope\n")
    editor.wait_shown(1).reject()
    assert cli.wait_diff(diff)["status"] == "rejected"


def test_accepted_in_the_terminal_gets_the_edited_text_back_through_close_diff(
    cli: IdeClientProcess, editor: ScriptedEditor, workspace: str
) -> None:
    target = os.path.join(workspace, "cli-side.txt")
    diff = cli.open_diff(target, "from the model\n")
    review = editor.wait_shown(1)
    editor.edits[review.id] = "from the model\nplus the user's fix\n"  # typed into the proposal view
    cli.resolve_from_cli(target, "accepted")
    outcome = cli.wait_diff(diff)
    assert (outcome["status"], outcome["content"]) == ("accepted", "from the model\nplus the user's fix\n")
    assert editor.closed == [review]
    # A late click in the editor must not reach the CLI as a second answer.
    review.reject()
    cli.open_diff(os.path.join(workspace, "next.txt"), "x")
    editor.wait_shown(2)
    assert [e for e in cli.events if e["event"] == "diff"] == [outcome]


def test_rejected_in_the_terminal(cli: IdeClientProcess, editor: ScriptedEditor, workspace: str) -> None:
    target = os.path.join(workspace, "cli-reject.txt")
    diff = cli.open_diff(target, "x\n")
    review = editor.wait_shown(1)
    cli.resolve_from_cli(target, "rejected")
    assert cli.wait_diff(diff)["status"] == "rejected"
    assert editor.closed == [review]
