"""Benchmark client (a separate process, like Gemini CLI): the SDK's client over loopback.

Reads the server's URL and token from argv, runs the requested measurement and prints one JSON
line with raw samples (milliseconds). Monotonic clocks are system-wide, so receipt times can be
compared with trigger times taken in the server's process.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx2
from mcp.client import ClientSession, NotificationBinding
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    model_config = ConfigDict(extra="allow")


async def main(url: str, token: str, mode: str, count: int, size: int) -> dict[str, Any]:
    received: list[tuple[float, str, dict[str, Any]]] = []
    arrived = asyncio.Event()

    def binding(method: str) -> NotificationBinding[Params]:
        async def handler(params: Params) -> None:
            received.append((time.monotonic(), method, params.model_dump()))
            arrived.set()

        return NotificationBinding(method=method, params_type=Params, handler=handler)

    bindings = [binding(m) for m in ("ide/contextUpdate", "ide/diffAccepted", "ide/diffRejected")]
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(read, write, notification_bindings=bindings) as session,
    ):
        await session.initialize()
        await asyncio.sleep(0.2)  # the stream is open and the initial context has arrived
        if mode in ("roundtrip", "answer"):
            content = ("x" * 63 + "\n") * (size // 64)
            samples = []
            for i in range(count):
                start = time.perf_counter()
                await session.call_tool("openDiff", {"filePath": f"/bench/file-{i}.txt", "newContent": content})
                samples.append((time.perf_counter() - start) * 1000)
            if mode == "answer":  # the reviews stay open, as while the user reads them: no outcomes
                return {"samples_ms": samples, "outcomes": 0}
            # every review was accepted by the server's editor: wait for the outcomes
            deadline = time.monotonic() + 60
            while sum(1 for r in received if r[1] == "ide/diffAccepted") < count and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            outcomes = sum(1 for r in received if r[1] == "ide/diffAccepted")
            return {"samples_ms": samples, "outcomes": outcomes}
        if mode == "notify":
            print("ready", flush=True)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                contexts = [r for r in received if r[1] == "ide/contextUpdate"]
                if len(contexts) > count:
                    break
                await asyncio.sleep(0.01)
            receipts = [(t, p) for t, m, p in received if m == "ide/contextUpdate"][1:]
            return {"receipts": [[t, p["workspaceState"]["openFiles"][0]["path"]] for t, p in receipts]}
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    url, token, mode, count, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    print(json.dumps(asyncio.run(main(url, token, mode, count, size))), flush=True)
