"""Sublime adapter benchmarks on the fake Sublime: host-thread cost of plugin_loaded and of every
event handler, and the end-to-end latency from a selection change to the client's receipt.

    .venv/bin/python bench/bench_adapter.py [--quick]

The package is loaded into tests/sublime_fake exactly as the tests load it (two windows with a
folder, two open 60-line files). Handler times are measured by calling each of the package's
listener methods directly on the calling thread (what Sublime's main thread, or its one shared
async worker for `*_async` handlers, spends in our code), with the companion running and an MCP
client connected, so the work they hand to the server loop competes for the GIL as it would.
`plugin_loaded` is timed on a loaded package (`plugin_unloaded` between samples, not timed), and so is
the main-thread callback that opens the windows' servers once the loop thread has checked the libraries.

End to end: the user moves the caret (the fake's main thread fires `on_selection_modified`, the
worker runs the async handler), the context goes through the 50 ms trailing debounce and two
clients in other processes record its receipt: the SDK's Python client, and Gemini CLI's own
IdeClient (Node, `bench/ide_client_context.mjs`, when tests/conformance/node_modules is installed),
at the moment its context store takes the update; clocks are the system-wide monotonic clock
(CLOCK_MONOTONIC for both on Linux). "beyond debounce" subtracts the 50 ms the debounce waits by design.

Prints a Markdown table (targets: ≤ 1 ms per event at p99, plugin_loaded ≤ 5 ms) and, unless
--quick, writes bench/results/adapter.json. Exits 1 if a thread violation, a plugin exception or a
lost update happened. Numbers are from one run on the machine it ran on; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import _ide  # noqa: E402  (bench/, next to this script)
from _stats import percentile  # noqa: E402

from tests.sublime_fake import _plugin_host, _state, control  # noqa: E402

control.install()

import sublime  # noqa: E402  (the fake, installed above)

EVENT_TARGET_MS = 1.0
LOADED_TARGET_MS = 5.0
DEBOUNCE_MS = 50.0
Receipt = tuple[float, int | None, int | None]  # (receipt time, cursor line, cursor character)

CLIENT = r"""
import asyncio, json, sys, time
import httpx2
from mcp.client import ClientSession, NotificationBinding
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict

class Params(BaseModel):
    model_config = ConfigDict(extra="allow")

async def main(url, token):
    received = []
    async def handler(params):
        received.append((time.monotonic(), params.model_dump()))
    binding = NotificationBinding(method="ide/contextUpdate", params_type=Params, handler=handler)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=600)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, notification_bindings=[binding]) as session,
    ):
        await session.initialize()
        while not received:
            await asyncio.sleep(0.01)
        print("ready", flush=True)
        # stdin closes when the benchmark is done with its triggers
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await asyncio.sleep(0.5)
    out = []
    for at, params in received:
        active = [f for f in params["workspaceState"]["openFiles"] if f.get("isActive")]
        cursor = active[0].get("cursor") if active else None
        out.append([at, cursor["line"], cursor["character"]] if cursor else [at, None, None])
    return out

