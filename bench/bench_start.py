"""How soon a window is discoverable, and how soon it answers, beside the Node reference, in one run.

    .venv/bin/python bench/bench_start.py [--runs N] [--floor] [--before CHECKOUT] [--out bench/results/start.json]

Gemini CLI reads the discovery file once, as it starts; a Gemini CLI tab that Terminus restores
starts with Sublime. What counts is how soon the file is out, and then how soon `initialize` is
answered. Three starts take turns run by run, so all meet the same load on a shared machine:

- *reference*: `node bench/node_reference_server.mjs` (the VS Code companion's server stack), from
  the process's start: to its discovery file, to its "listening" line, to the first answered
  `initialize`.
- *serve*: `python -m companion serve`, from the process's start: to the discovery file, to the
  first answered `initialize`.
- *plugin*: a fresh interpreter that has imported what plugin.py imports before a window starts
  (`companion.runtime`, `companion.headless.editor`), from `Runtime.open_window`: to the discovery file,
  to the first answered `initialize` (the loop thread's start, psutil and the stale-file sweep
  included, as in Sublime).

`--floor` adds, to the same turns, fresh interpreters that only import what such a server cannot
do without (FLOORS), timed from the process's start to their exit: the floor under "initialize
answered" for any server built on the `mcp` SDK.

`--before CHECKOUT` adds the serve and plugin starts of another checkout (its `companion/`, the same
libraries) to the same turns: before and after in one run.

Each start gets its own TMPDIR (Node's os.tmpdir(): the discovery folder is <TMPDIR>/gemini/ide) and
CLAUDE_CONFIG_DIR. A poller in this process sees the file appear (0.5 ms period); as soon as it does,
a client reads the port and token from it and POSTs `initialize` (retrying only a refused
connection, which the reference's file never allows and ours must never cause). Bytecode is cached
(a warm-up start of each first), as on every start of Sublime but the first after an install.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _ide  # noqa: E402

REFERENCE = os.path.join(ROOT, "bench", "node_reference_server.mjs")
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
).encode()

# The plugin's start, in a fresh interpreter: imports first (plugin.py's, before any window), then
# the clock starts at open_window. Prints the monotonic time of that call.
PLUGIN_SNIPPET = """
import os, sys, time, threading
from companion.headless.editor import HeadlessEditor
from companion.runtime import Runtime
workspace = sys.argv[1]
runtime = Runtime(editor_pid=os.getpid())
start = time.monotonic()
handle = runtime.open_window(HeadlessEditor("accept"), [workspace])
print(start, flush=True)
sys.stdin.read()
runtime.stop()
"""


def discovery_file(tmpdir: str) -> str | None:
    folder = os.path.join(tmpdir, "gemini", "ide")
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except FileNotFoundError:
        return None
    return os.path.join(folder, names[0]) if names else None


def wait_for_file(tmpdir: str, deadline: float) -> tuple[float, dict[str, Any]]:
    """When the discovery file appeared (monotonic), and what it says once complete."""
    while time.monotonic() < deadline:
        path = discovery_file(tmpdir)
        if path is not None:
            seen = time.monotonic()
            while time.monotonic() < deadline:  # written atomically by us; the reference writes in place
                try:
                    with open(path, encoding="utf-8") as handle:
                        return seen, json.load(handle)
                except (ValueError, OSError):
                    time.sleep(0.0005)
        time.sleep(0.0005)
    raise SystemExit("no discovery file within the deadline")


def initialize(port: int, token: str, deadline: float) -> float:
    """POST `initialize`; when the answer's body arrived (monotonic)."""
    while True:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, deadline - time.monotonic()))
        try:
            connection.request(
                "POST",
                "/mcp",
                INITIALIZE,
                {
                    "Host": f"127.0.0.1:{port}",
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            response = connection.getresponse()
            body = response.read()
            if response.status != 200 or b'"result"' not in body:
                raise SystemExit(f"initialize was not answered: {response.status} {body[:200]!r}")
            return time.monotonic()
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.0005)
        finally:
            connection.close()


def _env(tmpdir: str, checkout: str = ROOT) -> dict[str, str]:
    # Bytecode cached, as on every start of Sublime but the first: a PYTHONDONTWRITEBYTECODE in our
    # environment (as the dev shell sets) would make every start compile the package from source.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(TMPDIR=tmpdir, CLAUDE_CONFIG_DIR=os.path.join(tmpdir, "claude"), PYTHONPATH=checkout)
    return env


def _measure(process: subprocess.Popen[str], start: float, tmpdir: str) -> dict[str, float]:
    deadline = start + 60
    seen, info = wait_for_file(tmpdir, deadline)
    answered = initialize(int(info["port"]), str(info["authToken"]), deadline)
    return {"discovery_ms": (seen - start) * 1000, "initialize_ms": (answered - start) * 1000}


def reference(node: str, workspace: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmpdir:
        start = time.monotonic()
        process = subprocess.Popen(
            [node, REFERENCE, str(os.getpid()), tmpdir, workspace],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(tmpdir),
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            listening = time.monotonic()
            if not line.startswith("listening"):
                raise SystemExit(f"the Node reference did not start: {line!r}")
            figures = _measure(process, start, tmpdir)
            return {**figures, "listening_ms": (listening - start) * 1000}
        finally:
            process.kill()
            process.wait(10)


def serve(workspace: str, checkout: str = ROOT) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmpdir:
        start = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "companion", "serve", "--workspace", workspace, "--diff-policy", "accept"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=_env(tmpdir, checkout),
            cwd=checkout,
            text=True,
        )
        try:
            return _measure(process, start, tmpdir)
        finally:
            process.terminate()
            process.wait(10)


def plugin(workspace: str, checkout: str = ROOT) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmpdir:
        process = subprocess.Popen(
            [sys.executable, "-c", PLUGIN_SNIPPET, workspace],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_env(tmpdir, checkout),
            cwd=checkout,
            text=True,
        )
        try:
            assert process.stdout is not None
            # The child prints its clock at open_window (CLOCK_MONOTONIC is shared by processes on
            # Linux and macOS), then the poller starts; the file may already be out by then.
            start = float(process.stdout.readline())
            return _measure(process, start, tmpdir)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(10)


# What a Python server built on the SDK cannot start without, each in a fresh interpreter from the
# process's start until the import is done (no socket, no file): the floor of "initialize answered".
FLOORS = {
    "floor: interpreter": "pass",
    "floor: import mcp_types": "import mcp_types",
    "floor: import the server stack": "import mcp.server.lowlevel, mcp.server.streamable_http_manager, uvicorn",
}


def import_floor(code: str, checkout: str = ROOT) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmpdir:
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", code], env=_env(tmpdir, checkout), cwd=checkout, check=True)
        return {"import_ms": (time.monotonic() - start) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", help="another checkout whose serve and plugin starts join the same turns")
    parser.add_argument("--out", help="write the figures here as JSON")
    parser.add_argument("--floor", action="store_true", help="add the import floors (FLOORS) to the same turns")
    args = parser.parse_args()
    node = _ide.node()
    if node is None:
        raise SystemExit(f"bench_start.py {_ide.MISSING}")
    starts: dict[str, Any] = {"reference": lambda ws: reference(node, ws), "serve": serve, "plugin": plugin}
    if args.before:
        before = os.path.abspath(args.before)
        starts["serve (before)"] = lambda ws: serve(ws, before)
        starts["plugin (before)"] = lambda ws: plugin(ws, before)
    if args.floor:
        for name, code in FLOORS.items():
            starts[name] = lambda ws, code=code: import_floor(code)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in starts}
    with tempfile.TemporaryDirectory() as workspace:
        for measure in starts.values():
            measure(workspace)  # warm-up: bytecode written, files in the page cache
        for _ in range(args.runs):
            for name, measure in starts.items():
                samples[name].append(measure(workspace))
    result: dict[str, Any] = {"runs": args.runs}
    for name, runs in samples.items():
        result[name] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    listening = result["reference"]["listening_ms"]
    answered = result["reference"]["initialize_ms"]
    print("| start | discovery file (ms, p50) | x reference listening | initialize answered (ms, p50) | x reference |")
    print("|---|---|---|---|---|")
    for name in starts:
        row = result[name]
        if "import_ms" in row:
            print(f"| {name} | | | {row['import_ms']:.0f} | {row['import_ms'] / answered:.2f} |")
            continue
        print(
            f"| {name} | {row['discovery_ms']:.0f} | {row['discovery_ms'] / listening:.2f} | "
            f"{row['initialize_ms']:.0f} | {row['initialize_ms'] / answered:.2f} |"
        )
    print(f"(reference listening: {listening:.0f} ms p50; {args.runs} runs each, taking turns)")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
