"""Core benchmarks: openDiff round trip, notification latency, start time, memory.

    .venv/bin/python bench/bench_core.py [--quick]

The server runs in this process on the companion's loop thread (as inside Sublime); the client is
the SDK's client in a second process over loopback (as Gemini CLI is). Prints a Markdown table and
writes bench/results/core.json. Numbers are medians/percentiles of one run on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from companion.context import Position  # noqa: E402
from companion.headless import HeadlessEditor  # noqa: E402
from companion.runtime import Runtime  # noqa: E402

CLIENT = os.path.join(ROOT, "bench", "_client.py")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def client(handle, mode: str, count: int, size: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, CLIENT, handle.url, handle.token, mode, str(count), str(size)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )


def roundtrip(handle, count: int, size: int) -> dict[str, float]:
    proc = client(handle, "roundtrip", count, size)
    out, _ = proc.communicate(timeout=600)
    data = json.loads(out.strip().splitlines()[-1])
    samples = data["samples_ms"][min(20, count // 10) :]  # drop warm-up calls
    return {
        "p50_ms": statistics.median(samples),
        "p99_ms": percentile(samples, 99),
        "n": len(samples),
        "outcomes": data["outcomes"],
    }


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
from companion.headless import HeadlessEditor
from companion.runtime import Runtime
r = Runtime(discovery_directory=tempfile.mkdtemp())
h = r.open_window(HeadlessEditor("accept"), [tempfile.gettempdir()])
h.ready.result(30)
t1 = time.perf_counter()
r.stop()
print(t1 - t0)
"""


def start_time(runs: int) -> dict[str, float]:
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONPYCACHEPREFIX": cache}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            # First run in an empty bytecode cache compiles everything (cold); the next reuses it.
            cold.append(float(subprocess.check_output([sys.executable, "-c", START_SNIPPET], env=env)))
            warm.append(float(subprocess.check_output([sys.executable, "-c", START_SNIPPET], env=env)))
    return {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm)}


RSS_SNIPPET = """
import json, os, tempfile, psutil
from companion.headless import HeadlessEditor
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
    n_small, n_large, n_notify, n_start = (100, 5, 30, 2) if args.quick else (1000, 20, 200, 5)
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = os.path.join(tmp, "ws")
        os.makedirs(workspace)
        runtime = Runtime(discovery_directory=os.path.join(tmp, "ide"))
        handle = runtime.open_window(HeadlessEditor("accept"), [workspace])
        handle.ready.result(30)
        try:
            results["openDiff 1 KB"] = roundtrip(handle, n_small, 1024)
            results["openDiff 8 MB"] = roundtrip(handle, n_large, 8 * 1024 * 1024)
            results["notification"] = notification_latency(handle, workspace, n_notify)
        finally:
            runtime.stop()
    results["start"] = start_time(n_start)
    results["memory"] = memory()
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "core.json"), "w") as handle_out:
        json.dump(results, handle_out, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
