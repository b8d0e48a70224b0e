"""Core benchmarks: openDiff round trip, notification latency, start time, memory.

    .venv/bin/python bench/bench_core.py [--quick]

The server runs in this process on the companion's loop thread (as inside Sublime). The clients run
in other processes over loopback: the `mcp` SDK's Python client, and Gemini CLI's own IdeClient
(Node, from tests/conformance/node_modules) when it is installed. openDiff is timed in two windows:
one whose editor leaves each review open (as while the user reads it) and one whose editor accepts
each review the instant it is shown, so the answer and its `ide/diffAccepted` travel in the same
moments. The server's own share of each call is timed inside the server (the outermost ASGI app). Prints a
Markdown table and writes bench/results/core.json (not with --quick). Numbers are medians and
percentiles of one run on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import _ide  # noqa: E402  (bench/, next to this script)
from _stats import percentile  # noqa: E402
from starlette.types import Receive, Scope, Send  # noqa: E402

from companion.core.context import Position  # noqa: E402
from companion.core.reviews import Review  # noqa: E402
from companion.core.server.security import RequestGuard  # noqa: E402
from companion.headless.editor import HeadlessEditor  # noqa: E402
from companion.runtime import Runtime  # noqa: E402

CLIENT = os.path.join(ROOT, "bench", "_client.py")


class ReadingEditor(HeadlessEditor):
    """Shows every review and leaves it open, as while the user reads it: no outcome is sent, so
    each answer travels alone (with an accepting editor, ide/diffAccepted goes out in the same moments)."""

    async def show_review(self, review: Review) -> None:
        pass

    async def close_review(self, review: Review) -> str:
        return review.proposal


def client(handle, mode: str, count: int, size: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, CLIENT, handle.url, handle.token, mode, str(count), str(size)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )


SERVER_MS: list[float] = []  # time each POST spent in the server, from its arrival to its answer


def time_server_requests() -> None:
    """Record how long the server spends on each POST (the outermost ASGI app, so everything from
    the parsed request to the last byte of the answer handed to the socket)."""
    handle_request = RequestGuard.__call__

    async def timed(self: RequestGuard, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        await handle_request(self, scope, receive, send)
        if scope["type"] == "http" and scope.get("method") == "POST":
            SERVER_MS.append((time.perf_counter() - start) * 1000)

    RequestGuard.__call__ = timed  # type: ignore[method-assign]


def roundtrip(handle, count: int, size: int, mode: str = "roundtrip") -> dict[str, float]:
    """openDiff `count` times from the SDK client in another process, one call at a time (mode
    "answer": the editor leaves the reviews open, so no outcomes are awaited)."""
    SERVER_MS.clear()
    proc = client(handle, mode, count, size)
    out, _ = proc.communicate(timeout=600)
    data = json.loads(out.strip().splitlines()[-1])
    warm = min(20, count // 10)
    samples = data["samples_ms"][warm:]  # drop warm-up calls
    server = SERVER_MS[-len(samples) :]  # the calls' own POSTs (initialize and friends came first)
    return {
        "p50_ms": statistics.median(samples),
        "p99_ms": percentile(samples, 99),
        "server_p50_ms": statistics.median(server),
        "server_p99_ms": percentile(server, 99),
        "n": len(samples),
        "outcomes": data["outcomes"],
    }


IDE_CLIENT_BENCH = os.path.join(ROOT, "bench", "ide_client_bench.mjs")


def ide_client_roundtrip(
    workspace: str, tmpdir: str, count: int, size: int, answer_only: bool = False
) -> dict[str, object]:
    """openDiff through Gemini CLI's own IdeClient (Node): the call's answer, and (unless
    `answer_only`) the whole loop to the outcome notification. Skipped, with the reason, when Node
    or the client is not installed."""
    node = _ide.node()
    if node is None:
        return {"skipped": _ide.MISSING}
    env = _ide.client_env(os.getpid(), tmpdir)  # the "editor" is this process (the runtime's default PID)
    timings = run_ide_client_bench(
        node, workspace, env, [str(count), str(size), *(["answer-only"] if answer_only else [])]
    )
    return ide_client_summary(timings, count, answer_only)


def run_ide_client_bench(node: str, workspace: str, env: dict[str, str], arguments: list[str]) -> Any:
    """ide_client_bench.mjs run in `workspace`: the timings it prints."""
    out = subprocess.run(
        [node, IDE_CLIENT_BENCH, *arguments],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def ide_client_summary(data: dict[str, list[float]], count: int, answer_only: bool = False) -> dict[str, object]:
    """p50 and p99 of one client's timings from ide_client_bench.mjs, warm-up calls dropped."""
    warm = min(20, count // 10)
    result: dict[str, object] = {}
    for key in ("answer",) if answer_only else ("answer", "outcome"):
        samples = data[f"{key}_ms"][warm:]
        result[key] = {"p50_ms": statistics.median(samples), "p99_ms": percentile(samples, 99), "n": len(samples)}
    return result


def notification_latency(handle, workspace: str, count: int) -> dict[str, float]:
    proc = client(handle, "notify", count)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    triggers: dict[str, float] = {}
    for i in range(count):
        path = os.path.join(workspace, f"file-{i}.py")
        triggers[path] = time.monotonic()
        handle.context.activate(path, Position(1, 1), None)
        time.sleep(0.08)  # longer than the debounce: each change is its own notification
    out, _ = proc.communicate(timeout=120)
    receipts = json.loads(out.strip().splitlines()[-1])["receipts"]
    beyond = [(t - triggers[p]) * 1000 - 50 for t, p in receipts if p in triggers]
    return {"p50_ms": statistics.median(beyond), "p99_ms": percentile(beyond, 99), "n": len(beyond)}


START_SNIPPET = """
import time, sys, tempfile
t0 = time.perf_counter()
from companion.headless.editor import HeadlessEditor
from companion.runtime import Runtime
r = Runtime(discovery_directory=tempfile.mkdtemp())
h = r.open_window(HeadlessEditor("accept"), [tempfile.gettempdir()])
h.ready.result(30)
t1 = time.perf_counter()
r.stop()
import json, os, sysconfig
purelib = sysconfig.get_paths()["purelib"] + os.sep
files = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
libraries = sorted({f[len(purelib) :].split(os.sep)[0] for f in files if f.startswith(purelib)})
print(json.dumps({"seconds": t1 - t0, "companion": sys.modules["companion"].__file__, "libraries": libraries}))
"""


def run_start(env: dict[str, str], cwd: str) -> dict[str, Any]:
    return json.loads(subprocess.check_output([sys.executable, "-c", START_SNIPPET], env=env, cwd=cwd))


def start_time(runs: int) -> dict[str, float]:
    """Start to listening, imports included, in a fresh process. Cold: the libraries and the package
    have no bytecode yet (the first start after installing or upgrading; Python then writes it);
    warm: every later start. The standard library keeps its bytecode (it comes with Sublime's Python,
    not from Package Control). Each run copies the libraries the start imports (without __pycache__)
    to a scratch folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    purelib = sysconfig.get_paths()["purelib"]
    libraries = run_start({**env, "PYTHONPATH": ROOT}, ROOT)["libraries"]
    skip_bytecode = shutil.ignore_patterns("__pycache__")
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as scratch:
            lib = os.path.join(scratch, "lib")
            for name in [*libraries, "companion"]:
                source = os.path.join(ROOT if name == "companion" else purelib, name)
                if os.path.isdir(source):
                    shutil.copytree(source, os.path.join(lib, name), ignore=skip_bytecode)
                else:
                    os.makedirs(lib, exist_ok=True)
                    shutil.copy2(source, lib)
            fresh = {**env, "PYTHONPATH": lib}
            first = run_start(fresh, scratch)
            assert first["companion"].startswith(lib), first["companion"]  # not the checkout's copy
            cold.append(first["seconds"])
            warm.append(run_start(fresh, scratch)["seconds"])
    return {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm)}


RSS_SNIPPET = """
import json, os, tempfile, psutil
from companion.headless.editor import HeadlessEditor
from companion.runtime import Runtime
p = psutil.Process()
base = p.memory_info().rss
r = Runtime(discovery_directory=tempfile.mkdtemp())
hs = [r.open_window(HeadlessEditor("accept"), [tempfile.gettempdir()])]
hs[0].ready.result(30)
one = p.memory_info().rss
hs += [r.open_window(HeadlessEditor("accept"), [tempfile.gettempdir()]) for _ in range(9)]
for h in hs: h.ready.result(30)
ten = p.memory_info().rss
r.stop()
print(json.dumps({"base": base, "one": one, "ten": ten}))
"""


def memory() -> dict[str, float]:
    out = subprocess.check_output([sys.executable, "-c", RSS_SNIPPET], env={**os.environ, "PYTHONPATH": ROOT})
    data = json.loads(out)
    mib = 1024 * 1024
    return {
        "first_server_mib": (data["one"] - data["base"]) / mib,
        "per_extra_window_mib": (data["ten"] - data["one"]) / 9 / mib,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    args = parser.parse_args()
    n_small, n_large, n_notify, n_start = (100, 5, 30, 2) if args.quick else (1000, 20, 200, 9)
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace, reading_workspace = os.path.join(tmp, "ws"), os.path.join(tmp, "reading")
        os.makedirs(workspace)
        os.makedirs(reading_workspace)
        runtime = Runtime(discovery_directory=os.path.join(tmp, "gemini", "ide"))  # where Node's client looks
        time_server_requests()
        try:
            # Two windows. In the first the user is still reading every review (the usual case: an
            # answer travels alone). In the second the editor accepts each review the instant it is
            # shown, so the answer and ide/diffAccepted travel in the same moments: the busiest path.
            reading = runtime.open_window(ReadingEditor(), [reading_workspace])
            handle = runtime.open_window(HeadlessEditor("accept"), [workspace])
            reading.ready.result(30)
            handle.ready.result(30)
            results["openDiff 1 KB, review left open"] = roundtrip(reading, n_small, 1024, "answer")
            results["openDiff 1 KB, accepted at once"] = roundtrip(handle, n_small, 1024)
            results["openDiff 8 MB, accepted at once"] = roundtrip(handle, n_large, 8 * 1024 * 1024)
            results["notification"] = notification_latency(handle, workspace, n_notify)
            results["IdeClient openDiff 1 KB, review left open"] = ide_client_roundtrip(
                reading_workspace, tmp, n_small, 1024, answer_only=True
            )
            results["IdeClient openDiff 1 KB, accepted at once"] = ide_client_roundtrip(workspace, tmp, n_small, 1024)
            results["IdeClient openDiff 8 MB, accepted at once"] = ide_client_roundtrip(
                workspace, tmp, n_large, 8 * 1024 * 1024
            )
        finally:
            runtime.stop()
    results["start"] = start_time(n_start)
    results["memory"] = memory()
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    if not args.quick:  # a smoke run's numbers are not results
        with open(os.path.join(ROOT, "bench", "results", "core.json"), "w") as handle_out:
            json.dump(results, handle_out, indent=2)
    print(table(results))


def table(results: dict[str, Any]) -> str:
    """The results as the Markdown rows of the README's table."""
    rows = ["| measurement | p50 | p99 | n |", "|---|---|---|---|"]
    for name, data in results.items():
        if name.startswith("openDiff"):
            rows.append(
                f"| {name}: answer (SDK client) | {data['p50_ms']:.2f} ms | {data['p99_ms']:.2f} ms | {data['n']} |"
            )
            rows.append(
                f"| {name}: of which in the server | {data['server_p50_ms']:.2f} ms | {data['server_p99_ms']:.2f} ms | "
                f"{data['n']} |"
            )
        elif name.startswith("IdeClient") and "skipped" in data:
            rows.append(f"| {name} | skipped: {data['skipped']} | | |")
        elif name.startswith("IdeClient"):
            for key, label in (("answer", "answer"), ("outcome", "to ide/diffAccepted")):
                if key not in data:
                    continue
                part = data[key]
                rows.append(f"| {name}: {label} | {part['p50_ms']:.2f} ms | {part['p99_ms']:.2f} ms | {part['n']} |")
        elif name == "notification":
            rows.append(
                f"| context change → client, beyond the 50 ms debounce | {data['p50_ms']:.2f} ms | "
                f"{data['p99_ms']:.2f} ms | {data['n']} |"
            )
    start, memory = results["start"], results["memory"]
    rows.append(
        "| start, imports included: cold (no library bytecode yet) / warm (median) | "
        f"{start['cold_s']:.2f} s / {start['warm_s']:.2f} s | | |"
    )
    rows.append(
        f"| RSS: first window server / each further one | +{memory['first_server_mib']:.1f} MiB / "
        f"+{memory['per_extra_window_mib']:.2f} MiB | | |"
    )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
