"""The mcpServers a chat's agent is handed (core/server/chat_servers.py): each of the user's
servers only where the agent takes its transport, the window's tools over HTTP or the stdio bridge,
one chat token from the first session to the chat's end."""

from __future__ import annotations

from companion.core.server.chat_servers import AgentTransports, ChatServers, WindowTools, parse_config
from companion.core.server.chat_tokens import BRIDGE_TOKEN_ENV, ChatTokens

USER = parse_config(
    {
        "mcpServers": {
            "lint": {"command": "lint", "args": ["--stdio"]},
            "docs": {"type": "http", "url": "https://docs.example/mcp"},
            "old": {"type": "sse", "url": "https://old.example/sse", "headers": {"X-Key": "k"}},
        }
    },
    "test",
)


def names(entries: list[dict[str, object]]) -> list[object]:
    return [e["name"] for e in entries]


def test_an_agent_that_takes_sse_only_gets_the_sse_server_and_the_bridge() -> None:
    tokens = ChatTokens()
    servers = ChatServers(WindowTools(4242, tokens, "/usr/bin/python3", {"PYTHONPATH": "/pkg"}), USER)
    entries, notices = servers.entries(AgentTransports(sse=True))
    assert names(entries) == ["sublime", "lint", "old"]
    bridge = entries[0]
    assert bridge["command"] == "/usr/bin/python3" and bridge["args"] == ["-m", "companion", "bridge", "--port", "4242"]
    assert {"name": BRIDGE_TOKEN_ENV, "value": servers.token} in bridge["env"]  # type: ignore[operator]
    assert entries[2] == {
        "type": "sse",
        "name": "old",
        "url": "https://old.example/sse",
        "headers": [{"name": "X-Key", "value": "k"}],
    }
    assert notices == ["Not sent to this agent, which does not take their transport: docs (http)."]


def test_one_token_per_chat_for_every_session_and_none_after_its_end() -> None:
    tokens = ChatTokens()
    servers = ChatServers(WindowTools(4242, tokens), [])
    first, _ = servers.entries(AgentTransports(http=True))
    again, _ = servers.entries(AgentTransports(http=True))  # session/load after session/new
    assert first == again and len(tokens) == 1
    assert tokens.accepts(f"Bearer {servers.token}".encode())
    token = servers.token
    servers.end()
    assert not tokens.accepts(f"Bearer {token}".encode()) and len(tokens) == 0


def test_without_http_or_a_python_for_the_bridge_the_agent_is_told_it_gets_no_window_tools() -> None:
    entries, notices = ChatServers(WindowTools(4242, ChatTokens(), None), []).entries(AgentTransports())
    assert entries == [] and len(notices) == 1 and "bridge_python" in notices[0]
