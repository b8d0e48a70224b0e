"""Scale: a context fed by 500 open views, openDiff with an 8 MB file, list_files on a big tree,
read_file at its size limit.

    .venv/bin/python bench/bench_scale.py            # full sizes (100 000 files; about a minute)
    .venv/bin/python bench/bench_scale.py --quick    # small sizes (a smoke run)

The tracker is measured in this process. Everything else goes through a real window server on the
companion's loop thread (with an editor that accepts every review and the workspace tools) and the
`mcp` SDK's client in a second process, over loopback, as a client would see it. Prints a Markdown
table (and the raw numbers as JSON); writes bench/results/scale.json unless --quick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def ms(seconds: float) -> float:
    return seconds * 1000


# -- the client (another process): runs the commands it reads on stdin, one JSON line each --


async def client_main(url: str, token: str) -> None:
    import httpx2
    import mcp_types as types
    from mcp.client import ClientSession, NotificationBinding
    from mcp.client.streamable_http import streamable_http_client
    from pydantic import BaseModel, ConfigDict

    class Params(BaseModel):
        model_config = ConfigDict(extra="allow")

    received: list[tuple[float, str, dict[str, Any]]] = []

    def binding(method: str) -> NotificationBinding[Params]:
        async def handler(params: Params) -> None:
            received.append((time.monotonic(), method, params.model_dump()))

        return NotificationBinding(method=method, params_type=Params, handler=handler)

    async def wait(predicate: Any, timeout: float = 120) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, method, params in received:
                if predicate(method, params):
                    return at, params
            await asyncio.sleep(0.002)
        raise TimeoutError("the expected notification did not arrive")

    loop = asyncio.get_running_loop()
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120, read=600)) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(
            read, write, notification_bindings=[binding(m) for m in ("ide/contextUpdate", "ide/diffAccepted")]
        ) as session,
    ):
        await session.initialize()
        await wait(lambda m, p: m == "ide/contextUpdate")
        print(json.dumps({"ready": True}), flush=True)
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            command = json.loads(line)
            kind = command["kind"]
            if kind == "context":  # wait for the context whose active file is `path`
                at, params = await wait(
                    lambda m, p, want=command["path"]: (
                        m == "ide/contextUpdate"
                        and p["workspaceState"]["openFiles"]
                        and p["workspaceState"]["openFiles"][0]["path"] == want
                    )
                )
                out = {"at": at, "files": len(params["workspaceState"]["openFiles"])}
            elif kind == "call":
                samples, sizes, errors, accepted_ms, accepted_sizes = [], [], 0, [], []
                for i in range(command["repeat"]):
                    arguments = dict(command["arguments"])
                    if "filePath" in arguments:
                        arguments["filePath"] = f"{arguments['filePath']}.{i}"
                    started = time.monotonic()
                    t0 = time.perf_counter()
                    result = await session.call_tool(command["tool"], arguments)
                    samples.append(ms(time.perf_counter() - t0))
                    errors += bool(result.is_error)
                    sizes.append(sum(len(b.text) for b in result.content if isinstance(b, types.TextContent)))
                    if command["tool"] == "openDiff":
                        path = arguments["filePath"]
                        at, params = await wait(
                            lambda m, p, path=path: m == "ide/diffAccepted" and p["filePath"] == path
                        )
                        accepted_ms.append(ms(at - started))  # call to the outcome notification with 8 MB in it
                        accepted_sizes.append(len(params["content"]))
                out = {
                    "samples_ms": samples,
                    "errors": errors,
                    "sizes": sizes,
                    "accepted_ms": accepted_ms,
                    "accepted_sizes": accepted_sizes,
                }
            else:
                return
            print(json.dumps(out), flush=True)


# -- this process --


def tracker_numbers(views: int) -> dict[str, Any]:
    from companion.core.context import ContextTracker, Position
    from companion.gemini_ide.protocol import CONTEXT_UPDATE
    from companion.gemini_ide.wire import validated_params

    tracker = ContextTracker()
    paths = [f"/project/src/module_{i:04d}/file_{i:04d}.py" for i in range(views)]
    t0 = time.perf_counter()
    for i, path in enumerate(paths):
        tracker.activate(path, Position(i % 300 + 1, 5), "selected text " * (i % 4))
    feed = time.perf_counter() - t0
    builds, validations = [], []
    for _ in range(300):
        t0 = time.perf_counter()
        params = tracker.params()
        t1 = time.perf_counter()
        validated_params(CONTEXT_UPDATE, params)
        builds.append(t1 - t0)
        validations.append(time.perf_counter() - t1)
    sent = len(tracker.params()["workspaceState"]["openFiles"])
    for path in reversed(paths[-10:]):  # the user closes the ten most recent views
        tracker.close(path)
    after_close = len(tracker.params()["workspaceState"]["openFiles"])
    return {
        "views": views,
        "feed_total_ms": ms(feed),
        "feed_per_view_us": feed / views * 1e6,
        "params_build_us": statistics.median(builds) * 1e6,
        "validate_us": statistics.median(validations) * 1e6,
        "files_sent": sent,
        "files_after_closing_10_most_recent": after_close,
    }


class AcceptingEditor:
    async def show_review(self, review: Any) -> None:
        review.accept(review.proposal)

    async def close_review(self, review: Any) -> str:
        return review.proposal

    async def unsaved_text(self, path: str) -> str | None:
        return None

    async def write_through_buffer(self, path: str, text: str) -> bool:
        return False

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        raise AssertionError(f"a benchmark write failed: {reason}")


def make_tree(root: str, files: int) -> None:
    per_dir = 500
    for d in range((files + per_dir - 1) // per_dir):
        folder = os.path.join(root, "tree", f"pkg_{d:04d}")
        os.makedirs(folder, exist_ok=True)
        for f in range(min(per_dir, files - d * per_dir)):
            with open(os.path.join(folder, f"mod_{f:04d}.py"), "w") as out:
                out.write("x = 1\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args()
    views, big, diffs, tree_files, reads = (
        (500, 8 * 1024 * 1024, 2, 5_000, 5) if args.quick else (500, 8 * 1024 * 1024, 10, 100_000, 50)
    )

    from companion.core.context import Position
    from companion.mcp_tools.factory import tool_factory
    from companion.mcp_tools.settings import WorkspaceToolSettings
    from companion.runtime import Runtime

    results: dict[str, Any] = {"tracker": tracker_numbers(views)}
    settings = WorkspaceToolSettings(list_limit=tree_files + 1000)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = os.path.join(tmp, "ws")
        os.makedirs(workspace)
        t0 = time.perf_counter()
        make_tree(workspace, tree_files)
        results["tree_build_s"] = time.perf_counter() - t0
        limit = settings.read_limit_bytes
        with open(os.path.join(workspace, "at_limit.txt"), "w") as out:
            out.write(("y" * 99 + "\n") * (limit // 100) + "z" * (limit % 100))
        runtime = Runtime(discovery_directory=os.path.join(tmp, "ide"))
        handle = runtime.open_window(AcceptingEditor(), [workspace], tool_factory=tool_factory(settings))
        handle.ready.result(30)
        child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--client", handle.url, handle.token],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": ROOT},
        )
        assert child.stdin is not None and child.stdout is not None

        def ask(command: dict[str, Any]) -> dict[str, Any]:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps(command) + "\n")
            child.stdin.flush()
            return json.loads(child.stdout.readline())

        try:
            assert json.loads(child.stdout.readline())["ready"]
            # 500 views opened one after another, as when a project's session is restored.
            paths = [os.path.join(workspace, f"view_{i:04d}.py") for i in range(views)]
            t0 = time.monotonic()
            for path in paths:
                handle.context.activate(path, Position(1, 1))
            fed = time.monotonic()
            seen = ask({"kind": "context", "path": paths[-1]})
            results["context_500_views"] = {
                "feed_ms": ms(fed - t0),
                "last_change_to_client_ms": ms(seen["at"] - fed),  # includes the 50 ms debounce
                "files_in_update": seen["files"],
            }
            content = ("x" * 63 + "\n") * (big // 64)
            diff = ask(
                {
                    "kind": "call",
                    "tool": "openDiff",
                    "repeat": diffs,
                    "arguments": {"filePath": os.path.join(workspace, "big.txt"), "newContent": content},
                }
            )
            results["openDiff_8MB"] = {
                **_stats(diff["samples_ms"]),
                "errors": diff["errors"],
                "to_accepted_p50_ms": statistics.median(diff["accepted_ms"]),
                "accepted_content_ok": all(s == len(content) for s in diff["accepted_sizes"]),
            }
            listing = ask({"kind": "call", "tool": "list_files", "repeat": 3 if args.quick else 5, "arguments": {}})
            results[f"list_files_{tree_files}"] = {
                **_stats(listing["samples_ms"]),
                "errors": listing["errors"],
                "output_chars": listing["sizes"][-1],
            }
            reading = ask({"kind": "call", "tool": "read_file", "repeat": reads, "arguments": {"path": "at_limit.txt"}})
            results["read_file_at_limit"] = {
                **_stats(reading["samples_ms"]),
                "errors": reading["errors"],
                "bytes": limit,
            }
        finally:
            child.stdin.close()
            child.wait(30)
            runtime.stop()
    print(json.dumps(results, indent=2))
    t = results["tracker"]
    c = results["context_500_views"]
    d = results["openDiff_8MB"]
    lf = results[f"list_files_{tree_files}"]
    rf = results["read_file_at_limit"]
    print()
    print("| Scale | Result |")
    print("|---|---|")
    print(
        f"| ContextTracker: feed {t['views']} views | {t['feed_total_ms']:.1f} ms "
        f"({t['feed_per_view_us']:.1f} µs/view) |"
    )
    print(
        f"| Build + validate one context (10 files sent of {t['views']}) | {t['params_build_us']:.0f} µs + "
        f"{t['validate_us']:.0f} µs |"
    )
    print(
        f"| {views} views opened → client has the final context | {c['last_change_to_client_ms']:.0f} ms after "
        f"the last change (50 ms debounce included), {c['files_in_update']} files |"
    )
    print(
        f"| openDiff 8 MB round trip (n={d['n']}) | p50 {d['p50_ms']:.0f} ms, max {d['max_ms']:.0f} ms, "
        f"errors {d['errors']}; to ide/diffAccepted (8 MB back) p50 {d['to_accepted_p50_ms']:.0f} ms |"
    )
    print(
        f"| list_files on {tree_files} files (n={lf['n']}) | p50 {lf['p50_ms']:.0f} ms, max {lf['max_ms']:.0f} ms, "
        f"{lf['output_chars']} chars |"
    )
    print(
        f"| read_file at the {rf['bytes'] // 1024} KiB limit (n={rf['n']}) | p50 {rf['p50_ms']:.1f} ms, "
        f"max {rf['max_ms']:.1f} ms |"
    )
    print(
        f"| Files in context after closing the 10 most recent of {t['views']} views | "
        f"{t['files_after_closing_10_most_recent']} |"
    )
    if not args.quick:
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "scale.json"), "w") as out:
            json.dump(results, out, indent=2)


def _stats(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": statistics.median(samples), "max_ms": max(samples), "n": len(samples)}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        asyncio.run(client_main(sys.argv[2], sys.argv[3]))
    else:
        main()
