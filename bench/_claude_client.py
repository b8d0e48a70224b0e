"""Benchmark client for Claude Code's side (a separate process, like Claude Code): a plain
WebSocket client sending the messages the real client sends (tests/claude_client.py).

argv: port token mode count size. Prints one JSON line with raw samples (milliseconds) or
notification receipts (system-wide monotonic clock, comparable with the server's trigger times).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.claude_client import ClaudeClient


async def main(port: int, token: str, mode: str, count: int, size: int) -> dict[str, Any]:
    client = await ClaudeClient.connect(port, token)
    try:
        if mode == "roundtrip":
            content = ("x" * 63 + "\n") * (size // 64)
            samples = []
            for i in range(count):
                path = f"/bench/claude-{i}.txt"
                arguments = {
                    "old_file_path": path,
                    "new_file_path": path,
                    "new_file_contents": content,
                    "tab_name": str(i),
                }
                start = time.perf_counter()
                answer = await client.call("openDiff", arguments, timeout=300)
                samples.append((time.perf_counter() - start) * 1000)
                assert answer[0] == "FILE_SAVED" and len(answer[1]) == len(content), answer[0]
            return {"samples_ms": samples}
        if mode == "notify":
            print("ready", flush=True)
            receipts: list[tuple[float, str]] = []
            deadline = time.monotonic() + 120
            while len(receipts) < count and time.monotonic() < deadline:
                params = await client.notification("selection_changed", max(0.1, deadline - time.monotonic()))
                receipts.append((time.monotonic(), params["filePath"]))
            return {"receipts": receipts}
    finally:
        await client.close()
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    port, token, mode, count, size = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    print(json.dumps(asyncio.run(main(port, token, mode, count, size))), flush=True)
