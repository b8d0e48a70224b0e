"""A test client for the Claude Code side: a plain WebSocket (the `websockets` library) speaking
the JSON-RPC messages the real client sends (see CONTRIBUTING.md, "Claude Code"), with every
frame it receives kept for the test to inspect. The real client itself runs in tests/conformance."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"roots": {}, "elicitation": {}},
    "clientInfo": {"name": "claude-code", "version": "2.1.331"},
}


class ClaudeClient:
    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.notifications: list[dict[str, Any]] = []
        self._ids = itertools.count()
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, port: int, token: str, handshake: bool = True, **options: Any) -> ClaudeClient:
        connection = await websockets.connect(
            f"ws://127.0.0.1:{port}/",
            subprotocols=[websockets.Subprotocol("mcp")],
            additional_headers={"X-Claude-Code-Ide-Authorization": token},
            max_size=None,
            **options,
        )
        client = cls(connection)
        if handshake:  # the real client's, in its order; the server's notifications follow its tools/list
            await client.request("initialize", INITIALIZE)
            await client.notify("notifications/initialized")
            await client.notify("ide_connected", {"pid": 1})
            await client.request("tools/list")
        return client

    async def _read(self) -> None:
        async for frame in self.connection:
            message = json.loads(frame)
            if "id" in message and message["id"] in self._replies:
                self._replies.pop(message["id"]).set_result(message)
            elif "method" in message and "id" not in message:
                self.notifications.append(message)
                self._arrived.set()

    async def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        request_id = next(self._ids)
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[request_id] = reply
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.connection.send(json.dumps(message))
        return await asyncio.wait_for(reply, timeout)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.connection.send(json.dumps(message))

    async def call(self, tool: str, arguments: dict[str, Any] | None = None, timeout: float = 30) -> list[str]:
        """Call a tool; returns the texts of its result (raises on a JSON-RPC or tool error)."""
        reply = await self.request("tools/call", {"name": tool, "arguments": arguments or {}}, timeout)
        if "error" in reply:
            raise ToolCallError(reply["error"].get("message", ""))
        result = reply["result"]
        texts = [item["text"] for item in result.get("content", []) if item.get("type") == "text"]
        if result.get("isError"):
            raise ToolCallError(" ".join(texts))
        return texts

    async def call_json(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        return json.loads((await self.call(tool, arguments))[0])

    async def notification(self, method: str, timeout: float = 10) -> dict[str, Any]:
        """The next notification `method` not yet taken (waits for it)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for index, message in enumerate(self.notifications):
                if message["method"] == method:
                    del self.notifications[index]
                    return message["params"]
            self._arrived.clear()
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"no {method} notification within {timeout} s")
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        await self.connection.close()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


class ToolCallError(Exception):
    pass
