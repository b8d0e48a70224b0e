"""The real Gemini CLI IDE client (@google/gemini-cli-core, pinned and oldest) against the headless companion.

The client runs as `gemini` does in a Terminus terminal of Sublime: TERM_PROGRAM=Terminus-Sublime
(so only the discovery file's `ideInfo` can identify Sublime), cwd inside the window's folder, and
the discovery file found through Node's os.tmpdir() — a private TMPDIR shared by both sides.
Review outcomes are decided through the Editor port by the scripted user, never by markers in the
proposed content (a model writes that content).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from companion.core.context import Position
from tests.conformance.harness import (
    IDE_INFO,
    DecidingEditor,
    HeadlessCompanion,
    IdeClientProcess,
    Release,
    accept,
    active_file,
    isolate_tmpdir,
    open_paths,
    reject,
)

pytestmark = pytest.mark.conformance


@pytest.fixture
def tmpdir_for_both(tmp_path: str, monkeypatch: pytest.MonkeyPatch) -> str:
    path = os.path.join(str(tmp_path), "tmp")
    isolate_tmpdir(monkeypatch, path)
    return path


@pytest.fixture
def workspace(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "project")
    os.makedirs(os.path.join(path, "src"))
    return os.path.realpath(path)


@pytest.fixture
def editor() -> DecidingEditor:
    return DecidingEditor()


@pytest.fixture
def companion(tmpdir_for_both: str, workspace: str, editor: DecidingEditor) -> Iterator[HeadlessCompanion]:
    # tmpdir=None: the companion finds its discovery folder from TMPDIR, as it does for real.
    with HeadlessCompanion([workspace], editor) as running:
        assert running.handle.discovery_path.startswith(os.path.join(tmpdir_for_both, "gemini", "ide"))
        yield running


@pytest.fixture
def cli(companion: HeadlessCompanion, workspace: str, release: Release) -> Iterator[IdeClientProcess]:
    with IdeClientProcess(workspace, companion.client_env(), release=release) as client:
        assert client.wait_connected()["coreVersion"] == release.version
        yield client


def test_the_cli_finds_sublime_by_its_discovery_file_and_can_diff(
    cli: IdeClientProcess, companion: HeadlessCompanion
) -> None:
    connected = cli.wait_connected()
    assert connected["ide"] == IDE_INFO  # from the file: TERM_PROGRAM=Terminus-Sublime names no IDE
    assert connected["url"] == f"http://127.0.0.1:{companion.handle.port}/mcp"
    assert {"openDiff", "closeDiff"} <= set(connected["tools"])
    assert connected["diffing"] is True


def test_the_cli_connects_from_a_subfolder_without_being_told_the_editor_pid(
    companion: HeadlessCompanion, workspace: str, release: Release
) -> None:
    # No GEMINI_CLI_IDE_PID: the client walks its own process tree, which here does not lead to the
    # PID in the file name; the file is still chosen because the workspace contains the cwd.
    env = companion.client_env(with_pid=False)
    with IdeClientProcess(os.path.join(workspace, "src"), env, release=release) as client:
        connected = client.wait_connected()
        assert connected["idePid"] != companion.editor_pid
        assert connected["url"] == companion.handle.url


def test_with_two_windows_on_the_folder_the_port_from_the_terminal_env_wins(
    companion: HeadlessCompanion, workspace: str, release: Release
) -> None:
    # A second window of the same editor (same PID) showing the same folder: Terminus can inject
    # GEMINI_CLI_IDE_SERVER_PORT, which the client uses to pick between the two files.
    other = companion.runtime.open_window(DecidingEditor(), [workspace])
    other.ready.result(30)
    for window in (other, companion.handle):
        env = companion.client_env({"GEMINI_CLI_IDE_SERVER_PORT": str(window.port)})
        with IdeClientProcess(workspace, env, release=release) as client:
            assert client.wait_connected()["url"] == window.url
    # From a terminal outside Sublime (no port in its env) it takes one of them: the doctor says so.
    with IdeClientProcess(workspace, companion.client_env(), release=release) as client:
        assert client.wait_connected()["url"] in {other.url, companion.handle.url}


def test_with_a_restored_terminals_stale_variables_the_cli_still_finds_the_live_window(
    companion: HeadlessCompanion, workspace: str, release: Release
) -> None:
    # A terminal restored after a restart carries the earlier run's editor PID and port (Terminus
    # saves its env). The client picks the live discovery file by its workspace, and its token.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    env = companion.client_env({"GEMINI_CLI_IDE_PID": str(dead.pid), "GEMINI_CLI_IDE_SERVER_PORT": str(dead_port)})
    env.pop("GEMINI_CLI_IDE_AUTH_TOKEN", None)
    with IdeClientProcess(workspace, env, release=release) as client:
        assert client.wait_connected()["url"] == companion.handle.url


def test_the_cli_gets_the_context_open_before_it_started(
    tmpdir_for_both: str, workspace: str, release: Release
) -> None:
    with HeadlessCompanion([workspace]) as companion:
        main = os.path.join(workspace, "main.py")
        companion.context.activate(main, Position(3, 5))
        with IdeClientProcess(workspace, companion.client_env(), release=release) as client:
            context = client.wait_context(lambda c: open_paths(c) == [main])
            assert active_file(context) == {
                "path": main,
                "timestamp": context["workspaceState"]["openFiles"][0]["timestamp"],
                "isActive": True,
                "cursor": {"line": 3, "character": 5},
            }


def test_the_cli_receives_the_normalised_context(
    cli: IdeClientProcess, companion: HeadlessCompanion, workspace: str
) -> None:
    main, util = os.path.join(workspace, "main.py"), os.path.join(workspace, "src", "util.py")
    companion.context.activate(util, Position(1, 1))
    companion.context.activate(main, Position(12, 7), "selected words")
    context = cli.wait_context(lambda c: (active_file(c) or {}).get("selectedText") == "selected words")
    files = context["workspaceState"]["openFiles"]
    assert [f["path"] for f in files] == [main, util]
    assert files[0]["cursor"] == {"line": 12, "character": 7}
    assert files[0]["isActive"] is True
    # Only the active file carries cursor and selection; the previous one lost its cursor.
    assert set(files[1]) <= {"path", "timestamp", "isActive"} and not files[1].get("isActive")
    assert "isTrusted" not in context["workspaceState"]  # would override the CLI's own folder trust

    companion.context.select(main, Position(13, 1), None)
    context = cli.wait_context(lambda c: (active_file(c) or {}).get("cursor") == {"line": 13, "character": 1})
    assert "selectedText" not in active_file(context)  # type: ignore[operator]

    companion.context.close(main)
    cli.wait_context(lambda c: open_paths(c) == [util])


def test_the_cli_keeps_ten_files_and_the_whole_selection_the_companion_sends(
    cli: IdeClientProcess, companion: HeadlessCompanion, workspace: str
) -> None:
    paths = [os.path.join(workspace, f"f{i:02}.txt") for i in range(12)]
    for path in paths:
        companion.context.activate(path)
    selection = "x" * 20000
    companion.context.select(paths[-1], Position(1, 1), selection)
    context = cli.wait_context(lambda c: bool((active_file(c) or {}).get("selectedText")))
    assert open_paths(context) == list(reversed(paths))[:10]
    # The companion clips at 16384 itself, so the client has nothing to truncate (no marker).
    assert active_file(context)["selectedText"] == "x" * 16384  # type: ignore[index]


def test_accepted_in_the_editor_with_an_edit_gives_the_cli_the_edited_text(
    cli: IdeClientProcess, editor: DecidingEditor, workspace: str
) -> None:
    target = os.path.join(workspace, "accept.txt")
    with open(target, "w") as f:
        f.write("before\n")
    editor.decide("accept.txt", accept(lambda proposal: proposal + "and a line typed in Sublime\n"))
    outcome = cli.wait_diff(cli.open_diff(target, "proposed\n"))
    assert (outcome["status"], outcome["content"]) == ("accepted", "proposed\nand a line typed in Sublime\n")
    review, shown, _revision = editor.shown[0]
    assert (review.file_path, shown) == (target, "proposed\n")
    with open(target) as f:
        assert f.read() == "before\n"  # the CLI writes the file, never the companion
    assert [n["params"] for n in cli.notifications("ide/diffAccepted")] == [
        {"filePath": target, "content": "proposed\nand a line typed in Sublime\n"}
    ]


def test_rejected_in_the_editor(cli: IdeClientProcess, editor: DecidingEditor, workspace: str) -> None:
    editor.rule = lambda review: reject() if review.file_path.endswith(".lock") else None
    target = os.path.join(workspace, "deps.lock")
    outcome = cli.wait_diff(cli.open_diff(target, "nope\n"))
    assert (outcome["status"], outcome["content"]) == ("rejected", None)
    assert [n["params"] for n in cli.notifications("ide/diffRejected")] == [{"filePath": target}]
    assert not os.path.exists(target)


def test_the_outcome_echoes_the_path_exactly_as_the_cli_sent_it(
    cli: IdeClientProcess, editor: DecidingEditor, workspace: str
) -> None:
    # The client matches outcomes to pending diffs by the exact filePath string.
    editor.rule = lambda review: accept()
    target = os.path.join(workspace, "src", "..", "Ünïcode name with spaces.txt")
    outcome = cli.wait_diff(cli.open_diff(target, "é\r\n"))
    assert (outcome["filePath"], outcome["status"], outcome["content"]) == (target, "accepted", "é\r\n")


def test_diffs_one_after_another_each_get_their_own_outcome(
    cli: IdeClientProcess, editor: DecidingEditor, workspace: str
) -> None:
    editor.decide("a.txt", accept("A!\n")).decide("b.txt", reject()).decide("c.txt", accept())
    ids = [cli.open_diff(os.path.join(workspace, name), f"{name}\n") for name in ("a.txt", "b.txt", "c.txt")]
    outcomes = [cli.wait_diff(diff_id) for diff_id in ids]  # the CLI opens one diff at a time
    assert [(o["status"], o["content"]) for o in outcomes] == [
        ("accepted", "A!\n"),
        ("rejected", None),
        ("accepted", "c.txt\n"),
    ]


def test_accepted_in_the_terminal_gets_the_edited_text_and_no_notification(
    cli: IdeClientProcess, companion: HeadlessCompanion, editor: DecidingEditor, workspace: str
) -> None:
    target = os.path.join(workspace, "cli-side.txt")
    diff_id = cli.open_diff(target, "from the model\n")
    review = editor.wait_shown(1)
    editor.type_into(review, "from the model\nplus the user's fix\n")
    assert cli.close_diff(target) == "from the model\nplus the user's fix\n"
    assert editor.closed == [review]
    # A late click in the editor must not reach the CLI as a second answer.
    review.accept("too late\n")
    review.reject()
    # Barrier: everything the companion sent before this context update has arrived.
    marker = os.path.join(workspace, "barrier.txt")
    companion.context.activate(marker)
    cli.wait_context(lambda c: (active_file(c) or {}).get("path") == marker)
    assert cli.notifications("ide/diffAccepted") == []
    assert cli.notifications("ide/diffRejected") == []
    assert [e for e in cli.snapshot() if e.get("id") == diff_id] == []  # settled by the terminal only
    assert not os.path.exists(target)


def test_rejected_in_the_terminal(cli: IdeClientProcess, editor: DecidingEditor, workspace: str) -> None:
    target = os.path.join(workspace, "cli-reject.txt")
    diff_id = cli.open_diff(target, "x\n")
    review = editor.wait_shown(1)
    cli.resolve_from_cli(target, "rejected")
    assert cli.wait_diff(diff_id)["status"] == "rejected"
    assert editor.wait_closed(1) is review
    assert cli.notifications("ide/diffRejected") == []


def test_close_diff_with_no_review_open_is_not_an_error(cli: IdeClientProcess, workspace: str) -> None:
    assert cli.close_diff(os.path.join(workspace, "never-opened.txt")) is None
    cli.wait_connected()  # still connected: wait_* fail at once on a disconnect
    assert not any(e.get("event") in ("disconnected", "error") for e in cli.snapshot())


def test_the_cli_is_told_when_the_window_closes(cli: IdeClientProcess, companion: HeadlessCompanion) -> None:
    path = companion.handle.discovery_path
    companion.handle.close().result(10)
    assert not os.path.exists(path)
    cli.wait_event(lambda e: e.get("event") == "disconnected", "the client to notice the window closed", 30)
