"""The chat's agent gets the window's tools over MCP (issue #40): `chat` in a terminal serves its
workspace's tools in-process to the agent, with a token of the chat's own, over HTTP when the agent
takes it and through the stdio bridge otherwise; the user's own servers go where the agent takes
their transport; a bad `--mcp-config` starts nothing. The agent is tests/acp/tools_agent.py, a real
MCP client (the pinned `mcp` library) on the SDK's agent side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.session import ChatSession
from companion.core.server.chat_servers import ChatServers, WindowTools
from companion.core.server.chat_tokens import ChatTokens
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView

TOOLS_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools_agent.py")


def chat(
    workspace: str, record: str, mcp: dict[str, Any], *args: str, prompt: str = "tools notes.txt"
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", prompt, *args]
    argv += ["--", sys.executable, TOOLS_AGENT]
    env = {**os.environ, "PYTHONPATH": ROOT, "TOOLS_AGENT_RECORD": record, "TOOLS_AGENT_MCP": json.dumps(mcp)}
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING)


def records(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_the_headless_agent_reads_the_workspace_through_the_http_tools_with_its_own_token(
    workspace: str, tmp_path: Any
) -> None:
    write(workspace, "notes.txt", "the notes\n")
    record = os.path.join(str(tmp_path), "record.jsonl")
    result = chat(workspace, record, {"http": True})
    assert result.returncode == 0, result.stderr
    new, used = records(record)
    (entry,) = new["mcpServers"]
    assert entry["type"] == "http" and entry["name"] == "sublime"
    assert entry["url"].startswith("http://127.0.0.1:") and entry["url"].endswith("/mcp")
    ((header, value),) = [(h["name"], h["value"]) for h in entry["headers"]]
    assert header == "Authorization" and value.startswith("Bearer ")
    token = value.removeprefix("Bearer ")
    (server,) = used["results"]
    assert server["tools"] == ["get_diagnostics", "list_files", "read_file"], server
    assert server["calls"]["read_file"] == {"error": False, "text": "the notes\n"}
    assert server["calls"]["get_diagnostics"]["error"] is False
    assert json.loads(server["calls"]["get_diagnostics"]["text"]) in ([], {})  # no build here: nothing invented
    assert token not in result.stdout and token not in result.stderr


def test_without_http_the_agent_gets_the_stdio_bridge_with_the_token_in_its_environment(
    workspace: str, tmp_path: Any
) -> None:
    write(workspace, "notes.txt", "bridged\n")
    record = os.path.join(str(tmp_path), "record.jsonl")
    result = chat(workspace, record, {})
    assert result.returncode == 0, result.stderr
    new, used = records(record)
    (entry,) = new["mcpServers"]
    assert "type" not in entry and entry["name"] == "sublime"
    env = {e["name"]: e["value"] for e in entry["env"]}
    token = env["GEMINI_COMPANION_BRIDGE_TOKEN"]
    assert token and all(token not in arg for arg in [entry["command"], *entry["args"]])
    (server,) = used["results"]
    assert server["tools"] == ["get_diagnostics", "list_files", "read_file"], server
    assert server["calls"]["read_file"] == {"error": False, "text": "bridged\n"}
    assert token not in result.stdout and token not in result.stderr


def test_no_editor_tools_sends_no_window_server(workspace: str, tmp_path: Any) -> None:
    record = os.path.join(str(tmp_path), "record.jsonl")
    result = chat(workspace, record, {"http": True}, "--no-editor-tools", prompt="hello")
    assert result.returncode == 0, result.stderr
    assert records(record)[0]["mcpServers"] == []


def config_file(tmp_path: Any, servers: Any) -> str:
    path = os.path.join(str(tmp_path), "mcp.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(servers, handle)
    return path


def test_the_users_servers_go_only_where_the_agent_takes_their_transport(workspace: str, tmp_path: Any) -> None:
    servers = {
        "mcpServers": {
            "lint": {"command": "lint-server", "args": ["--stdio"], "env": {"LINT_LEVEL": "2"}},
            "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"X-Key": "k"}},
            "old": {"type": "sse", "url": "https://old.example/sse"},
        }
    }
    record = os.path.join(str(tmp_path), "record.jsonl")
    config = config_file(tmp_path, servers)
    result = chat(workspace, record, {"http": True}, "--mcp-config", config, "--no-editor-tools", prompt="hello")
    assert result.returncode == 0, result.stderr
    assert records(record)[0]["mcpServers"] == [
        {"name": "lint", "command": "lint-server", "args": ["--stdio"], "env": [{"name": "LINT_LEVEL", "value": "2"}]},
        {
            "type": "http",
            "name": "docs",
            "url": "https://docs.example/mcp",
            "headers": [{"name": "X-Key", "value": "k"}],
        },
    ]
    assert "Not sent to this agent, which does not take their transport: old (sse)." in result.stdout

    os.remove(record)
    result = chat(workspace, record, {}, "--mcp-config", config, "--no-editor-tools", prompt="hello")
    assert result.returncode == 0, result.stderr
    assert [s["name"] for s in records(record)[0]["mcpServers"]] == ["lint"]  # stdio only
    assert "Not sent to this agent, which does not take their transport: docs (http), old (sse)." in result.stdout


@pytest.mark.parametrize(
    ("servers", "said"),
    [
        ({"mcpServers": {"lint": {"args": ["x"]}}}, "MCP server 'lint' needs \"command\""),
        ({"mcpServers": {"docs": {"type": "http", "url": "docs.example"}}}, "MCP server 'docs' needs \"url\""),
        ({"mcpServers": {"odd": {"type": "ws", "url": "ws://x"}}}, "MCP server 'odd': \"type\" 'ws' is not known"),
        ({"mcpServers": {"lint": {"command": "l", "env": {"A": 1}}}}, "MCP server 'lint': \"env\" must be an object"),
        ({"servers": {}}, "has no mcpServers object"),
        ("not json", "is not valid JSON"),
    ],
)
def test_a_bad_mcp_config_is_one_clear_error_and_starts_nothing(
    workspace: str, tmp_path: Any, servers: Any, said: str
) -> None:
    record = os.path.join(str(tmp_path), "record.jsonl")
    if servers == "not json":
        config = os.path.join(str(tmp_path), "mcp.json")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write("{not json")
    else:
        config = config_file(tmp_path, servers)
    result = chat(workspace, record, {"http": True}, "--mcp-config", config)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and said in result.stderr, result.stderr
    assert result.stderr.strip().endswith("nothing was started.") and result.stderr.count("\n") == 1
    assert records(record) == []  # the agent never started


@pytest.mark.anyio
async def test_session_load_carries_the_window_entry_too_and_one_token_for_the_whole_chat(
    workspace: str, tmp_path: Any
) -> None:
    record = os.path.join(str(tmp_path), "record.jsonl")
    env = {**os.environ, "TOOLS_AGENT_RECORD": record, "TOOLS_AGENT_MCP": json.dumps({"http": True})}
    tokens = ChatTokens()
    servers = ChatServers(WindowTools(4242, tokens), [])
    spec = AgentSpec("Tools", (sys.executable, TOOLS_AGENT))
    session = ChatSession(spec, [workspace], AsyncEditor(), RecordingView(), env=env, servers=servers)
    try:
        await session.load("t1")
        (loaded,) = records(record)
        assert loaded["method"] == "session/load"
        (entry,) = loaded["mcpServers"]
        assert entry["url"] == "http://127.0.0.1:4242/mcp"
        assert entry["headers"] == [{"name": "Authorization", "value": f"Bearer {servers.token}"}]
        assert tokens.accepts(f"Bearer {servers.token}".encode()) and len(tokens) == 1
    finally:
        await session.close()
    assert len(tokens) == 0  # revoked with the chat
