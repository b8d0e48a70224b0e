"""Load: many concurrent MCP sessions on one window server, tool calls plus a burst of context changes.

    .venv/bin/python bench/bench_load.py            # 20 sessions x 1000 calls, 2 rounds (a few minutes)
    .venv/bin/python bench/bench_load.py --quick    # 4 sessions x 100 calls (a smoke run)

The window server runs in this process on the companion's loop thread (as inside Sublime), with an
editor that accepts every review at once (proposals for `*.hold` paths wait, so that `closeDiff`
has a review to close and its returned text can be checked). The clients are the `mcp` SDK's client
in other processes, over loopback, each session with its own HTTP connections -- like separate
Gemini CLIs. Sessions are spread over `--procs` client processes (default 4) as asyncio tasks: on a
2-core machine twenty Python processes would mostly measure the scheduler and 20 x 60 MB of
interpreters, while the server sees the same thing either way (independent sessions on their own
TCP connections); `--procs 20` gives one process per session.

Each session calls, in turn: openDiff (accepted), openDiff (held), closeDiff (of the held one; its
text must be the proposal), tools/list. Meanwhile this process moves the window's active file
through `seq-000001.py` ... `seq-<burst>.py` at random short intervals; the 50 ms debounce coalesces
some changes by design. Checked for every session: no error; the context sequence it received never
goes backwards and ends at the final state; every `ide/diffAccepted` of every session arrived, with
the right content, in the order each session caused them. RSS of the server process is measured
after a warm-up round and after each round (after gc, once the sessions are gone); memory counts as
flat when the last round ends within --flat-mib of the first. Exits 1 unless all of that holds.

Prints a JSON summary and a Markdown row; writes bench/results/load.json unless --quick/--json-only.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _stats import percentile  # noqa: E402  (bench/, next to this script)

HOLD_SUFFIX = ".hold"


def seq_path(workspace: str, seq: int) -> str:
    return os.path.join(workspace, f"seq-{seq:06d}.py")


def seq_of(path: str) -> int:
    name = os.path.basename(path)
    return int(name[4:10]) if name.startswith("seq-") else 0


def accepted_path(workspace: str, session: int, index: int) -> str:
    return os.path.join(workspace, "load", f"s{session:03d}", f"f{index:05d}.txt")


# -- the client side (another process) --


async def run_session(
    url: str,
    token: str,
    number: int,
    calls: int,
    workspace: str,
    total_sessions: int,
    final_seq: int,
    go: asyncio.Event,
    ready: asyncio.Event,
    connected: list[int],
) -> dict[str, Any]:
    import httpx2
    import mcp_types as types
    from mcp.client import ClientSession, NotificationBinding
    from mcp.client.streamable_http import streamable_http_client
    from pydantic import BaseModel, ConfigDict

    class Params(BaseModel):
        model_config = ConfigDict(extra="allow")

    contexts: list[int] = []
    accepts: dict[int, list[int]] = {}
    bad_accepts: list[str] = []

    async def on_context(params: Params) -> None:
        files = params.model_dump()["workspaceState"]["openFiles"]
        contexts.append(seq_of(files[0]["path"]) if files else 0)

    async def on_accepted(params: Params) -> None:
        data = params.model_dump()
        path = data["filePath"]
        parts = path.split(os.sep)
        try:
            origin, index = int(parts[-2][1:]), int(parts[-1][1:6])
        except (ValueError, IndexError):
            bad_accepts.append(path)
            return
        if data["content"] != path + "\n":
            bad_accepts.append(f"{path}: wrong content")
        accepts.setdefault(origin, []).append(index)

    async def on_rejected(params: Params) -> None:
        bad_accepts.append(f"rejected: {params.model_dump()}")

    bindings = [
        NotificationBinding(method="ide/contextUpdate", params_type=Params, handler=on_context),
        NotificationBinding(method="ide/diffAccepted", params_type=Params, handler=on_accepted),
        NotificationBinding(method="ide/diffRejected", params_type=Params, handler=on_rejected),
    ]
    latencies: list[float] = []
    errors: list[str] = []
    started = finished = 0.0
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=None) as (read, write),
        ClientSession(
            read,
            write,
            client_info=types.Implementation(name=f"load-{number}", version="0"),
            notification_bindings=bindings,
        ) as session,
    ):
        await session.initialize()
        deadline = time.monotonic() + 60
        while not contexts and time.monotonic() < deadline:  # the stream is open: the first context came
            await asyncio.sleep(0.01)
        connected.append(number)
        ready.set()
        await go.wait()
        started = time.monotonic()
        held: tuple[str, str] | None = None
        for i in range(calls + (1 if calls % 4 in (2,) else 0)):
            kind = i % 4
            t0 = time.perf_counter()
            try:
                if kind == 0:
                    path = accepted_path(workspace, number, i // 4)
                    result = await session.call_tool("openDiff", {"filePath": path, "newContent": path + "\n"})
                elif kind == 1:
                    path = accepted_path(workspace, number, i // 4) + HOLD_SUFFIX
                    held = (path, f"held {number} {i}\n")
                    result = await session.call_tool("openDiff", {"filePath": path, "newContent": held[1]})
                elif kind == 2:
                    assert held is not None
                    result = await session.call_tool("closeDiff", {"filePath": held[0]})
                    text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
                    if json.loads(text) != {"content": held[1]}:
                        errors.append(f"closeDiff {held[0]} returned {text[:80]!r}")
                    held = None
                else:
                    listed = await session.list_tools()
                    if not {"openDiff", "closeDiff"} <= {t.name for t in listed.tools}:
                        errors.append("tools/list lacks openDiff/closeDiff")
                    result = None
                if result is not None and result.is_error:
                    errors.append(f"call {i}: {result.content}")
            except Exception as exc:
                errors.append(f"call {i}: {exc!r}")
            latencies.append((time.perf_counter() - t0) * 1000)
        finished = time.monotonic()
        # Wait for the final context and for every session's accepts (they are broadcast to everyone).
        expected_each = (calls + 3) // 4
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            complete = len(accepts) == total_sessions and all(len(v) >= expected_each for v in accepts.values())
            if contexts and contexts[-1] == final_seq and complete:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # anything arriving late (a duplicate, a reorder) is still seen
    reordered = sum(1 for a, b in itertools.pairwise(contexts) if b < a)
    accept_disorder = sum(1 for seen in accepts.values() for a, b in itertools.pairwise(seen) if b <= a)
    missing = sum(len(set(range(expected_each)) - set(accepts.get(origin, []))) for origin in range(total_sessions))
    return {
        "session": number,
        "latencies_ms": latencies,
        "errors": errors,
        "started": started,
        "finished": finished,
        "contexts_received": len(contexts),
        "context_final": contexts[-1] if contexts else None,
        "contexts_reordered": reordered,
        "accepts_received": sum(len(v) for v in accepts.values()),
        "accepts_missing": missing,
        "accepts_reordered": accept_disorder,
        "bad_notifications": bad_accepts[:20],
    }


async def client_main(
    url: str, token: str, first: int, count: int, calls: int, workspace: str, total_sessions: int, final_seq: int
) -> None:
    go = asyncio.Event()
    connected: list[int] = []
    readies = [asyncio.Event() for _ in range(count)]
    tasks = [
        asyncio.create_task(
            run_session(url, token, first + k, calls, workspace, total_sessions, final_seq, go, readies[k], connected)
        )
        for k in range(count)
    ]
    waiting = asyncio.gather(*(r.wait() for r in readies))
    done, _ = await asyncio.wait([asyncio.ensure_future(waiting), *tasks], return_when=asyncio.FIRST_COMPLETED)
    if any(t in done for t in tasks):  # a session failed before it was ready
        for task in tasks:
            if task.done() and task.exception():
                raise task.exception()  # type: ignore[misc]
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    line = await loop.run_in_executor(None, sys.stdin.readline)
    if line.strip() != "go":
        raise SystemExit("no go")
    go.set()
    results = await asyncio.gather(*tasks)
    print(json.dumps(results), flush=True)


# -- the server side (this process) --


class AcceptingEditor:
    """The Editor port of a user who accepts everything at once (held proposals wait for closeDiff)."""

    def __init__(self) -> None:
        self.shown = 0

    async def show_review(self, review: Any) -> None:
        self.shown += 1
        if not review.file_path.endswith(HOLD_SUFFIX):
            review.accept(review.proposal)

    async def close_review(self, review: Any) -> str:
        return review.proposal

    async def unsaved_text(self, path: str) -> str | None:
        return None

    async def write_through_buffer(self, path: str, text: str) -> bool:
        return False

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        raise AssertionError(f"a benchmark write failed: {reason}")


def rss() -> int:
    import psutil

    gc.collect()
    return psutil.Process().memory_info().rss


def run_round(handle: Any, workspace: str, sessions: int, calls: int, burst: int, procs: int) -> dict[str, Any]:
    from companion.core.context import Position

    procs = max(1, min(procs, sessions))
    handle.context.clear()  # every round starts from "nothing open" (sequence 0)
    time.sleep(0.2)  # past the debounce
    per_proc = [sessions // procs + (1 if k < sessions % procs else 0) for k in range(procs)]
    children = []
    first = 0
    for count in per_proc:
        argv = [
            sys.executable,
            os.path.abspath(__file__),
            "--client",
            handle.url,
            handle.token,
            str(first),
            str(count),
            str(calls),
            workspace,
            str(sessions),
            str(burst),
        ]
        children.append(
            subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT}
            )
        )
        first += count
    try:
        for child in children:
            assert child.stdout is not None
            line = child.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"a client process did not get ready: {line!r}")
        rng = random.Random(7)

        def change_context() -> None:
            for seq in range(1, burst + 1):
                handle.context.activate(seq_path(workspace, seq), Position(1, 1))
                time.sleep(rng.choice([0, 0.001, 0.005, 0.02, 0.06, 0.08]))  # some within the debounce, some not

        t0 = time.monotonic()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        burster = threading.Thread(target=change_context, name="context-burst")
        burster.start()
        results: list[dict[str, Any]] = []
        for child in children:
            out, _ = child.communicate(timeout=1800)
            if child.returncode != 0:
                raise RuntimeError(f"a client process failed with exit code {child.returncode}")
            results += json.loads(out.strip().splitlines()[-1])
        burster.join()
        wall = time.monotonic() - t0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    latencies = [x for r in results for x in r["latencies_ms"]]
    calling = max(r["finished"] for r in results) - min(r["started"] for r in results)
    return {
        "sessions": sessions,
        "client_processes": len(children),
        "calls": len(latencies),
        "calls_per_s": len(latencies) / calling if calling > 0 else 0.0,
        "p50_ms": statistics.median(latencies) if latencies else 0.0,
        "p99_ms": percentile(latencies, 99),
        "max_ms": max(latencies, default=0.0),
        "wall_s": wall,
        "errors": sum(len(r["errors"]) for r in results),
        "first_errors": [e for r in results for e in r["errors"]][:5],
        "context_burst": burst,
        "contexts_received_min": min(r["contexts_received"] for r in results),
        "contexts_received_max": max(r["contexts_received"] for r in results),
        "contexts_final_missing": sum(1 for r in results if r["context_final"] != burst),
        "contexts_reordered": sum(r["contexts_reordered"] for r in results),
        "accepts_received": sum(r["accepts_received"] for r in results),
        "accepts_missing": sum(r["accepts_missing"] for r in results),
        "accepts_reordered": sum(r["accepts_reordered"] for r in results),
        "bad_notifications": [b for r in results for b in r["bad_notifications"]][:5],
    }


def wait_for(check: Any, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 sessions x 100 calls, 1 round (a smoke run)")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--calls", type=int, default=1000, help="tool calls per session")
    parser.add_argument("--burst", type=int, default=300, help="context changes during the run")
    parser.add_argument("--procs", type=int, default=4, help="client processes the sessions are spread over")
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds (RSS is taken after each)")
    parser.add_argument("--flat-mib", type=float, default=5.0, help="RSS growth across rounds still counted as flat")
    parser.add_argument("--json-only", action="store_true", help="print only the JSON summary")
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.calls, args.burst, args.procs, args.rounds = 4, 100, 40, 2, 1

    from companion.runtime import Runtime

    mib = 1024 * 1024
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = os.path.join(tmp, "ws")
        os.makedirs(workspace)
        runtime = Runtime(discovery_directory=os.path.join(tmp, "ide"))
        handle = runtime.open_window(AcceptingEditor(), [workspace])
        handle.ready.result(30)
        try:
            server = handle.server
            assert server is not None

            def quiet() -> bool:  # every client has said goodbye (DELETE) and no review is left open
                return not handle.client_names() and len(server.reviews) == 0

            run_round(handle, workspace, 2, 40, 5, 1)  # warm-up: imports, pools, first allocations
            wait_for(quiet)
            rss_before = rss()
            rounds = []
            for _ in range(args.rounds):
                result = run_round(handle, workspace, args.sessions, args.calls, args.burst, args.procs)
                result["server_quiet_after"] = wait_for(quiet)
                result["rss_after_mib"] = rss() / mib
                rounds.append(result)
            summary = {
                "rounds": rounds,
                "rss_before_mib": rss_before / mib,
                "rss_after_mib": rounds[-1]["rss_after_mib"],
                "rss_growth_mib": rounds[-1]["rss_after_mib"] - rss_before / mib,
                # Growth from the first measured round to the last: what a leak per round would show.
                "rss_growth_after_first_round_mib": rounds[-1]["rss_after_mib"] - rounds[0]["rss_after_mib"],
                # Memory is flat when a later round, just as big, leaves RSS where the first left it
                # (the first round sets the allocator's high-water mark; a leak grows every round).
                "memory_flat": len(rounds) < 2
                or rounds[-1]["rss_after_mib"] - rounds[0]["rss_after_mib"] <= args.flat_mib,
                "ok": all(
                    r["errors"] == 0
                    and r["contexts_final_missing"] == 0
                    and r["contexts_reordered"] == 0
                    and r["accepts_missing"] == 0
                    and r["accepts_reordered"] == 0
                    and not r["bad_notifications"]
                    and r["server_quiet_after"]
                    for r in rounds
                ),
            }
            summary["ok"] = summary["ok"] and summary["memory_flat"]
        finally:
            runtime.stop()
    print(json.dumps(summary, indent=None if args.json_only else 2), flush=True)
    if args.json_only:
        return
    last = summary["rounds"][-1]
    print()
    print("| Load | calls/s | p50 | p99 | errors | lost / reordered notifications | RSS before → after |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {last['sessions']} sessions × {args.calls} calls, {args.burst} context changes "
        f"| {last['calls_per_s']:.0f} | {last['p50_ms']:.1f} ms | {last['p99_ms']:.1f} ms | {last['errors']} "
        f"| {last['contexts_final_missing'] + last['accepts_missing']} / "
        f"{last['contexts_reordered'] + last['accepts_reordered']} "
        f"| {summary['rss_before_mib']:.1f} → {summary['rss_after_mib']:.1f} MiB |"
    )
    if not args.quick:
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "load.json"), "w") as out:
            json.dump({k: v for k, v in summary.items()}, out, indent=2)
    if not summary["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, token, first, count, calls, workspace, total, final = sys.argv[2:10]
        asyncio.run(client_main(url, token, int(first), int(count), int(calls), workspace, int(total), int(final)))
    else:
        main()
