"""Memory a session without a notification stream makes the server hold (issue #24, 8).

    .venv/bin/python bench/bench_held.py [--reviews 40] [--mib 5]

The server runs in this process on the companion's loop thread; its editor accepts every review the
instant it is shown. A client in another process initializes a session as Gemini CLI does but never
opens the GET stream, then calls openDiff `--reviews` times with `--mib` MiB each; every accept is
an `ide/diffAccepted` carrying the full content, queued for that session. Prints the server
process's RSS growth (after gc and, on Linux, malloc_trim, so freed memory is not counted) and what
the session holds. Run it at two commits to compare (see bench/README.md).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import psutil  # noqa: E402

from companion.headless.editor import HeadlessEditor  # noqa: E402
from companion.runtime import Runtime  # noqa: E402

CLIENT = r"""
import json, sys, httpx2 as httpx
url, token, workspace, reviews, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
with httpx.Client(headers=headers, timeout=120) as http:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "no-stream", "version": "0"}}}
    session = http.post(url, json=init).headers["mcp-session-id"]
    http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
              headers={"mcp-session-id": session})
    for i in range(reviews):
        call = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "openDiff",
                "arguments": {"filePath": f"{workspace}/f{i}.txt", "newContent": chr(97 + i % 26) * size}}}
        assert http.post(url, json=call, headers={"mcp-session-id": session}).status_code == 200
print("done", flush=True)
sys.stdin.read()  # keep the session until the server has been measured
"""


def settled_rss() -> int:
    gc.collect()
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return psutil.Process().memory_info().rss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reviews", type=int, default=40)
    parser.add_argument("--mib", type=int, default=5)
    args = parser.parse_args()
    workspace = tempfile.mkdtemp()
    runtime = Runtime(discovery_directory=os.path.join(workspace, ".discovery"))
    handle = runtime.open_window(HeadlessEditor("accept"), [workspace])
    handle.ready.result(30)
    time.sleep(0.5)
    before = settled_rss()
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, handle.url, handle.token, workspace, str(args.reviews), str(args.mib << 20)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdout is not None and client.stdout.readline().strip() == "done"
    time.sleep(0.5)  # the last outcome has been queued
    after = settled_rss()

    async def held() -> dict[str, int]:
        assert handle.gemini is not None
        sessions = handle.gemini.broadcaster.clients()
        # Before the bound the outbox was an asyncio.Queue (its items in `_queue`): so both commits can be measured.
        queued = [params for s in sessions for _, params in getattr(s.outbox, "_queue", s.outbox)]
        return {"notifications": len(queued), "content_mib": sum(len(p.get("content", "")) for p in queued) >> 20}

    outbox = runtime.submit(held).result(10)
    client.communicate("", timeout=30)
    runtime.stop()
    mib = 1 << 20
    result = {
        "reviews": args.reviews,
        "mib_each": args.mib,
        "rss_growth_mib": round((after - before) / mib, 1),
        **outbox,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