print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))), flush=True)
"""


def summary(samples_ns: list[int]) -> dict[str, float]:
    ms = [s / 1e6 for s in samples_ns]
    return {"p50_ms": statistics.median(ms), "p99_ms": percentile(ms, 99), "max_ms": max(ms), "n": len(ms)}


def timed(call: Callable[[], object], prepare: Callable[[int], object], count: int) -> list[int]:
    """Time `call` `count` times; `prepare(i)` (not timed) sets up each sample."""
    samples = []
    for i in range(count):
        prepare(i)
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return samples


def package_listeners(name: str) -> list[Any]:
    return [
        listener
        for listener in _plugin_host.plugins().callbacks[name]
        if type(listener).__module__.startswith(f"{control.PACKAGE_NAME}.")
    ]


def text(lines: int) -> str:
    return "".join(f"line {i:03} " + "x" * 60 + "\n" for i in range(lines))


def write(folder: str, name: str, content: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    return path


current: list[sublime.View] = []
_views: list[sublime.View] = []


def flip(i: int, focus: bool = False) -> None:
    view = _views[i % 2]
    current[:] = [view]
    if focus:
        view.window().focus_view(view)  # type: ignore[union-attr]
        quiet()


def quiet() -> None:
    """Let the events a preparation step fired run first, so they do not run during the sample."""
    control.pump(0)
    control.wait_async_idle()


def measure_handlers(window: sublime.Window, a: sublime.View, b: sublime.View, count: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    views = (a, b)

    def select(view: sublime.View, point: int) -> None:
        view.sel().clear()
        view.sel().add(sublime.Region(point, point))

    def each(name: str, call: Callable[[Any], object], prepare: Callable[[int], object] = lambda i: None) -> None:
        listeners = package_listeners(name)
        if not listeners:
            return
        samples = timed(lambda: [call(listener) for listener in listeners], prepare, count)
        results[name] = summary(samples)

    # Focus and load alternate between the two files, so each call really changes the open-files order.
    each("on_activated_async", lambda listener: listener.on_activated_async(current[0]), lambda i: flip(i))
    each("on_load_async", lambda listener: listener.on_load_async(current[0]), lambda i: flip(i, focus=True))
    each("on_post_save_async", lambda listener: listener.on_post_save_async(current[0]), lambda i: flip(i, True))

    # The caret moves every time (as when the user types or clicks).
    control.focus(a)
    for listener in package_listeners("on_activated_async"):
        listener.on_activated_async(a)
    each(
        "on_selection_modified_async",
        lambda listener: listener.on_selection_modified_async(a),
        lambda i: select(a, (i * 7) % a.size()),
    )

    def select_range(i: int) -> None:
        a.sel().clear()
        a.sel().add(sublime.Region(i % 200, a.size() - i % 200))  # a large selection: up to 16 KiB is read

    listeners = package_listeners("on_selection_modified_async")
    samples = timed(lambda: [listener.on_selection_modified_async(a) for listener in listeners], select_range, count)
    results["on_selection_modified_async (4 KB selection)"] = summary(samples)

    # Closing: the view is tracked again (not timed) before each close.
    def retrack(i: int) -> None:
        for listener in package_listeners("on_activated_async"):
            listener.on_activated_async(views[i % 2])
        current[0] = views[i % 2]

    each("on_pre_close", lambda listener: listener.on_pre_close(current[0]), retrack)
    each("on_close", lambda listener: listener.on_close(current[0]), retrack)

    # Synchronous hooks Sublime calls around every command and key binding.
    each("on_text_command", lambda listener: listener.on_text_command(a, "insert", {"characters": "x"}))
    each("on_window_command", lambda listener: listener.on_window_command(window, "show_panel", {"panel": "console"}))
    each("on_post_window_command", lambda listener: listener.on_post_window_command(window, "show_panel", {}))
    each(
        "on_query_context",
        lambda listener: listener.on_query_context(a, "gemini_companion.review_proposal", 0, True, False),
    )
    each("on_load_project_async", lambda listener: listener.on_load_project_async(window))
    each("on_post_save_project_async", lambda listener: listener.on_post_save_project_async(window))

    # The once-a-second look for folders changed without an event (two windows, nothing changed).
    registry = sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.windows"].registry()
    results["folder poll, every 1 s (main thread)"] = summary(
        timed(registry.sync_changed_folders, lambda i: None, count)
    )
    return results


def measure_session(window: sublime.Window, a: sublime.View, b: sublime.View, folder: str, rounds: int) -> dict:
    """Every callback of ours that Sublime's main thread or its shared async worker runs during a
    working session (typing, clicking between files, reviews opened and accepted or rejected,
    pausing, the doctor, the status bar, the folder poll), timed by the fake as each one runs."""
    from tests.sublime_editor.conftest import ThreadedClient

    handle = wait_ready(window)
    reviewer = ThreadedClient(handle.url, handle.token, "bench-reviewer")
    control.start_timing()
    started = time.monotonic()
    for i in range(rounds):
        view = (a, b)[i % 2]
        control.click(view, (i * 13) % max(1, view.size()))
        control.type_text(view, "x")
        target = os.path.join(folder, f"review{i % 3}.py")
        reviewer.open_diff(target, f"value = {i}\n")
        control.settle()
        proposal = next(v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal")
        if i % 2:
            proposal.run_command("gemini_companion_save_review")
        else:
            control.close_tab(proposal)
        control.settle()
        if i % 10 == 0:
            window.run_command("gemini_companion_toggle_sharing")
            window.run_command("gemini_companion_toggle_sharing")
            window.run_command("gemini_companion_status")
            control.settle()
    control.pump(max(0.0, 2.5 - (time.monotonic() - started)))  # at least two folder polls
    timings = control.stop_timing()
    reviewer.close()
    ours = [(t, n, ns) for t, n, ns in timings if n.startswith(f"{control.PACKAGE_NAME}.")]
    per: dict[tuple[str, str], list[int]] = {}
    for thread, name, ns in ours:
        per.setdefault(("main" if thread == "main" else "worker", name), []).append(ns)
    rows = {}
    for (thread, name), samples in per.items():
        short = name[len(control.PACKAGE_NAME) + 1 :].replace("companion.sublime_editor.", "")
        rows[f"{thread}: {short}"] = summary(samples)
    return rows


def measure_folder_detection(window: sublime.Window, extra: str, count: int) -> list[float]:
    """Folders changed with no event (set_project_data, as drag and drop or `subl -a` do): ms until the
    discovery file names the new folder, found by the poll and rewritten on the loop thread."""
    handle = wait_ready(window)
    base = window.folders()
    delays = []
    for i in range(count):
        folders = [*base, extra] if i % 2 == 0 else base
        expected = os.pathsep.join(folders)
        started = time.monotonic()
        window.set_project_data({"folders": [{"path": f} for f in folders]})
        control.pump_until(lambda want=expected: _workspace_path(handle.discovery_path) == want, 10, expected)
        delays.append((time.monotonic() - started) * 1000)
    return delays


def _workspace_path(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)["workspacePath"]
    except (OSError, ValueError):
        return None  # being replaced


def measure_plugin_loaded(plugin: Any, count: int) -> tuple[list[int], list[int]]:
    """Host-thread time of `plugin_loaded`, and of the main-thread callback that starts the windows'
    servers once the loop thread has checked the libraries (two windows here)."""
    lifecycle = sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.lifecycle"]
    original = lifecycle._libraries_checked
    starts: list[int] = []

    def timed(*args: Any) -> None:
        start = time.perf_counter_ns()
        original(*args)
        starts.append(time.perf_counter_ns() - start)

    lifecycle._libraries_checked = timed  # looked up when the callback runs
    windows = sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.windows"]
    samples = []
    for _ in range(count):
        plugin.plugin_unloaded()
        control.settle()
        gc.collect()
        start = time.perf_counter_ns()
        plugin.plugin_loaded()
        samples.append(time.perf_counter_ns() - start)
        control.pump_until(lambda: windows.registry() is not None, 30, "the servers to start")
        control.settle()
    lifecycle._libraries_checked = original
    return samples, starts


def wait_ready(window: sublime.Window) -> Any:
    windows = sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.windows"]
    state = control.pump_until(lambda: windows.registry() and windows.registry().get(window), 30)
    control.pump_until(state.handle.ready.done, 30)
    return state.handle.ready.result(0)


class Client:
    """A client in another process (as Gemini CLI is), recording every context it receives: it prints
    "ready" after the first one, records until its stdin closes, then prints the receipts as JSON."""

    def __init__(
        self, argv: list[str], what: str, env: dict[str, str] | None = None, cwd: str | None = None, unit: float = 1.0
    ) -> None:
        self.unit = unit  # receipt times are in seconds x unit
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=cwd
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, name="bench-client-stdout", daemon=True)
        self.reader.start()
        control.pump_until(lambda: "ready" in [line.strip() for line in self.lines], 60, f"{what} to connect")

    @classmethod
    def sdk(cls, url: str, token: str) -> Client:
        """The `mcp` SDK's Python client."""
        env = {**os.environ, "PYTHONPATH": ROOT}
        return cls([sys.executable, "-c", CLIENT, url, token], "the SDK client", env=env)

    @classmethod
    def ide_client(cls, handle: Any, workspace: str) -> Client | None:
        """Gemini CLI's own IdeClient (Node), found the way Gemini CLI finds the window; None without Node."""
        node = _ide.node()
        if node is None:
            return None
        env = _ide.client_env(handle.runtime.editor_pid)
        argv = [node, os.path.join(ROOT, "bench", "ide_client_context.mjs")]
        return cls(argv, "Gemini CLI's IdeClient", env=env, cwd=workspace, unit=1000.0)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def receipts(self) -> list[Receipt]:
        """Close the client and return (receipt time, cursor line, cursor character) of every context."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        control.pump_until(lambda: self.process.poll() is not None, 60, "the client to finish")
        self.reader.join(10)
        return [(at / self.unit, line, character) for at, line, character in json.loads(self.lines[-1])]


def selection_triggers(view: sublime.View, count: int) -> dict[tuple[int, int], float]:
    """Move the caret `count` times, each to a new place, slower than the debounce; the trigger times."""
    control.focus(view)
    control.pump(0.2)
    triggers: dict[tuple[int, int], float] = {}
    for i in range(count):
        row, column = 1 + i // 60, 1 + i % 60
        point = view.text_point(row, column)
        triggers[(row + 1, column + 1)] = time.monotonic()  # the CLI's units: 1-based line and character
        control.select(view, point)  # the fake fires on_selection_modified(_async) as Sublime does
        control.pump((DEBOUNCE_MS + 40) / 1000)  # each move is its own update
    return triggers


def latencies(triggers: dict[tuple[int, int], float], receipts: list[Receipt]) -> list[float]:
    """Milliseconds from each caret move to the first context carrying that caret."""
    found = []
    for key, at in triggers.items():
        arrivals = [t for t, line, character in receipts if (line, character) == key and t >= at]
        if arrivals:
            found.append((min(arrivals) - at) * 1000)
    return found


def e2e_summary(latencies_ms: list[float], missing: int) -> tuple[dict[str, float], dict[str, float]]:
    """Latency from caret move to receipt, and the same minus the debounce's designed 50 ms."""
    beyond = [v - DEBOUNCE_MS for v in latencies_ms]
    total = {"p50_ms": statistics.median(latencies_ms), "p99_ms": percentile(latencies_ms, 99)}
    total.update(max_ms=max(latencies_ms), n=len(latencies_ms), missing=missing)
    extra = {"p50_ms": statistics.median(beyond), "p99_ms": percentile(beyond, 99), "max_ms": max(beyond)}
    extra.update(n=len(beyond))
    return total, extra


