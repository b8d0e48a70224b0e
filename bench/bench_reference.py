"""Our window server beside the Node reference, in one run: openDiff and context notifications.

    .venv/bin/python bench/bench_reference.py [--quick] [--out bench/results/reference.json]

The Node reference is the VS Code companion's server stack (`bench/node_reference_server.mjs`:
express, @modelcontextprotocol/sdk's StreamableHTTPServerTransport). Both are driven by Gemini CLI's
own IdeClient (`ide_client_bench.mjs`, `ide_client_context.mjs`, from tests/conformance/node_modules),
each client finding its server through its own discovery folder; both serve one workspace. Both
editors accept every diff the instant it is shown, so each answer and its `ide/diffAccepted` travel
in the same moments. openDiff at 1 KiB, 1 MiB and 8 MiB: the answer to `tools/call`, and
`IdeClient.openDiff()` until `ide/diffAccepted` resolves it; one client process holds a client for
each server and they take turns call by call, so both meet the same load on a shared machine. Notifications:
the active file moves every 80 ms; the latency is from the change to the client's context store,
minus the 50 ms trailing debounce both wait by design. Prints a Markdown table; writes `--out`
(not with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import _ide  # noqa: E402  (bench/, next to this script)
from _stats import percentile  # noqa: E402
from bench_core import ide_client_summary, run_ide_client_bench  # noqa: E402

from companion.core.context import Position  # noqa: E402
from companion.headless.editor import HeadlessEditor  # noqa: E402
from companion.runtime import Runtime  # noqa: E402

REFERENCE = os.path.join(ROOT, "bench", "node_reference_server.mjs")
CONTEXT_CLIENT = os.path.join(ROOT, "bench", "ide_client_context.mjs")
SIZES = {"1 KiB": 1024, "1 MiB": 1024 * 1024, "8 MiB": 8 * 1024 * 1024}


class Reference:
    """The Node reference server in its own process, with its own discovery folder."""

    def __init__(self, node: str, tmpdir: str, workspace: str) -> None:
        self.process = subprocess.Popen(
            [node, REFERENCE, str(os.getpid()), tmpdir, workspace],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening"):
            raise SystemExit(f"the Node reference did not start: {line!r}")

    def move_active_file(self, count: int) -> dict[int, float]:
        """Moves the active file `count` times (80 ms apart); the change times by cursor line, in ms."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"context {count}\n")
        self.process.stdin.flush()
        return {line: at for at, line in json.loads(self.process.stdout.readline())}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class ContextRecorder:
    """Gemini CLI's IdeClient recording every context it takes in (bench/ide_client_context.mjs)."""

    def __init__(self, node: str, tmpdir: str, workspace: str) -> None:
        env = _ide.client_env(os.getpid(), tmpdir)
        self.process = subprocess.Popen(
            [node, CONTEXT_CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=workspace
        )
        assert self.process.stdout is not None
        self.lines: list[str] = []
        if self.process.stdout.readline().strip() != "ready":
            raise SystemExit("Gemini CLI's IdeClient did not connect")
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.process.stdout or []), daemon=True)
        self.reader.start()

    def receipts(self) -> dict[int, float]:
        """The first arrival (ms) of each cursor line, once the client is closed."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)
        self.reader.join(10)
        first: dict[int, float] = {}
        for at, line, _character in json.loads(self.lines[-1]):
            if line is not None and line not in first:
                first[line] = at
        return first


def open_diff_side_by_side(node: str, workspace: str, tmpdirs: list[str], count: int, size: int) -> list[Any]:
    """openDiff through one IdeClient per server, taking turns call by call (ide_client_bench.mjs)."""
    env = {**_ide.client_env(os.getpid()), "GEMINI_BENCH_TMPDIRS": os.pathsep.join(tmpdirs)}
    return [
        ide_client_summary(data, count) for data in run_ide_client_bench(node, workspace, env, [str(count), str(size)])
    ]


def latency(triggers: dict[int, float], receipts: dict[int, float]) -> dict[str, float]:
    beyond = [receipts[line] - at - 50 for line, at in triggers.items() if line in receipts]
    return {"p50_ms": statistics.median(beyond), "p99_ms": percentile(beyond, 99), "n": len(beyond)}


def our_notifications(node: str, handle: Any, tmpdir: str, workspace: str, count: int) -> dict[str, float]:
    recorder = ContextRecorder(node, tmpdir, workspace)
    triggers: dict[int, float] = {}
    for line in range(1, count + 1):
        triggers[line] = time.monotonic() * 1000  # CLOCK_MONOTONIC, as the client's process.hrtime
        handle.context.activate(os.path.join(workspace, f"file-{line}.py"), Position(line, 1), None)
        time.sleep(0.08)  # longer than the debounce: each change is its own notification
    return latency(triggers, recorder.receipts())


def reference_notifications(
    node: str, reference: Reference, tmpdir: str, workspace: str, count: int
) -> dict[str, float]:
    recorder = ContextRecorder(node, tmpdir, workspace)
    return latency(reference.move_active_file(count), recorder.receipts())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "reference.json"))
    args = parser.parse_args()
    counts = {"1 KiB": 50, "1 MiB": 10, "8 MiB": 5} if args.quick else {"1 KiB": 500, "1 MiB": 100, "8 MiB": 20}
    n_notify = 30 if args.quick else 200
    node = _ide.node()
    if node is None:
        raise SystemExit(_ide.MISSING)
    results: dict[str, Any] = {"ours": {}, "reference": {}}
    with tempfile.TemporaryDirectory() as tmp:
        # Each server has its own discovery folder (the client's TMPDIR); both serve one workspace.
        tmpdirs = {side: os.path.join(tmp, side) for side in ("ours", "reference")}
        workspace = os.path.join(tmp, "ws")
        os.makedirs(workspace)
        runtime = Runtime(discovery_directory=os.path.join(tmpdirs["ours"], "gemini", "ide"))
        reference = Reference(node, tmpdirs["reference"], workspace)
        try:
            handle = runtime.open_window(HeadlessEditor("accept"), [workspace])
            handle.ready.result(30)
            for label, size in SIZES.items():
                print(f"openDiff {label}", file=sys.stderr, flush=True)
                ours, theirs = open_diff_side_by_side(
                    node, workspace, [tmpdirs["ours"], tmpdirs["reference"]], counts[label], size
                )
                results["ours"][f"openDiff {label}"], results["reference"][f"openDiff {label}"] = ours, theirs
            results["ours"]["notification"] = our_notifications(node, handle, tmpdirs["ours"], workspace, n_notify)
            results["reference"]["notification"] = reference_notifications(
                node, reference, tmpdirs["reference"], workspace, n_notify
            )
        finally:
            reference.stop()
            runtime.stop()
    if not args.quick:  # a smoke run's numbers are not results
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as out:
            json.dump(results, out, indent=2)
    print(table(results))


def table(results: dict[str, Any]) -> str:
    """Markdown rows: p50 and p99 of ours and the reference, and ours / reference."""
    rows = [
        "| measurement | ours p50 / p99 | Node reference p50 / p99 | ratio p50 / p99 | n |",
        "|---|---|---|---|---|",
    ]
    ours, reference = results["ours"], results["reference"]
    for name in ours:
        parts = [("", ours[name], reference[name])] if name == "notification" else [
            (f": {label}", ours[name][key], reference[name][key])
            for key, label in (("answer", "answer"), ("outcome", "to ide/diffAccepted"))
        ]  # fmt: skip
        for suffix, mine, theirs in parts:
            title = "context change → IdeClient, beyond the 50 ms debounce" if name == "notification" else name + suffix
            rows.append(
                f"| {title} | {mine['p50_ms']:.2f} / {mine['p99_ms']:.2f} ms | {theirs['p50_ms']:.2f} / "
                f"{theirs['p99_ms']:.2f} ms | {mine['p50_ms'] / theirs['p50_ms']:.2f}× / "
                f"{mine['p99_ms'] / theirs['p99_ms']:.2f}× | {mine['n']} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
