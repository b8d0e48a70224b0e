"""A test client for window servers: the `mcp` SDK's own client, set up the way Gemini CLI connects.

The SDK client drops custom notifications unless a binding is registered for each method, so every
`ide/*` method gets one; what arrives is recorded in order with its receipt time.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client import ClientSession, NotificationBinding
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict

IDE_METHODS = ("ide/contextUpdate", "ide/diffAccepted", "ide/diffRejected")


class _Params(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass
class Received:
    method: str
    params: dict[str, Any]
    at: float


@dataclass
class IdeClient:
    session: ClientSession
    received: list[Received] = field(default_factory=list)

    def of(self, method: str) -> list[dict[str, Any]]:
        return [r.params for r in self.received if r.method == method]

    async def wait_for(
        self, method: str, predicate: Callable[[dict[str, Any]], bool] = lambda _: True, timeout: float = 20
    ) -> dict[str, Any]:
        """The first `method` notification (already received or arriving) that satisfies `predicate`."""
        with anyio.fail_after(timeout):
            while True:
                for params in self.of(method):
                    if predicate(params):
                        return params
                await anyio.sleep(0.01)

    async def open_diff(self, file_path: str, new_content: str) -> types.CallToolResult:
        return await self.session.call_tool("openDiff", {"filePath": file_path, "newContent": new_content})

    async def close_diff(self, file_path: str) -> types.CallToolResult:
        return await self.session.call_tool("closeDiff", {"filePath": file_path})


@asynccontextmanager
async def connect(url: str, token: str, name: str = "test-client") -> AsyncIterator[IdeClient]:
    """A connected, initialized client whose notification stream is open."""
    client: IdeClient | None = None

    def binding(method: str) -> NotificationBinding[_Params]:
        async def handler(params: _Params) -> None:
            assert client is not None
            client.received.append(Received(method, params.model_dump(), time.monotonic()))

        return NotificationBinding(method=method, params_type=_Params, handler=handler)

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(
            read,
            write,
            client_info=types.Implementation(name=name, version="0"),
            notification_bindings=[binding(m) for m in IDE_METHODS],
        ) as session,
    ):
        client = IdeClient(session)
        await session.initialize()
        yield client


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))