def row(name: str, data: dict[str, float], target: float | None) -> str:
    verdict = "" if target is None else ("✓" if data["p99_ms"] <= target else "✗ over target")
    return f"| {name} | {data['p50_ms']:.3f} | {data['p99_ms']:.3f} | {data['max_ms']:.3f} | {data['n']} | {verdict} |"


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gemini-companion-loop"]


def measure_unload_with_busy_loop(window: sublime.Window, count: int, busy_s: float) -> list[int]:
    """Main-thread time of unloading the package (Sublime's disable, upgrade or reload) while the
    loop thread is busy: a coroutine holds it for `busy_s` (a slow disk or a bug in a handler),
    starting just before the unload. Each sample loads the package again first (not timed), and
    waits for the old loop thread to end before the next one (nothing may pile up)."""
    samples = []
    for _ in range(count):
        control.load_plugin()
        handle = wait_ready(window)
        control.settle()
        busy = threading.Event()

        async def hold(busy: threading.Event = busy) -> None:
            busy.set()
            time.sleep(busy_s)  # blocks the loop thread, as a blocking call in a handler would

        handle.runtime.submit(hold)
        busy.wait(10)
        gc.collect()
        start = time.perf_counter_ns()
        control.unload_plugin()  # plugin_unloaded on the main thread
        samples.append(time.perf_counter_ns() - start)
        control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end")
        control.settle()
    return samples


