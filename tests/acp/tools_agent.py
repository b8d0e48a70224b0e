"""A scripted ACP agent that uses the MCP servers its client gives it (issue #40), built on the SDK's
agent side (no hand-written JSON-RPC), and an MCP client on the pinned `mcp` library:
`python tools_agent.py`.

`initialize` answers `mcpCapabilities` from $TOOLS_AGENT_MCP (JSON, default `{}`: stdio only).
`session/new` and `session/load` write their params (as JSON, one line each) to $TOOLS_AGENT_RECORD.
A prompt `tools PATH` connects to every server of the session: an `http` entry with the Streamable
HTTP client and the entry's headers, a stdio entry by running its command with its env; on each it
lists the tools and calls `get_diagnostics`, `read_file` (`{"path": PATH}`) and `list_files` when
offered. The
results go to $TOOLS_AGENT_RECORD (one JSON line) and the reply says, per server, the tool names
and the texts the calls returned. Any other prompt: "ok".
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

RECORD = "TOOLS_AGENT_RECORD"


def record(entry: dict[str, Any]) -> None:
    path = os.environ.get(RECORD)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


async def use_server(server: dict[str, Any], path: str) -> dict[str, Any]:
    """The tools of one `mcpServers` entry and what get_diagnostics / read_file answered."""
    import httpx2
    from mcp.client import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    async def calls(session: ClientSession) -> dict[str, Any]:
        await session.initialize()
        names = sorted(tool.name for tool in (await session.list_tools()).tools)
        texts: dict[str, Any] = {}
        for name, arguments in (("get_diagnostics", {}), ("read_file", {"path": path}), ("list_files", {})):
            if name in names:
                result = await session.call_tool(name, arguments)
                texts[name] = {
                    "error": bool(result.is_error),
                    "text": "".join(getattr(block, "text", "") for block in result.content),
                }
        return {"name": server["name"], "tools": names, "calls": texts}

    try:
        if server.get("type") == "http":
            headers = {h["name"]: h["value"] for h in server["headers"]}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=None)) as http,
                streamable_http_client(server["url"], http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                return await calls(session)
        env = {e["name"]: e["value"] for e in server.get("env", [])}
        params = StdioServerParameters(command=server["command"], args=server["args"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await calls(session)
    except Exception as exc:
        return {"name": server["name"], "failed": repr(exc)}


async def serve() -> None:
    from acp import run_agent, text_block, update_agent_message
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        LoadSessionResponse,
        McpCapabilities,
        NewSessionResponse,
        PromptResponse,
    )

    class Agent:
        conn: Any = None

        def __init__(self) -> None:
            self.servers: list[dict[str, Any]] = []

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            mcp = McpCapabilities.model_validate(json.loads(os.environ.get("TOOLS_AGENT_MCP", "{}")))
            capabilities = AgentCapabilities(load_session=True, mcp_capabilities=mcp)
            return InitializeResponse(protocol_version=1, agent_capabilities=capabilities)

        def _opened(self, method: str, cwd: str, mcp_servers: list[Any]) -> None:
            self.servers = [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in mcp_servers]
            record({"method": method, "cwd": cwd, "mcpServers": self.servers})

        async def new_session(
            self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
        ) -> NewSessionResponse:
            self._opened("session/new", cwd, mcp_servers or [])
            return NewSessionResponse(session_id="t1")

        async def load_session(
            self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
        ) -> LoadSessionResponse:
            self._opened("session/load", cwd, mcp_servers or [])
            return LoadSessionResponse()

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            words = "".join(getattr(block, "text", "") for block in prompt).strip().split()
            if words[:1] == ["tools"] and len(words) == 2:
                results = [await use_server(server, words[1]) for server in self.servers]
                record({"method": "tools", "results": results})
                reply = json.dumps(results)
            else:
                reply = "ok"
            await self.conn.session_update(session_id, update_agent_message(text_block(reply)))
            return PromptResponse(stop_reason="end_turn")

    await run_agent(Agent())


if __name__ == "__main__":
    asyncio.run(serve())
