"""A scripted ACP agent whose optional capabilities the test chooses, on the SDK's agent side (no
hand-written JSON-RPC): `python capable_agent.py [CAPABILITY...]`.

Capabilities: `image` (`promptCapabilities.image`), `folders`
(`sessionCapabilities.additionalDirectories`). It always offers `loadSession`. Each session/new,
session/load and prompt is appended to $CAPABLE_AGENT_RECORD as one JSON line, `{"method": ...,
"params": ...}` in the wire's camelCase, as the SDK parsed it; a prompt is answered "ok".
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

REPLY = "ok"


async def serve(capabilities: set[str]) -> None:
    from acp import run_agent, text_block, update_agent_message
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        LoadSessionResponse,
        NewSessionResponse,
        PromptCapabilities,
        PromptResponse,
        SessionAdditionalDirectoriesCapabilities,
        SessionCapabilities,
    )

    def record(method: str, params: dict[str, Any]) -> None:
        path = os.environ.get("CAPABLE_AGENT_RECORD")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"method": method, "params": params}) + "\n")

    def dumped(value: Any) -> Any:
        if isinstance(value, list):
            return [dumped(v) for v in value]
        if hasattr(value, "model_dump"):
            return value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return value

    class Agent:
        conn: Any = None

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            folders = SessionAdditionalDirectoriesCapabilities() if "folders" in capabilities else None
            offered = AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image="image" in capabilities),
                session_capabilities=SessionCapabilities(additional_directories=folders),
            )
            return InitializeResponse(protocol_version=1, agent_capabilities=offered)

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            record("session/new", {"cwd": cwd, **_camel(kwargs, dumped)})
            return NewSessionResponse(session_id="s1")

        async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
            record("session/load", {"cwd": cwd, "sessionId": session_id, **_camel(kwargs, dumped)})
            return LoadSessionResponse()

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            record("session/prompt", {"sessionId": session_id, "prompt": dumped(prompt)})
            await self.conn.session_update(session_id, update_agent_message(text_block(REPLY)))
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(Agent())  # type: ignore[arg-type]


def _camel(params: dict[str, Any], dumped: Any) -> dict[str, Any]:
    """The SDK hands the agent snake_case keyword arguments: back to the wire's names."""
    names = {"additional_directories": "additionalDirectories", "mcp_servers": "mcpServers"}
    return {names.get(k, k): dumped(v) for k, v in params.items() if v is not None and k in names}


if __name__ == "__main__":
    asyncio.run(serve(set(sys.argv[1:])))