def large_project(tmp: str, folders: int, settings: int) -> dict[str, Any]:
    """A .sublime-project with `folders` folder entries (each with its own exclude patterns) and
    `settings` project settings: what a monorepo's generated project looks like."""
    entries = []
    for index in range(folders):
        path = os.path.join(tmp, "project", f"pkg{index:05d}")
        entries.append({"path": path, "folder_exclude_patterns": ["build", "dist"], "name": f"pkg {index}"})
    values: dict[str, Any] = {f"setting_{i}": {"value": i, "list": list(range(5))} for i in range(settings)}
    values["folder_exclude_patterns"] = [".git", "node_modules"]
    return {"folders": entries, "settings": values}


def measure_window_command(window: sublime.Window, count: int) -> list[int]:
    """Main-thread time of our `on_post_window_command` after a window command that changes no
    folder (show/hide a panel), on the window's current project."""
    listeners = package_listeners("on_post_window_command")
    return timed(
        lambda: [listener.on_post_window_command(window, "show_panel", {"panel": "console"}) for listener in listeners],
        lambda i: None,
        count,
    )


def measure_close_without_event(tmp: str, count: int) -> list[float]:
    """ms from closing a window with `on_pre_close_window` suppressed (macOS and Windows since
    build 4126, sublimehq/sublime_text#5148) until its discovery and lock files are gone."""
    delays = []
    control.window_close_event(False)
    for index in range(count):
        folder = os.path.join(tmp, f"closing{index}")
        os.makedirs(folder)
        window = control.new_window([folder])
        handle = wait_ready(window)
        control.settle()
        files = [p for p in (handle.discovery_path, handle.lock_path) if p]
        started = time.monotonic()
        control.close_window(window)
        control.pump_until(
            lambda files=files: not any(os.path.exists(p) for p in files), 10, "the closed window's files to go"
        )
        delays.append((time.monotonic() - started) * 1000)
    control.window_close_event(True)
    return delays


def private_editor(tmp: str) -> None:
    """A fresh fake Sublime whose discovery and lock files stay in `tmp`."""
    os.environ["TMPDIR"] = os.path.join(tmp, "tmp")
    os.environ["CLAUDE_CONFIG_DIR"] = os.path.join(tmp, "claude")
    os.makedirs(os.environ["TMPDIR"])
    control.reset(os.path.join(tmp, "data"))


