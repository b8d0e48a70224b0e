"""A window serving one agent alone (the `gemini_cli` / `claude_code` settings, `serve --agents`):
the agent left out finds nothing of the window, the other is served as before."""

from __future__ import annotations

import os

import anyio
import httpx2
import pytest

from companion.cli import main
from companion.mcp_tools.factory import tool_factory
from companion.runtime import Runtime
from tests.claude_client import ClaudeClient
from tests.mcp_client import connect, text_of
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.anyio


async def shown(editor: ScriptedEditor) -> None:
    with anyio.fail_after(20):
        while not editor.shown:
            await anyio.sleep(0.01)


async def test_claude_code_alone_no_discovery_file_and_mcp_is_refused_like_an_unknown_path(
    claude_runtime: Runtime, editor: ScriptedEditor, workspace: str, discovery_dir: str
) -> None:
    handle = claude_runtime.open_window(editor, [workspace], claude=True, gemini=False)
    handle.ready.result(30)
    assert handle.discovery_path == "" and not os.path.exists(discovery_dir)
    assert handle.lock_path and os.path.exists(handle.lock_path) and handle.gemini is None
    headers = {"Authorization": f"Bearer {handle.token}", "Host": f"127.0.0.1:{handle.port}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
        for path in ("/mcp", "/elsewhere"):
            answer = await http.post(f"http://127.0.0.1:{handle.port}{path}", json={})
            assert answer.status_code == 404, path
    # Claude Code is served as before: its openDiff opens a review the user decides.
    target = os.path.join(workspace, "a.py")
    client = await ClaudeClient.connect(handle.port, handle.claude_token)
    try:
        async with anyio.create_task_group() as group:
            answer_text: list[str] = []

            async def open_diff() -> None:
                arguments = {"old_file_path": target, "new_file_path": target, "new_file_contents": "new\n"}
                answer_text.extend(await client.call("openDiff", {**arguments, "tab_name": "t"}))

            group.start_soon(open_diff)
            await shown(editor)
            editor.shown[0][0].accept("new\n")
        assert answer_text == ["FILE_SAVED", "new\n"]
    finally:
        await client.close()


async def test_without_gemini_the_bridge_finds_the_workspace_tools_but_not_gemini_clis(
    runtime: Runtime, editor: ScriptedEditor, workspace: str, discovery_dir: str
) -> None:
    handle = runtime.open_window(editor, [workspace], tool_factory=tool_factory(), gemini=False)
    handle.ready.result(30)
    assert os.listdir(discovery_dir) == [f"sublime-companion-server-{runtime.editor_pid}-{handle.port}.json"]
    async with connect(handle.url, handle.token) as client:
        names = [tool.name for tool in (await client.session.list_tools()).tools]
        assert "read_file" in names and "openDiff" not in names and "closeDiff" not in names
        result = await client.open_diff(os.path.join(workspace, "a.py"), "x")
        assert result.is_error and "Unknown tool 'openDiff'" in text_of(result)
    assert editor.shown == []


async def test_gemini_alone_writes_no_lock_and_serves_gemini_cli(
    claude_runtime: Runtime, editor: ScriptedEditor, workspace: str, lock_dir: str
) -> None:
    handle = claude_runtime.open_window(editor, [workspace], claude=False, gemini=True)
    handle.ready.result(30)
    assert handle.lock_path == "" and not os.path.exists(lock_dir) and handle.claude is None
    assert os.path.basename(handle.discovery_path).startswith("gemini-ide-server-")
    async with connect(handle.url, handle.token) as client:
        await client.wait_for("ide/contextUpdate")


@pytest.mark.parametrize(
    ("agents", "message"),
    [
        ("codex", "codex is not an agent; give one or both of gemini,claude"),
        (",", "no agent named; give one or both of gemini,claude"),
    ],
)
def test_serve_refuses_an_unknown_agent_in_one_line(
    agents: str, message: str, capsys: pytest.CaptureFixture[str], workspace: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--workspace", workspace, "--agents", agents])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]
