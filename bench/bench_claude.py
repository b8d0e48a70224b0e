"""Claude Code's side: openDiff round trip and selection_changed latency over the WebSocket, with
Gemini CLI's side measured in the same run for comparison.

    .venv/bin/python bench/bench_claude.py [--quick]

The server runs in this process on the companion's loop thread (as inside Sublime); its editor
accepts every review the instant it is shown, so an openDiff's answer is the decision itself:
`FILE_SAVED` with the accepted text (Claude Code) and, for comparison, the call's answer plus its
`ide/diffAccepted` notification (Gemini CLI, SDK client). Clients run in other processes over
loopback. Selection latency: the active file's selection moves every 80 ms; the latency is from the
change to the client's receipt, minus the 50 ms debounce. Prints a Markdown table and writes
bench/results/claude.json (not with --quick).
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
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _stats import percentile  # noqa: E402
from bench_core import notification_latency, roundtrip, time_server_requests  # noqa: E402

from companion.core.context import Position  # noqa: E402
from companion.headless.editor import HeadlessEditor  # noqa: E402
from companion.runtime import Runtime, WindowHandle  # noqa: E402

CLIENT = os.path.join(ROOT, "bench", "_claude_client.py")


def claude_client(handle: WindowHandle, mode: str, count: int, size: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, CLIENT, str(handle.port), handle.claude_token, mode, str(count), str(size)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )


def claude_roundtrip(handle: WindowHandle, count: int, size: int) -> dict[str, float]:
    out, _ = claude_client(handle, "roundtrip", count, size).communicate(timeout=900)
    samples = json.loads(out.strip().splitlines()[-1])["samples_ms"][min(20, count // 10) :]
    return {"p50_ms": statistics.median(samples), "p99_ms": percentile(samples, 99), "n": len(samples)}


def claude_selection_latency(handle: WindowHandle, workspace: str, count: int) -> dict[str, float]:
    proc = claude_client(handle, "notify", count)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)  # the handshake's notifications/initialized has been read by the server
    triggers: dict[str, float] = {}
    for i in range(count):
        path = os.path.join(workspace, f"selected-{i}.py")
        triggers[path] = time.monotonic()
        handle.context.activate(path, Position(3, 9), "selected", anchor=Position(3, 1))
        time.sleep(0.08)  # longer than the debounce: each change is its own notification
    out, _ = proc.communicate(timeout=120)
    receipts = json.loads(out.strip().splitlines()[-1])["receipts"]
    beyond = [(t - triggers[p]) * 1000 - 50 for t, p in receipts if p in triggers]
    return {"p50_ms": statistics.median(beyond), "p99_ms": percentile(beyond, 99), "n": len(beyond)}


RSS_SNIPPET = """
import json, sys, tempfile, psutil
claude = sys.argv[1] == "1"
process = psutil.Process()
before = process.memory_info().rss
from companion.headless.editor import HeadlessEditor
from companion.runtime import Runtime
folder = tempfile.mkdtemp()
runtime = Runtime(discovery_directory=folder + "/g", lock_directory=folder + "/c")
runtime.open_window(HeadlessEditor("accept"), [folder], claude=claude).ready.result(30)
first = process.memory_info().rss
for _ in range(9):
    runtime.open_window(HeadlessEditor("accept"), [folder], claude=claude).ready.result(30)
after = process.memory_info().rss
runtime.stop()
print(json.dumps([(first - before) / 2**20, (after - first) / 9 / 2**20]))
"""


def claude_memory(runs: int) -> dict[str, float]:
    """What serving Claude Code adds to RSS: fresh interpreters alternating off and on, medians."""
    measured: dict[str, list[list[float]]] = {"0": [], "1": []}
    for _ in range(runs):
        for claude in ("0", "1"):
            out = subprocess.check_output(
                [sys.executable, "-c", RSS_SNIPPET, claude], env={**os.environ, "PYTHONPATH": ROOT}
            )
            measured[claude].append(json.loads(out))
    first = statistics.median(on[0] for on in measured["1"]) - statistics.median(off[0] for off in measured["0"])
    each = statistics.median(on[1] for on in measured["1"]) - statistics.median(off[1] for off in measured["0"])
    return {"first_window_mib": first, "each_further_mib": each, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    args = parser.parse_args()
    n_small, n_large, n_notify = (100, 5, 30) if args.quick else (1000, 20, 200)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = os.path.join(tmp, "ws")
        os.makedirs(workspace)
        runtime = Runtime(
            discovery_directory=os.path.join(tmp, "gemini", "ide"), lock_directory=os.path.join(tmp, "claude")
        )
        time_server_requests()
        try:
            handle = runtime.open_window(HeadlessEditor("accept"), [workspace], claude=True)
            handle.ready.result(30)
            results["Claude Code: openDiff 1 KB → FILE_SAVED"] = claude_roundtrip(handle, n_small, 1024)
            results["Gemini CLI: openDiff 1 KB, answer (accepted at once)"] = roundtrip(handle, n_small, 1024)
            results["Claude Code: openDiff 8 MB → FILE_SAVED (8 MB back)"] = claude_roundtrip(handle, n_large, 8 << 20)
            results["Gemini CLI: openDiff 8 MB, answer (accepted at once)"] = roundtrip(handle, n_large, 8 << 20)
            results["Claude Code: selection_changed, beyond the 50 ms debounce"] = claude_selection_latency(
                handle, workspace, n_notify
            )
            results["Gemini CLI: ide/contextUpdate, beyond the 50 ms debounce"] = notification_latency(
                handle, workspace, n_notify
            )
        finally:
            runtime.stop()
    memory = claude_memory(2 if args.quick else 5)
    if not args.quick:
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "claude.json"), "w") as out:
            json.dump({**results, "memory": memory}, out, indent=2)
    print("| measurement | p50 | p99 | n |\n|---|---|---|---|")
    for name, data in results.items():
        print(f"| {name} | {data['p50_ms']:.2f} ms | {data['p99_ms']:.2f} ms | {data['n']} |")
    print(
        f"| RSS added by the Claude side: first window / each further | {memory['first_window_mib']:+.2f} MiB / "
        f"{memory['each_further_mib']:+.3f} MiB | | {memory['runs']} + {memory['runs']} |"
    )


if __name__ == "__main__":
    main()