def lifecycle_main(quick: bool) -> None:
    """`--lifecycle`: unloading with a busy loop thread, a window command on a large project, and a
    window closed without its event. Runs on any checkout of the package (the "before" numbers in
    bench/README.md come from the same script run against the commit before the fix)."""
    n_unload, n_command = (10, 200) if quick else (60, 2000)
    busy_s = 0.5
    with tempfile.TemporaryDirectory() as tmp:
        private_editor(tmp)
        small = os.path.join(tmp, "small")
        os.makedirs(small)
        window = control.new_window([small])
        control.open_file(window, write(small, "a.py", text(60)))
        unload = measure_unload_with_busy_loop(window, n_unload, busy_s)
        big = control.new_window()
        big.set_project_data(large_project(tmp, 5000, 2000))
        control.load_plugin()
        wait_ready(big)
        control.settle()
        command = measure_window_command(big, n_command)
        closing = measure_close_without_event(tmp, 5 if quick else 20) if hasattr(control, "window_close_event") else []
        control.unload_plugin()
        control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end")
        violations, errors = control.violations(), control.errors()
        control.shutdown()
    lines = [
        f"Lifecycle on the fake Sublime (Python {sys.version.split()[0]}{', --quick' if quick else ''})",
        "",
        "| measurement | p50 ms | p99 ms | max ms | n | target |",
        "|---|---|---|---|---|---|",
        row(f"unload, loop thread busy for {busy_s:.1f} s (main thread)", summary(unload), 100.0),
        row("on_post_window_command, 5000 folder entries + 2000 settings (main thread)", summary(command), 1.0),
    ]
    if closing:
        lines.append(
            f"| window closed without on_pre_close_window → its files gone | {statistics.median(closing):.0f} | "
            f"| {max(closing):.0f} | {len(closing)} | ≤ 2000 |"
        )
    if violations or errors:
        lines.append(f"\nThread violations: {violations}\nPlugin errors: {errors}")
    print("\n".join(lines))
    if violations or errors:
        raise SystemExit(1)


CHAT_AGENT = os.path.join(ROOT, "tests", "sublime_editor", "chat_agent.py")
CHAT_FLUSH = "chat.view.StreamingChatView.flush"


def thread_cpu_times(chat_view: Any) -> tuple[list[int], list[int]]:
    """Also note each flush's CPU time on its own thread: the wall time above includes waiting for
    the GIL while the loop thread parses the agent's messages (one process, as in Sublime's host)."""
    samples: list[int] = []
    outside_buffer: list[int] = []
    flush = chat_view.StreamingChatView.flush
    modify = sublime.View._modify  # the fake's buffer edit: rebuilds the whole text (a Python str)
    in_modify = [0]

    def timed_modify(self: Any, *args: Any) -> int:
        start = time.thread_time_ns()
        try:
            return modify(self, *args)
        finally:
            in_modify[0] += time.thread_time_ns() - start

    def timed_flush(self: Any) -> None:
        in_modify[0] = 0
        start = time.thread_time_ns()
        try:
            flush(self)
        finally:
            total = time.thread_time_ns() - start
            samples.append(total)
            outside_buffer.append(total - in_modify[0])
            # The fake keeps the whole text per undo step (Sublime keeps the edits): 300 steps of a
            # 10 MB buffer would hold gigabytes, so its history is dropped, untimed.
            _state.host().buffers[self.panel.view.buffer_id()].undo.clear()

    timed_flush.__name__ = timed_flush.__qualname__ = "flush"  # the fake names callbacks by it
    timed_flush.__module__ = flush.__module__
    chat_view.StreamingChatView.flush = timed_flush
    sublime.View._modify = timed_modify
    return samples, outside_buffer


def open_chat(tmp: str, agent_script: str = CHAT_AGENT) -> tuple[sublime.View, Any]:
    """A fresh fake Sublime with the package loaded and a chat with the scripted agent, ready."""
    private_editor(tmp)
    folder = os.path.join(tmp, "work")
    os.makedirs(folder)
    agent = {"name": "Bench", "command": sys.executable, "args": [agent_script]}
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [agent]})
    window = control.new_window([folder])
    control.load_plugin()
    wait_ready(window)
    window.run_command("gemini_companion_new_chat", {"agent": "Bench"})
    view = next(v for v in window.views() if v.settings().get("gemini_companion.chat") is not None)
    sessions = sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.chat.sessions"]
    chat = sessions.for_view(view)
    control.pump_until(lambda: chat.ready or chat.ended, 60, "the chat to start")
    control.settle()
    return view, chat


