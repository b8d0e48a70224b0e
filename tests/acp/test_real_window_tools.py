"""The chat's agent sees what the window sees (issue #40), with the real agents offline: Gemini CLI
0.61.0 (`--acp`, GeminiStandIn as its Gemini API) and claude-agent-acp 0.101.0 (ChainStandIn as its
Messages API) each call the window's tools through the MCP server the chat passed in `session/new`
(the window's real server: its `/mcp`, reached with the chat's own token), the user allows each call
in the chat's permission card, and the tool's answer (the build error the editor shows, the unsaved
text of a buffer, never the stale text on disk) is in the agent's next request to its model, and
the agent ends with the chat. `chat` in a terminal does the same from its own window server.

The stand-ins only script what the model asks for; the agents find the window's tools, ask for the
permission, call the tools and report their answers to the model on their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatSession
from companion.core.server.chat_servers import WINDOW_SERVER_NAME, ChatServers, WindowTools
from companion.mcp_tools.factory import tool_factory
from companion.runtime import Runtime
from tests.acp.conftest import (
    CEILING,
    ROOT,
    AgentSetup,
    AsyncEditor,
    RecordingView,
    claude_agent_program,
    claude_offline_env,
)
from tests.conformance.claude_harness import ChainStandIn
from tests.conformance.gemini_standin import declared, function_responses

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

ON_DISK = "print('saved an hour ago')\n"
UNSAVED = "print(fooo)  # typed in the editor, not saved\n"
PROBLEM = "undefined name 'fooo'"


@pytest.fixture
def window_tools(tmp_path: Any, workspace: str) -> Iterator[WindowTools]:
    """A window on `workspace` whose app.py has unsaved text in its buffer and a build error: its
    real server (as the Sublime window has it) with the default workspace tools, and the way a chat
    of that window reaches them (sublime_editor/chat/mcp.py)."""
    path = os.path.join(workspace, "app.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(ON_DISK)
    editor = AsyncEditor()
    editor.buffers[path] = UNSAVED
    where = {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 10}}
    editor.problems[path] = [{"message": PROBLEM, "severity": 1, "source": "build", "range": where}]
    runtime = Runtime(discovery_directory=os.path.join(str(tmp_path), "discovery"))
    try:
        window = runtime.open_window(editor, [workspace], tool_factory=tool_factory())
        window.ready.result(CEILING)
        yield WindowTools(window.port, window.chat_tokens, None, {"PYTHONPATH": ROOT})
    finally:
        runtime.stop()


async def chat_turn(setup: AgentSetup, workspace: str, tools: WindowTools) -> tuple[RecordingView, str]:
    """One prompt in a chat whose user allows every tool call; the view and the chat's token."""
    view = RecordingView(answer_kind="allow_once")
    servers = ChatServers(tools)
    session = ChatSession(custom_agent(setup.command), [workspace], AsyncEditor(), view, env=setup.env, servers=servers)
    tree: list[psutil.Process] = []
    try:
        await session.start()
        token = servers.token
        assert token and session.transports.http  # the window's tools went as an http entry
        assert await session.prompt("What is wrong with app.py?") == "end_turn"
        assert session.agent is not None
        top = psutil.Process(session.agent.pid)
        tree = [top, *top.children(recursive=True)]
    finally:
        await session.close()
    # Gemini CLI 0.61.0 with an MCP server ignores stdin's end and SIGTERM: the chat's stop must still end it
    _, alive = psutil.wait_procs(tree, timeout=CEILING)
    assert alive == [], f"left running: {alive}"
    return view, token


def assert_the_user_was_asked_for_each_tool(view: RecordingView) -> None:
    titles = [title for title, _ in view.asked]
    assert len(titles) == 2 and "get_diagnostics" in titles[0] and "read_file" in titles[1], titles


