"""Claude Code's /ide side of a window server, as the real client uses it (shapes from
CONTRIBUTING.md, "Claude Code"): the lock file, the WebSocket handshake, openDiff answered
with the user's decision, the other tools, and the notifications."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest

from companion.claude_ide import lockfile
from companion.claude_ide.protocol import NO_SELECTION
from companion.core.context import Position
from companion.core.reviews import Review
from companion.runtime import Runtime, WindowHandle
from tests.claude_client import INITIALIZE, ClaudeClient, ToolCallError
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.anyio


async def shown(editor: ScriptedEditor, count: int = 1, timeout: float = 20) -> Review:
    with anyio.fail_after(timeout):
        while len(editor.shown) < count:
            await anyio.sleep(0.01)
    return editor.shown[count - 1][0]


def write(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return path


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


# -- the lock file --


def test_the_lock_file_names_the_port_and_holds_what_the_client_reads(
    claude_window: WindowHandle, lock_dir: str, workspace: str
) -> None:
    assert claude_window.lock_path == os.path.join(lock_dir, f"{claude_window.port}.lock")
    data = json.loads(read(claude_window.lock_path))
    assert data == {
        "pid": claude_window.runtime.editor_pid,
        "workspaceFolders": [workspace],
        "ideName": "Sublime Text",
        "transport": "ws",
        "runningInWindows": sys.platform == "win32",
        "authToken": claude_window.claude_token,
    }
    assert claude_window.claude_token and claude_window.claude_token != claude_window.token


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_the_lock_file_is_private_from_creation(claude_window: WindowHandle, lock_dir: str) -> None:
    assert stat.S_IMODE(os.stat(claude_window.lock_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(lock_dir).st_mode) == 0o700


def test_the_lock_follows_the_folders_and_goes_with_the_window(claude_window: WindowHandle, tmp_path: Path) -> None:
    other = str(tmp_path / "other")
    claude_window.set_folders([other]).result(10)
    assert json.loads(read(claude_window.lock_path))["workspaceFolders"] == [other]
    path = claude_window.lock_path
    claude_window.close().result(10)
    assert not os.path.exists(path)


def test_a_window_without_claude_writes_no_lock_and_refuses_websockets(
    claude_runtime: Runtime, editor: ScriptedEditor, workspace: str, lock_dir: str
) -> None:
    handle = claude_runtime.open_window(editor, [workspace])
    handle.ready.result(30)
    assert handle.lock_path == "" and not os.path.exists(lock_dir)
    assert handle.server is not None and handle.claude is None and handle.server.websocket is None


def test_stale_sublime_locks_are_swept_and_other_editors_locks_are_left(lock_dir: str, tmp_path: Path) -> None:
    os.makedirs(lock_dir)
    dead = lockfile.write(2**22 + 12345, 1, ["/x"], "t", lock_dir)  # a PID no process has
    vscode = os.path.join(lock_dir, "2.lock")
    write(vscode, json.dumps({"pid": 2**22 + 12345, "ideName": "Visual Studio Code", "transport": "ws"}))
    fifo = os.path.join(lock_dir, "3.lock")
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)  # never opened for reading (it would block): not a lock of ours
    removed = lockfile.sweep_stale(os.getpid(), lock_dir)
    assert removed == [dead]
    assert os.path.exists(vscode)


def test_an_unwritable_lock_folder_leaves_gemini_served_and_says_why(
    editor: ScriptedEditor, workspace: str, tmp_path: Path, discovery_dir: str
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    runtime = Runtime(discovery_directory=discovery_dir, lock_directory=str(blocker / "ide"))
    try:
        handle = runtime.open_window(editor, [workspace], claude=True)
        handle.ready.result(30)
        assert handle.discovery_path and os.path.exists(handle.discovery_path)
        assert handle.lock_path == ""
        assert "Claude Code's lock file" in handle.lock_problem and "CLAUDE_CONFIG_DIR" in handle.lock_problem
    finally:
        runtime.stop()


# -- openDiff --


async def test_open_diff_waits_for_the_user_and_accept_answers_file_saved_with_the_edited_text(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    target = write(os.path.join(workspace, "a.py"), "old\n")
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        async with anyio.create_task_group() as group:
            answer: list[str] = []

            async def open_diff() -> None:
                answer.extend(
                    await client.call(
                        "openDiff",
                        {
                            "old_file_path": target,
                            "new_file_path": target,
                            "new_file_contents": "new\n",
                            "tab_name": "✻ [Claude Code] a.py (abc123) ⧉",
                        },
                    )
                )

            group.start_soon(open_diff)
            review = await shown(editor)
            assert review.requested_by == "Claude Code" and review.agent == "claude"
            await anyio.sleep(0.2)
            assert answer == []  # still waiting: the answer is the user's decision
            review.accept("new\nand the user's line\n")
        assert answer == ["FILE_SAVED", "new\nand the user's line\n"]
        assert read(target) == "old\n"  # the client writes the file, not the editor
    finally:
        await client.close()


@pytest.mark.parametrize("ending", ["reject", "close_tab", "closeAllDiffTabs"])
async def test_a_rejected_or_closed_review_answers_diff_rejected_never_tab_closed(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str, ending: str
) -> None:
    target = os.path.join(workspace, "new.py")  # a file that does not exist yet
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    closer = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        answer: list[str] = []
        async with anyio.create_task_group() as group:

            async def open_diff() -> None:
                arguments = {
                    "old_file_path": target,
                    "new_file_path": target,
                    "new_file_contents": "x",
                    "tab_name": "t1",
                }
                answer.extend(await client.call("openDiff", arguments))

            group.start_soon(open_diff)
            review = await shown(editor)
            if ending == "reject":
                review.reject()
            elif ending == "close_tab":
                assert await closer.call("close_tab", {"tab_name": "t1"}) == ["TAB_CLOSED"]
            else:
                assert await closer.call("closeAllDiffTabs") == ["CLOSED_1_DIFF_TABS"]
        assert answer == ["DIFF_REJECTED", "t1"]
        assert not os.path.exists(target)
        if ending != "reject":
            assert editor.closed == [review]
    finally:
        await client.close()
        await closer.close()


@pytest.mark.parametrize("ending", ["close_tab", "closeAllDiffTabs"])
async def test_two_reviews_under_one_tab_name_both_stay_closable(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str, ending: str
) -> None:
    """Two openDiffs with the same tab_name (on two files): the second does not orphan the first;
    close_tab by that name, or closeAllDiffTabs, closes both, and each caller hears DIFF_REJECTED."""
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        answers: dict[str, list[str]] = {}
        async with anyio.create_task_group() as group:

            async def open_diff(name: str) -> None:
                target = os.path.join(workspace, name)
                arguments = {"new_file_path": target, "new_file_contents": name, "tab_name": "same"}
                answers[name] = await client.call("openDiff", arguments)

            group.start_soon(open_diff, "first.py")
            first = await shown(editor, 1)
            group.start_soon(open_diff, "second.py")
            second = await shown(editor, 2)
            if ending == "close_tab":
                assert await client.call("close_tab", {"tab_name": "same"}) == ["TAB_CLOSED"]
            else:
                assert await client.call("closeAllDiffTabs") == ["CLOSED_2_DIFF_TABS"]
        assert answers == {"first.py": ["DIFF_REJECTED", "same"], "second.py": ["DIFF_REJECTED", "same"]}
        assert not first.is_open and not second.is_open
        assert sorted(r.id for r in editor.closed) == sorted([first.id, second.id])
        assert claude_window.claude is not None and claude_window.claude.tabs == {}
    finally:
        await client.close()


async def test_a_client_that_disconnects_during_a_review_closes_it(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    target = os.path.join(workspace, "a.py")
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    pending = client.call("openDiff", {"new_file_path": target, "new_file_contents": "x", "tab_name": "t"})
    task = __import__("asyncio").ensure_future(pending)
    review = await shown(editor)
    await client.close()
    task.cancel()
    with anyio.fail_after(10):
        while review.is_open:
            await anyio.sleep(0.02)
    assert editor.closed == [review]


async def test_neither_agent_sees_or_closes_the_others_reviews(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    gemini_file = os.path.join(workspace, "g.py")
    claude_file = os.path.join(workspace, "c.py")
    claude = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        async with connect(claude_window.url, claude_window.token) as gemini, anyio.create_task_group() as group:
            await gemini.open_diff(gemini_file, "from gemini\n")
            gemini_review = await shown(editor, 1)
            # Claude's closeAllDiffTabs (sent at the start of every query) leaves Gemini's review open.
            assert await claude.call("closeAllDiffTabs") == ["CLOSED_0_DIFF_TABS"]
            assert gemini_review.is_open
            answer: list[str] = []

            async def claude_diff() -> None:
                arguments = {"new_file_path": claude_file, "new_file_contents": "from claude\n", "tab_name": "c"}
                answer.extend(await claude.call("openDiff", arguments))

            group.start_soon(claude_diff)
            claude_review = await shown(editor, 2)
            # Gemini's closeDiff cannot close Claude's review.
            closed = await gemini.session.call_tool("closeDiff", {"filePath": claude_file})
            assert json.loads(closed.content[0].text) == {"content": None}  # type: ignore[union-attr]
            assert claude_review.is_open
            # A Claude openDiff for the path under Gemini's review is refused: the terminal prompt decides.
            with pytest.raises(ToolCallError, match="already open"):
                await claude.call("openDiff", {"new_file_path": gemini_file, "new_file_contents": "y", "tab_name": "g"})
            claude_review.accept("from claude, edited\n")
            gemini_review.accept("from gemini, edited\n")
            accepted = await gemini.wait_for("ide/diffAccepted")
        assert accepted == {"filePath": gemini_file, "content": "from gemini, edited\n"}
        assert answer == ["FILE_SAVED", "from claude, edited\n"]
        assert gemini.of("ide/diffAccepted") == [accepted]  # Claude's outcome never reached Gemini
        assert not any(n["method"] == "ide/diffAccepted" for n in claude.notifications)
    finally:
        await claude.close()


# -- the other tools --


async def test_lists_every_tool_the_client_knows(claude_window: WindowHandle) -> None:
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        reply = await client.request("tools/list", {})
    finally:
        await client.close()
    names = {tool["name"] for tool in reply["result"]["tools"]}
    assert names == {
        "openDiff", "openFile", "getCurrentSelection", "getLatestSelection", "getOpenEditors",
        "getWorkspaceFolders", "getDiagnostics", "checkDocumentDirty", "saveDocument", "close_tab",
        "closeAllDiffTabs",
    }  # fmt: skip


async def test_selection_tools_and_notifications_share_the_active_selection_in_claude_units(
    claude_window: WindowHandle, workspace: str
) -> None:
    path = os.path.join(workspace, "a.py")
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        assert await client.call_json("getCurrentSelection") == {"success": False, "message": "No active editor found"}
        assert await client.call_json("getLatestSelection") == {"success": False, "message": "No selection available"}
        # Line 3, characters 5..9 selected (the tracker's units are 1-based, Claude's 0-based).
        claude_window.context.activate(path, Position(3, 9), "abcd", anchor=Position(3, 5))
        sent = await client.notification("selection_changed")
        expected = {
            "text": "abcd",
            "filePath": path,
            "fileUrl": Path(path).as_uri(),
            "selection": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 8}, "isEmpty": False},
        }
        assert sent == expected
        assert await client.call_json("getCurrentSelection") == {"success": True, **expected}
        claude_window.context.select(path, Position(5, 1), None)  # the selection collapses to a cursor
        cursor = await client.notification("selection_changed")
        assert cursor["text"] == "" and cursor["selection"]["isEmpty"] is True
        assert await client.call_json("getLatestSelection") == {"success": True, **expected}
    finally:
        await client.close()


async def test_selection_changed_is_debounced_and_respects_pause_and_exclusions(
    claude_window: WindowHandle, workspace: str
) -> None:
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        path = os.path.join(workspace, "a.py")
        claude_window.context.activate(path, Position(1, 1))
        for column in range(2, 30):  # a burst of cursor moves within the 50 ms debounce
            claude_window.context.select(path, Position(1, column), None)
        last = await client.notification("selection_changed")
        await anyio.sleep(0.3)
        assert last["selection"]["end"] == {"line": 0, "character": 28}
        assert client.notifications == []  # one notification for the burst
        claude_window.context.activate(os.path.join(workspace, ".env"), Position(1, 1), "SECRET=1")
        # An excluded file is active: Claude Code is told there is no selection, never the file.
        assert await client.notification("selection_changed") == NO_SELECTION
        claude_window.context.set_paused(True)
        await anyio.sleep(0.3)
        assert client.notifications == []  # pausing changes nothing more: still no selection
        assert await client.call_json("getCurrentSelection") == {"success": False, "message": "No active editor found"}
    finally:
        await client.close()


async def test_a_client_hears_the_current_selection_when_it_connects(
    claude_window: WindowHandle, workspace: str
) -> None:
    path = os.path.join(workspace, "a.py")
    claude_window.context.activate(path, Position(2, 3), "xy", anchor=Position(2, 1))
    await anyio.sleep(0.2)  # past the debounce
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        sent = await client.notification("selection_changed")
        assert sent["filePath"] == path and sent["text"] == "xy"
    finally:
        await client.close()


async def test_at_mentioned_reaches_connected_clients(claude_window: WindowHandle, workspace: str) -> None:
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        with anyio.fail_after(10):  # the server has seen notifications/initialized
            while not claude_window.claude_clients:
                await anyio.sleep(0.02)
        path = os.path.join(workspace, "a.py")
        assert claude_window.at_mentioned(path, 4, 9).result(10) == 1
        assert await client.notification("at_mentioned") == {"filePath": path, "lineStart": 4, "lineEnd": 9}
        assert claude_window.at_mentioned(path, None, None).result(10) == 1
        assert await client.notification("at_mentioned") == {"filePath": path}
    finally:
        await client.close()
    with anyio.fail_after(10):
        while claude_window.claude_clients:
            await anyio.sleep(0.02)
    assert claude_window.at_mentioned(path, 1, 1).result(10) == 0


async def test_a_mention_sent_as_the_client_connects_waits_until_it_has_listed_the_tools(
    claude_window: WindowHandle, workspace: str
) -> None:
    """Claude Code subscribes to at_mentioned only after it has listed our tools (and drops what
    comes earlier): a mention sent as it connects (Send that opens Claude Code) leaves after the
    reply to its tools/list, not on the handshake."""
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token, handshake=False)
    try:
        await client.request("initialize", INITIALIZE)
        await client.notify("notifications/initialized")
        with anyio.fail_after(10):
            while not claude_window.claude_clients:
                await anyio.sleep(0.02)
        path = os.path.join(workspace, "a.py")
        assert claude_window.at_mentioned(path, 0, 1).result(10) == 1  # queued on the connection
        await client.request("tools/list")
        assert client.notifications == []  # frames arrive in order: nothing came before the reply
        assert await client.notification("at_mentioned") == {"filePath": path, "lineStart": 0, "lineEnd": 1}
    finally:
        await client.close()


async def test_editor_tools_answer_in_the_shapes_the_client_parses(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    path = write(os.path.join(workspace, "a.py"), "x\n")
    claude_window.context.activate(path, Position(1, 1))
    editor.buffers[path] = "unsaved\n"
    problem = {
        "message": "name 'y' is not defined",
        "severity": 1,
        "source": "build",
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
    }
    editor.problems[path] = [problem]
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        editors = await client.call_json("getOpenEditors")
        assert editors == {"tabs": [{"uri": Path(path).as_uri(), "isActive": True, "label": "a.py", "fileName": path}]}
        folders = await client.call_json("getWorkspaceFolders")
        assert folders["success"] is True and folders["rootPath"] == workspace
        assert folders["folders"] == [{"name": "workspace", "uri": Path(workspace).as_uri(), "path": workspace}]
        every = await client.call_json("getDiagnostics")
        assert every == [{"uri": Path(path).as_uri(), "diagnostics": [problem]}]
        assert await client.call_json("getDiagnostics", {"uri": Path(path).as_uri()}) == every
        other = Path(os.path.join(workspace, "b.py")).as_uri()
        assert await client.call_json("getDiagnostics", {"uri": other}) == []  # none: never invented
        dirty = await client.call_json("checkDocumentDirty", {"filePath": path})
        assert dirty == {"success": True, "filePath": path, "isDirty": True, "isUntitled": False}
        saved = await client.call_json("saveDocument", {"filePath": path})
        assert saved["success"] is True and editor.saved == [path]
        closed = os.path.join(workspace, "closed.py")
        assert (await client.call_json("checkDocumentDirty", {"filePath": closed}))["success"] is False
        assert await client.call("openFile", {"filePath": path, "startText": "x"}) == [f"Opened file: {path}"]
        assert editor.opened == [(path, "x", "")]
        with pytest.raises(ToolCallError, match="absolute path"):
            await client.call("openFile", {"filePath": "relative.py"})
        with pytest.raises(ToolCallError, match="Unknown tool"):
            await client.call("executeCode", {"code": "1"})
    finally:
        await client.close()


async def test_bad_open_diff_arguments_are_refused_and_open_nothing(
    claude_window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        for arguments, message in [
            ({"new_file_path": "rel.py", "new_file_contents": "x", "tab_name": "t"}, "absolute"),
            ({"new_file_path": os.path.join(workspace, "a"), "tab_name": "t"}, "must be a string"),
            ({"new_file_path": 5, "new_file_contents": "x"}, "must be a string"),
            ({"new_file_path": workspace, "new_file_contents": "x", "tab_name": "t"}, "openDiff"),
        ]:
            with pytest.raises(ToolCallError, match=message):
                await client.call("openDiff", arguments)
    finally:
        await client.close()
    assert editor.shown == []


async def test_claude_clients_are_counted_once_their_handshake_is_done(claude_window: WindowHandle) -> None:
    bare = await ClaudeClient.connect(claude_window.port, claude_window.claude_token, handshake=False)
    client = await ClaudeClient.connect(claude_window.port, claude_window.claude_token)
    try:
        with anyio.fail_after(10):
            while claude_window.claude_clients != ["claude-code"]:
                await anyio.sleep(0.02)
        assert claude_window.connected_clients == []  # Gemini's list is its own
    finally:
        await client.close()
        await bare.close()