def chat_main(quick: bool) -> None:
    """`--chat`: the main thread's time while a chat streams a large answer. The scripted agent
    (tests/sublime_editor/chat_agent.py, a real process on the SDK's agent side) sends COUNT chunks of SIZE
    characters as fast as it can; the fake times every main-thread callback, and the chat's
    `StreamingChatView.flush` ticks are picked out. Per update = the ticks' total over the chunks."""
    count, size = (1000, 1000) if quick else (10_000, 1000)  # 1 MB / 10 MB
    with tempfile.TemporaryDirectory() as tmp:
        view, chat = open_chat(tmp)
        control.type_text(view, f"big {count} {size}")
        cpu, ours = thread_cpu_times(sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.chat.view"])
        control.start_timing()
        start = time.perf_counter()
        view.run_command("gemini_companion_chat_send")
        control.pump_until(lambda: not chat.busy, 600, "the answer")
        control.settle()
        elapsed = time.perf_counter() - start
        timings = control.stop_timing()
        shown = view.size()
        control.unload_plugin()
        control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end")
        violations, errors = control.violations(), control.errors()
        control.shutdown()
    ticks = [ns for thread, name, ns in timings if thread == "main" and name.endswith(CHAT_FLUSH)]
    others = [ns for thread, name, ns in timings if thread == "main" and not name.endswith(CHAT_FLUSH)]
    per_update = sum(ticks) / count / 1e6
    lines = [
        f"Chat streaming on the fake Sublime (Python {sys.version.split()[0]}{', --quick' if quick else ''}): "
        f"{count} chunks × {size} characters = {count * size / 1e6:.0f} MB in {elapsed:.1f} s, {len(ticks)} ticks",
        "",
        "| measurement | p50 ms | p99 ms | max ms | n | target |",
        "|---|---|---|---|---|---|",
        row("main-thread tick of the chat (StreamingChatView.flush)", summary(ticks), 1.0),
        row("… the same ticks, CPU time of the main thread only (time.thread_time)", summary(cpu), 1.0),
        row("… of which outside the fake's buffer edit (View._modify)", summary(ours), 1.0),
        row("other main-thread callbacks meanwhile", summary(others or [0]), None),
        f"| main-thread time per streamed update (ticks' total / chunks) | {per_update:.4f} | | | {count} | |",
    ]
    if shown < count * size:
        lines.append(f"\nOnly {shown} of {count * size} characters reached the view.")
    if violations or errors:
        lines.append(f"\nThread violations: {violations}\nPlugin errors: {errors}")
    print("\n".join(lines))
    if violations or errors or shown < count * size:
        raise SystemExit(1)


TOOL_AGENT = os.path.join(ROOT, "tests", "acp", "tool_agent.py")
WRITE_LINES = (
    "import sys\nline = b'x' * 1023 + b'\\n'\nfor _ in range(int(sys.argv[1])): sys.stdout.buffer.write(line)\n"
)


def terminal_main(quick: bool) -> None:
    """`--terminal` (issue #41): a command's 10 MB output streamed into its card. The scripted agent
    (tests/acp/tool_agent.py) runs it in the client terminal (terminal/create, a tool call
    embedding it, wait_for_exit, output, release); the command writes 10 240 lines of 1 KiB as
    fast as it can. Every chat tick (`StreamingChatView.flush`) is timed as `--chat` times them."""
    lines = 1024 if quick else 10_240  # 1 MB / 10 MB
    spec = {"command": sys.executable, "args": ["-c", WRITE_LINES, str(lines)], "quiet": True}
    with tempfile.TemporaryDirectory() as tmp:
        view, chat = open_chat(tmp, TOOL_AGENT)
        cpu, _ = thread_cpu_times(sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.chat.view"])
        control.type_text(view, f"term {json.dumps(spec)}")
        control.start_timing()
        start = time.perf_counter()
        view.run_command("gemini_companion_chat_send")
        asks = lambda: [p for p in control.phantoms(view) if "asks" in p["content"]]  # noqa: E731
        (card,) = control.pump_until(asks, 600, "the agent's permission card")  # only an allowed command runs
        control.click_link(view, "option-0", card["key"])  # Allow
        control.pump_until(lambda: not chat.busy, 600, "the command and the turn")
        control.settle()
        elapsed = time.perf_counter() - start
        timings = control.stop_timing()
        reply = view.substr(sublime.Region(0, view.size()))
        control.unload_plugin()
        control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end")
        violations, errors = control.violations(), control.errors()
        control.shutdown()
    ticks = chat_ticks(timings)
    others = [ns for thread, name, ns in timings if thread == "main" and not name.endswith(CHAT_FLUSH)]
    out = [
        f"A command's output streamed into its card on the fake Sublime (Python {sys.version.split()[0]}"
        f"{', --quick' if quick else ''}): {lines * 1024 / 1e6:.1f} MB in {elapsed:.1f} s, {len(ticks)} ticks",
        "",
        "| measurement | p50 ms | p99 ms | max ms | n | target |",
        "|---|---|---|---|---|---|",
        row("main-thread tick of the chat (StreamingChatView.flush)", summary(ticks), 1.0),
        row("… CPU time of the main thread only (time.thread_time)", summary(cpu), 1.0),
        row("other main-thread callbacks meanwhile", summary(others or [0]), None),
        f"| main-thread share of the turn (ticks' wall total / turn) | {sum(ticks) / 1e9 / elapsed:.2%} | | | | |",
    ]
    if f'"truncated": {"false" if quick else "true"}' not in reply:  # 10 MB is over the 4 MiB a terminal keeps
        out.append("\nThe agent's reply does not say the output was truncated: " + reply[-300:])
    if violations or errors:
        out.append(f"\nThread violations: {violations}\nPlugin errors: {errors}")
    print("\n".join(out))
    if violations or errors:
        raise SystemExit(1)


def chat_ticks(timings: list[tuple[str, str, int]]) -> list[int]:
    return [ns for thread, name, ns in timings if thread == "main" and name.endswith(CHAT_FLUSH)]


def timed_turn(view: sublime.View, chat: Any, prompt: str, cpu: list[int]) -> tuple[list[int], list[int]]:
    """The chat's ticks (wall ns, CPU ns) while the agent answers `prompt`."""
    control.type_text(view, prompt)
    cpu.clear()
    control.start_timing()
    view.run_command("gemini_companion_chat_send")
    control.pump_until(lambda: not chat.busy, 600, "the answer")
    control.settle()
    return chat_ticks(control.stop_timing()), list(cpu)


def render_main(quick: bool) -> None:
    """`--render` (issue #28): the chat's main-thread tick for a 1000-chunk thought and for a
    200 000-character line. Held: the loop thread hands over 1000 thought chunks while the main
    thread is busy elsewhere (the test thread calls the port, as `test_chat_render.py` does), then
    one tick shows them. Streamed: the scripted agent sends them (`think 1000`, `long 200000`) and
    every tick of the turn is timed. Runs on any checkout of the package (the "before" figures in
    bench/README.md come from this script run against the commit before the fix)."""
    rounds = 3 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        view, chat = open_chat(tmp)
        cpu, ours = thread_cpu_times(sys.modules[f"{control.PACKAGE_NAME}.companion.sublime_editor.chat.view"])
        held: tuple[list[int], list[int]] = ([], [])
        for _ in range(rounds):
            for index in range(1000):
                chat.port.thought(f"t{index} ")
            cpu.clear()
            control.start_timing()
            control.settle()
            held[0].extend(chat_ticks(control.stop_timing()))
            held[1].extend(cpu)
            chat.port.turn_ended("end_turn")
            control.settle()
        streamed: tuple[list[int], list[int]] = ([], [])
        lines: tuple[list[int], list[int], list[int]] = ([], [], [])
        for _ in range(rounds):
            wall, spent = timed_turn(view, chat, "think 1000", cpu)
            streamed[0].extend(wall)
            streamed[1].extend(spent)
        for _ in range(rounds):
            ours.clear()
            wall, spent = timed_turn(view, chat, "long 200000", cpu)
            lines[0].extend(wall)
            lines[1].extend(spent)
            lines[2].extend(ours)
        longest = max(len(line) for line in view.substr(sublime.Region(0, view.size())).split("\n"))
        control.unload_plugin()
        control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end")
        violations, errors = control.violations(), control.errors()
        control.shutdown()
    out = [
        f"Chat rendering on the fake Sublime (Python {sys.version.split()[0]}{', --quick' if quick else ''}), "
        f"{rounds} rounds each",
        "",
        "| measurement (main thread) | p50 ms | p99 ms | max ms | n | target |",
        "|---|---|---|---|---|---|",
        row("1000 thought chunks held, then one tick: wall", summary(held[0]), 1.0),
        row("… CPU time of the main thread (time.thread_time)", summary(held[1]), 1.0),
        row("a 1000-chunk thought streamed (think 1000), every tick: wall", summary(streamed[0]), 1.0),
        row("… CPU time", summary(streamed[1]), 1.0),
        row("a 200 000-character line (long 200000), every tick: wall", summary(lines[0]), None),
        row("… CPU time", summary(lines[1]), None),
        row("… of which outside the fake's buffer edit (View._modify)", summary(lines[2]), 1.0),
        f"| ticks per turn: thought {len(streamed[0]) / rounds:.1f}, line {len(lines[0]) / rounds:.1f} | | | | | |",
        f"| longest line in the view | {longest} characters | | | | |",
    ]
    if violations or errors:
        out.append(f"\nThread violations: {violations}\nPlugin errors: {errors}")
    print("\n".join(out))
    if violations or errors:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    parser.add_argument("--lifecycle", action="store_true", help="only the unload / window command / close rows")
    parser.add_argument("--chat", action="store_true", help="only the chat's streaming rows (a 10 MB answer)")
    parser.add_argument("--render", action="store_true", help="only the chat's thought and long-line ticks")
    parser.add_argument("--terminal", action="store_true", help="a command's 10 MB output streamed into its card")
    args = parser.parse_args()
    if args.terminal:
        terminal_main(args.quick)
        return
    if args.render:
        render_main(args.quick)
        return
    if args.lifecycle:
        lifecycle_main(args.quick)
        return
    if args.chat:
        chat_main(args.quick)
        return
    n_events, n_loaded, n_e2e = (200, 10, 30) if args.quick else (5000, 100, 300)
    results: dict[str, Any] = {"quick": args.quick, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TMPDIR"] = os.path.join(tmp, "tmp")  # Node's os.tmpdir(): discovery files stay private
        os.makedirs(os.environ["TMPDIR"])
        control.reset(os.path.join(tmp, "data"))
        folders = [os.path.join(tmp, name) for name in ("one", "two")]
        for folder in folders:
            os.makedirs(folder)
        window = control.new_window([folders[0]])
        control.new_window([folders[1]])
        control.focus_window(window)
        a = control.open_file(window, write(folders[0], "a.py", text(60)))
        b = control.open_file(window, write(folders[0], "b.py", text(60)))
        _views[:] = [a, b]
        current[:] = [a]

        start = time.perf_counter_ns()
        plugin = control.load_plugin()
        first_load = time.perf_counter_ns() - start
        wait_ready(window)
        loaded, starts = measure_plugin_loaded(plugin, n_loaded)
        handle = wait_ready(window)

        client = Client.sdk(handle.url, handle.token)
        ide_client = Client.ide_client(handle, folders[0])  # both see every change of the same run
        triggers = selection_triggers(a, n_e2e)
        handlers = measure_handlers(window, a, b, n_events)  # with the clients still connected
        session = measure_session(window, a, b, folders[0], 20 if args.quick else 100)
        extra = os.path.join(tmp, "dropped")
        os.makedirs(extra)
        detection = measure_folder_detection(window, extra, 10 if args.quick else 30)
        e2e = latencies(triggers, client.receipts())
        ide_e2e = latencies(triggers, ide_client.receipts()) if ide_client is not None else []
        control.unload_plugin()
        control.settle()
        violations, errors = control.violations(), control.errors()
        control.shutdown()

    results["plugin_loaded"] = summary(loaded)
    results["start windows (main thread, after the library check)"] = summary(starts)
    results["first load (import + plugin_loaded)"] = summary([first_load])
    results["handlers"] = handlers
    missing = len(triggers) - len(e2e)
    results["selection -> client"], results["selection -> client beyond debounce"] = e2e_summary(e2e, missing)
    ide_missing = len(triggers) - len(ide_e2e) if ide_e2e else 0
    if ide_e2e:
        results["selection -> IdeClient"], results["selection -> IdeClient beyond debounce"] = e2e_summary(
            ide_e2e, ide_missing
        )
    results["folders changed without an event -> discovery file"] = {
        "p50": statistics.median(detection),
        "max": max(detection),
        "n": len(detection),
    }
    results["violations"], results["errors"] = violations, errors

    lines = [
        f"Sublime adapter on the fake Sublime (Python {results['python']}{', --quick' if args.quick else ''})",
        "",
        "| measurement | p50 ms | p99 ms | max ms | n | target |",
        "|---|---|---|---|---|---|",
        row("plugin_loaded (host thread)", results["plugin_loaded"], LOADED_TARGET_MS),
        row(
            "then: start 2 windows' servers (main thread)",
            results["start windows (main thread, after the library check)"],
            None,
        ),
        row("first load: import + plugin_loaded", results["first load (import + plugin_loaded)"], None),
    ]
    lines += [row(name, data, EVENT_TARGET_MS) for name, data in handlers.items()]
    lines += [
        row("selection change → client receipt", results["selection -> client"], None),
        row("… of which beyond the 50 ms debounce", results["selection -> client beyond debounce"], None),
    ]
    results["session callbacks"] = session
    worst = sorted(session.items(), key=lambda item: item[1]["p99_ms"], reverse=True)
    lines += ["", "Every callback of ours during a working session (slowest p99 first; ms on the thread it held):", ""]
    lines += ["| callback | p50 ms | p99 ms | max ms | n | target |", "|---|---|---|---|---|---|"]
    lines += [row(name, data, EVENT_TARGET_MS) for name, data in worst[:15]]
    lines += ["", "| measurement | p50 ms | p99 ms | max ms | n | target |", "|---|---|---|---|---|---|"]
    folders_row = results["folders changed without an event -> discovery file"]
    lines.append(
        f"| folders changed without an event → discovery file (1 s poll) | {folders_row['p50']:.0f} | "
        f"| {folders_row['max']:.0f} | {folders_row['n']} | |"
    )
    if ide_e2e:
        lines += [
            row("selection change → Gemini CLI's IdeClient", results["selection -> IdeClient"], None),
            row("… of which beyond the 50 ms debounce", results["selection -> IdeClient beyond debounce"], None),
        ]
    else:
        lines.append(f"\n(IdeClient rows skipped: {_ide.MISSING}.)")
    if missing or ide_missing:
        lines.append(f"\n{missing} / {ide_missing} of {len(triggers)} selection changes never reached the clients.")
    if violations or errors:
        lines.append(f"\nThread violations: {violations}\nPlugin errors: {errors}")
    print("\n".join(lines))
    if not args.quick:  # a smoke run's numbers are not results
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "adapter.json"), "w", encoding="utf-8") as out:
            json.dump(results, out, indent=2)
    if violations or errors or missing or ide_missing:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