async def test_gemini_reads_the_build_error_and_the_unsaved_buffer_through_the_window_tools(
    gemini_factory: Any, workspace: str, window_tools: WindowTools
) -> None:
    diagnostics, read_file = (f"mcp_{WINDOW_SERVER_NAME}_{tool}" for tool in ("get_diagnostics", "read_file"))
    setup = gemini_factory([(diagnostics, {"path": "app.py"}), (read_file, {"path": "app.py"})])
    view, token = await chat_turn(setup, workspace, window_tools)

    assert_the_user_was_asked_for_each_tool(view)
    assert setup.api is not None
    requests = setup.api.model_requests()
    answered = [function_responses(r) for r in requests]
    first = next(i for i, found in enumerate(answered) if found)  # the request after the first call
    ((diagnosed,), (_, read)) = answered[first], answered[first + 1]
    assert diagnosed["name"] == diagnostics and PROBLEM in diagnosed["response"]["output"]
    assert read["name"] == read_file and UNSAVED in read["response"]["output"]
    told = json.dumps(requests)
    assert ON_DISK.strip() not in told and token not in told and token not in repr(view.calls)


async def test_claude_reads_the_build_error_and_the_unsaved_buffer_through_the_window_tools(
    tmp_path: Any, workspace: str, window_tools: WindowTools
) -> None:
    diagnostics, read_file = (f"mcp__{WINDOW_SERVER_NAME}__{tool}" for tool in ("get_diagnostics", "read_file"))
    model = ChainStandIn(
        [
            # Claude Code defers MCP tools: a model loads them with ToolSearch before it calls one
            ("ToolSearch", {"query": f"select:{diagnostics},{read_file}", "max_results": 5}),
            (diagnostics, {"path": "app.py"}),
            (read_file, {"path": "app.py"}),
        ]
    )
    with model:
        env = claude_offline_env(str(tmp_path), workspace, model.url)
        view, token = await chat_turn(AgentSetup([claude_agent_program()], env, env["HOME"]), workspace, window_tools)

    assert_the_user_was_asked_for_each_tool(view)
    after_diagnostics, after_read = model.requests_after(1)[0], model.requests_after(2)[0]
    assert PROBLEM in json.dumps(tool_result(after_diagnostics, "toolu_chain_1"))
    assert UNSAVED.strip() in json.dumps(tool_result(after_read, "toolu_chain_2"))
    told = json.dumps(model.requests)
    assert ON_DISK.strip() not in told and token not in told and token not in repr(view.calls)


def tool_result(request: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    """The tool_result block for `tool_use_id` in a Messages request."""
    return next(
        block
        for message in request.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("tool_use_id") == tool_use_id
    )


def test_headless_chat_gives_gemini_the_workspaces_tools_from_its_own_window_server(
    gemini_factory: Any, workspace: str
) -> None:
    with open(os.path.join(workspace, "notes.txt"), "w", encoding="utf-8") as handle:
        handle.write("the notes of the workspace\n")
    read_file = f"mcp_{WINDOW_SERVER_NAME}_read_file"
    setup = gemini_factory([(read_file, {"path": "notes.txt"})])
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", "accept"]
    argv += ["--prompt", "What do my notes say?", "--", *setup.command]
    result = subprocess.run(argv, cwd=ROOT, env=setup.env, capture_output=True, text=True, timeout=2 * CEILING)
    assert result.returncode == 0, result.stdout + result.stderr
    assert setup.api is not None
    requests = setup.api.model_requests()
    ours = {name for name in declared(requests[0]) if name.startswith(f"mcp_{WINDOW_SERVER_NAME}_")}
    assert ours == {f"mcp_{WINDOW_SERVER_NAME}_{tool}" for tool in ("get_diagnostics", "list_files", "read_file")}
    (answer,) = function_responses(requests[-1])
    assert answer["name"] == read_file and "the notes of the workspace" in answer["response"]["output"]
    assert "Bearer" not in result.stdout + result.stderr  # the chat's token is never printed
