"""Chat History… with 500 past sessions, on the fake Sublime (issue #41): how long from the palette
command to the quick panel, and what the main thread spends meanwhile.

    .venv/bin/python bench/bench_history.py [--quick] [--sessions N] [--page N]

The package is loaded into tests/sublime_fake as the tests load it; the agent is the scripted
`tests/acp/history_agent.py` (a real process on the SDK's agent side) holding N sessions of this
folder and N of another one (the client keeps this folder's), listed in pages of `--page` (1000 by
default, as claude-agent-acp pages). Each round runs `gemini_companion_past_chats` and pumps the
fake's main thread until the panel shows: the agent's start, `initialize`, every page of
`session/list` and the panel's N items. The fake times every main-thread callback meanwhile
(`control.start_timing`, wall clock). Measured, not asserted; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _stats import percentile  # noqa: E402  (bench/, next to this script)

from tests.sublime_fake import control  # noqa: E402

control.install()

import sublime  # noqa: E402  (the fake, installed above)

AGENT = os.path.join(ROOT, "tests", "acp", "history_agent.py")


def history(folder: str, other: str, count: int) -> list[dict[str, Any]]:
    """`count` sessions of `folder` and of `other`, interleaved, one a minute apart."""
    sessions = []
    for n in range(count):
        for cwd, tag in ((folder, "here"), (other, "there")):
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_780_000_000 + 60 * n))
            sessions.append({"sessionId": f"{tag}-{n}", "cwd": cwd, "title": f"Chat {n}", "updatedAt": stamp})
            sessions[-1]["history"] = []
    return sessions


def wait_ready(window: sublime.Window) -> None:
    windows = sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.windows"]
    state = control.pump_until(lambda: windows.registry() and windows.registry().get(window), 30)
    control.pump_until(state.handle.ready.done, 30)


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gemini-companion-loop"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 9")
    parser.add_argument("--sessions", type=int, default=500, help="sessions of this folder (as many of another)")
    parser.add_argument("--page", type=int, default=1000, help="session/list's page size")
    args = parser.parse_args()
    rounds = 3 if args.quick else 9
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TMPDIR"] = os.path.join(tmp, "tmp")
        os.environ["CLAUDE_CONFIG_DIR"] = os.path.join(tmp, "claude")
        os.makedirs(os.environ["TMPDIR"])
        control.reset(os.path.join(tmp, "data"))
        folder, other = os.path.join(tmp, "work"), os.path.join(tmp, "other")
        os.makedirs(folder)
        sessions_file = os.path.join(tmp, "sessions.json")
        with open(sessions_file, "w", encoding="utf-8") as handle:
            json.dump(history(folder, other, args.sessions), handle)
        env = {"HISTORY_AGENT_SESSIONS": sessions_file, "HISTORY_AGENT_PAGE": str(args.page)}
        agent = {"name": "Bench", "command": sys.executable, "args": [AGENT], "env": env}
        control.user_settings("Gemini Companion.sublime-settings", {"agents": [agent]})
        window = control.new_window([folder])
        control.load_plugin()
        wait_ready(window)
        opened: list[float] = []
        callbacks: list[int] = []
        slowest = ("", 0)
        items = 0
        for _ in range(rounds):
            control.start_timing()
            start = time.perf_counter()
            window.run_command("gemini_companion_past_chats", {"agent": "Bench"})
            panel = control.pump_until(lambda: control.quick_panels(), 60, "the history panel")[-1]
            opened.append((time.perf_counter() - start) * 1000)
            timings = [(name, ns) for thread, name, ns in control.stop_timing() if thread == "main"]
            callbacks += [ns for _name, ns in timings]
            slowest = max([slowest, *timings], key=lambda t: t[1])
            items = len(panel["items"])
            control.choose_quick_panel(-1)
            control.settle()
        control.unload_plugin()
        control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end")
        violations, errors = control.violations(), control.errors()
        control.shutdown()
    ms = [ns / 1e6 for ns in callbacks]
    print(
        f"Chat History on the fake Sublime (Python {sys.version.split()[0]}): {args.sessions} sessions of this "
        f"folder + {args.sessions} of another, pages of {args.page}, {rounds} rounds; the panel showed {items} items\n"
    )
    print("| measurement | median ms | p90 ms | max ms | n |")
    print("|---|---|---|---|---|")
    print(
        f"| palette command → panel shown (agent start, initialize, every page, the panel) | "
        f"{statistics.median(opened):.0f} | {percentile(opened, 90):.0f} | {max(opened):.0f} | {rounds} |"
    )
    print(
        f"| each main-thread callback meanwhile | {statistics.median(ms):.2f} | {percentile(ms, 90):.2f} | "
        f"{max(ms):.2f} | {len(ms)} |"
    )
    print(
        f"\nThe slowest main-thread callback: {slowest[0]} ({slowest[1] / 1e6:.2f} ms); load average {os.getloadavg()}"
    )
    if violations or errors or items != args.sessions:
        print(f"\nThread violations: {violations}\nPlugin errors: {errors}\nItems: {items}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
