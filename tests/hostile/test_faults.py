"""Faults: clients killed mid-review and mid-stream, windows closed under a pending review, an unwritable
discovery folder, and 200 start/connect/stop cycles -- the user's review survives and nothing leaks."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import anyio
import psutil
import pytest

from companion.core.context import Position
from companion.core.reviews import Outcome, Review
from companion.runtime import Runtime, WindowHandle
from tests.hostile.conftest import ACCEPT, RawHttp, RawStreamClient, initialize_body
from tests.mcp_client import connect, text_of
from tests.scripted_editor import ScriptedEditor
from tests.window_fixtures import discovery_dir, editor, runtime, window, workspace

__all__ = ["discovery_dir", "editor", "runtime", "window", "workspace"]  # fixtures, found by pytest here

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def settle(check: Callable[[], bool], timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def spawn(window: WindowHandle, mode: str, file_path: str = "") -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tests.hostile.killable_client", window.url, window.token, mode, file_path]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})


def wait_line(proc: subprocess.Popen[str], expected: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == expected, f"the client said {line!r} (exit code {proc.poll()})"


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


# -- a client dies --


def active(params: dict[str, object]) -> str | None:
    files = params["workspaceState"]["openFiles"]  # type: ignore[index]
    return files[0]["path"] if files else None


@pytest.mark.anyio
async def test_a_client_killed_mid_review_leaves_the_review_usable(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    path = os.path.join(workspace, "app.py")
    doomed = spawn(window, "review", path)
    await anyio.to_thread.run_sync(wait_line, doomed, "opened")
    review = editor.shown[0][0]
    kill(doomed)
    assert review.is_open and window.server is not None and window.server.reviews.get(path) is review

    async with connect(window.url, window.token, "next-cli") as client:
        await client.wait_for("ide/contextUpdate")
        # The user still decides the review the dead client opened; the next client hears about it.
        review.accept("kept by the user\n")
        accepted = await client.wait_for("ide/diffAccepted", lambda p: p["filePath"] == path)
        assert accepted["content"] == "kept by the user\n"
        # And it works normally afterwards.
        assert not (await client.open_diff(path, "second try\n")).is_error
        closed = await client.close_diff(path)
        assert json.loads(text_of(closed)) == {"content": "second try\n"}


@pytest.mark.anyio
async def test_a_client_killed_mid_stream_does_not_stall_the_others(window: WindowHandle, workspace: str) -> None:
    doomed = spawn(window, "stream")
    await anyio.to_thread.run_sync(wait_line, doomed, "streaming")
    async with connect(window.url, window.token, "survivor") as survivor:
        await survivor.wait_for("ide/contextUpdate")
        assert settle(lambda: "doomed-stream" in window.connected_clients, 10)
        stop = threading.Event()

        def churn() -> None:  # the server is writing to both streams when the client dies
            i = 0
            while not stop.is_set():
                i += 1
                window.context.activate(os.path.join(workspace, f"f{i}.py"), Position(1, 1))
                time.sleep(0.06)

        churner = threading.Thread(target=churn)
        churner.start()
        try:
            await anyio.sleep(0.3)
            kill(doomed)
            await anyio.sleep(0.3)
        finally:
            stop.set()
            churner.join()
        final = os.path.join(workspace, "final.py")
        window.context.activate(final, Position(3, 4))
        update = await survivor.wait_for("ide/contextUpdate", lambda p: active(p) == final)
        assert update["workspaceState"]["openFiles"][0]["cursor"] == {"line": 3, "character": 4}
        # The server noticed the dead client: the status bar no longer counts it.
        assert await anyio.to_thread.run_sync(lambda: settle(lambda: "doomed-stream" not in window.connected_clients))
    async with connect(window.url, window.token, "next-cli") as client:
        await client.wait_for("ide/contextUpdate", lambda p: active(p) == final)


@pytest.mark.anyio
async def test_a_client_killed_mid_body_leaves_no_review_and_the_server_serving(
    window: WindowHandle, editor: ScriptedEditor, workspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="gemini_companion")
    path = os.path.join(workspace, "big.txt")
    doomed = spawn(window, "body", path)
    await anyio.to_thread.run_sync(wait_line, doomed, "sending")
    kill(doomed)
    async with connect(window.url, window.token, "next-cli") as client:
        assert not (await client.open_diff(os.path.join(workspace, "small.txt"), "ok\n")).is_error
    assert [r.file_path for r, _, _ in editor.shown] == [os.path.join(workspace, "small.txt")]
    # Not an error of ours: one debug line, no traceback in the user's console.
    with anyio.fail_after(10):
        while not any("hung up" in r.getMessage() for r in caplog.records if r.name == "gemini_companion"):
            await anyio.sleep(0.02)
    # Only the server's side shares Sublime's console. The test's own SDK client may log its
    # own shutdown race ("Error parsing SSE message" when a notification lands as it closes).
    in_sublime = [r for r in caplog.records if not r.name.startswith("mcp.client")]
    assert [r.getMessage() for r in in_sublime if r.levelno >= logging.WARNING] == []


# -- the window goes away under a review --


@pytest.mark.anyio
async def test_closing_the_window_with_a_pending_review_closes_it_quietly(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    path = os.path.join(workspace, "pending.py")
    async with connect(window.url, window.token) as client:
        assert not (await client.open_diff(path, "new\n")).is_error
        review = editor.shown[0][0]
        started = time.monotonic()
        await anyio.to_thread.run_sync(lambda: window.close().result(15))
        assert time.monotonic() - started < 15
        assert review.outcome is Outcome.CLOSED and review in editor.closed
        assert not os.path.exists(window.discovery_path)
        # A decision arriving after the window closed changes nothing and sends nothing.
        review.accept("too late")
        await anyio.sleep(0.2)
        assert review.outcome is Outcome.CLOSED
        assert client.of("ide/diffAccepted") == [] and client.of("ide/diffRejected") == []


class StuckEditor(ScriptedEditor):
    """An editor whose UI never comes back from showing a review (a hung main thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()

    async def show_review(self, review: Review) -> None:
        await super().show_review(review)
        self.entered.set()
        await asyncio.sleep(3600)


@pytest.mark.anyio
async def test_closing_the_window_while_the_editor_hangs_in_open_diff_ends_the_call(
    runtime: Runtime, workspace: str
) -> None:
    editor = StuckEditor()
    window = runtime.open_window(editor, [workspace])
    await anyio.to_thread.run_sync(lambda: window.ready.result(30))
    outcome: list[object] = []

    async def call() -> None:
        try:
            async with connect(window.url, window.token) as client:
                outcome.append(await client.open_diff(os.path.join(workspace, "x.py"), "x\n"))
        except BaseException as exc:  # the server went away mid-call: the client must be told, not hang
            outcome.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        assert await anyio.to_thread.run_sync(editor.entered.wait, 30)
        await anyio.to_thread.run_sync(lambda: window.close().result(15))
        with anyio.fail_after(20):
            while not outcome:
                await anyio.sleep(0.05)
    review = editor.shown[0][0]
    assert review.outcome is Outcome.CLOSED
    result = outcome[0]
    assert isinstance(result, BaseException) or getattr(result, "is_error", False), result


@pytest.mark.anyio
async def test_closing_the_window_while_write_file_waits_for_the_user_ends_the_call_and_writes_nothing(
    runtime: Runtime, editor: ScriptedEditor, workspace: str
) -> None:
    from companion.mcp_tools.factory import tool_factory
    from companion.mcp_tools.settings import WorkspaceToolSettings

    window = runtime.open_window(editor, [workspace], tool_factory=tool_factory(WorkspaceToolSettings()))
    await anyio.to_thread.run_sync(lambda: window.ready.result(30))
    target = os.path.join(workspace, "new.txt")
    outcome: list[object] = []

    async def call() -> None:
        try:
            async with connect(window.url, window.token, "agent") as client:
                outcome.append(await client.session.call_tool("write_file", {"path": target, "content": "x\n"}))
        except BaseException as exc:  # the server went away mid-call
            outcome.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        review = await anyio.to_thread.run_sync(editor.wait_shown)
        assert review.on_decided is not None  # the tool itself waits on this review's decision
        await anyio.to_thread.run_sync(lambda: window.close().result(15))
        with anyio.fail_after(20):
            while not outcome:
                await anyio.sleep(0.05)
    assert review.outcome is Outcome.CLOSED and review in editor.closed
    result = outcome[0]
    if not isinstance(result, BaseException):
        assert "not changed" in text_of(result) or result.is_error, text_of(result)  # type: ignore[attr-defined]
    assert not os.path.exists(target)


# -- the discovery folder cannot be written --


def make_unwritable(folder: str) -> Callable[[], None]:
    """Make `folder` impossible to write in; returns the undo. As root, chmod does not stop writes, so the
    folder is replaced by a regular file (any path below it then fails, as a read-only folder would)."""
    os.makedirs(folder, exist_ok=True)
    if os.geteuid() != 0:
        os.chmod(folder, 0o500)
        return lambda: os.chmod(folder, 0o700)
    aside = folder + ".aside"
    os.rename(folder, aside)
    with open(folder, "w") as f:
        f.write("not a folder\n")

    def undo() -> None:
        os.unlink(folder)
        os.rename(aside, folder)

    return undo


def test_an_unwritable_discovery_folder_is_reported_clearly_and_nothing_else_breaks(
    runtime: Runtime, discovery_dir: str, workspace: str
) -> None:
    first = runtime.open_window(ScriptedEditor(), [workspace])
    first.ready.result(30)
    undo = make_unwritable(discovery_dir)
    try:
        second = runtime.open_window(ScriptedEditor(), [workspace])
        with pytest.raises(Exception) as failure:
            second.ready.result(30)
        message = str(failure.value)
        assert discovery_dir in message, message  # names the folder...
        assert "Gemini CLI" in message and ("writable" in message or "permission" in message.lower()), message
        assert "Traceback" not in message
        # ...and the failed window keeps no server listening.
        assert second.server is None and second not in runtime.windows
    finally:
        undo()
    # The window that was already running still serves, and new windows open once the folder is fixed.
    http = RawHttp(first.port)
    reply = http.request(
        "POST",
        "/mcp",
        [
            ("Host", f"127.0.0.1:{first.port}"),
            ("Authorization", f"Bearer {first.token}"),
            ("Accept", ACCEPT),
            ("Content-Type", "application/json"),
        ],
        initialize_body(),
    )
    http.close()
    assert reply.status == 200
    third = runtime.open_window(ScriptedEditor(), [workspace])
    third.ready.result(30)
    assert os.path.exists(third.discovery_path)


# -- reload cycles --


class SdkClient:
    """The SDK client on its own thread and loop, holding its stream (like a separate Gemini CLI)."""

    def __init__(self, handle: WindowHandle) -> None:
        self.ready = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run(handle)), name="sdk-client")
        self.thread.start()
        assert self.ready.wait(30)

    async def _run(self, handle: WindowHandle) -> None:
        try:
            async with connect(handle.url, handle.token) as client:
                await client.wait_for("ide/contextUpdate")
                self.ready.set()
                while not self.release.is_set():
                    await asyncio.sleep(0.02)
        except BaseException:  # the server stopping under it ends the client
            self.ready.set()

    def close(self) -> None:
        self.release.set()
        self.thread.join(15)
        assert not self.thread.is_alive()


def resources() -> tuple[set[str], int, int]:
    process = psutil.Process()
    fds = process.num_fds() if hasattr(process, "num_fds") else process.num_handles()
    return {t.name for t in threading.enumerate()}, fds, len(process.net_connections(kind="inet"))


def test_two_hundred_start_connect_stop_cycles_leak_nothing(discovery_dir: str, workspace: str) -> None:
    def cycle(i: int) -> None:
        runtime = Runtime(discovery_directory=discovery_dir)
        handle = runtime.open_window(ScriptedEditor(), [workspace])
        second = runtime.open_window(ScriptedEditor(), [workspace])
        handle.ready.result(30)
        second.ready.result(30)
        clients: list[RawStreamClient | SdkClient] = [RawStreamClient(handle), RawStreamClient(second)]
        if i % 25 == 0:
            clients.append(SdkClient(handle))
        assert len(os.listdir(discovery_dir)) == 2
        runtime.stop()
        for client in clients:
            client.close()

    cycle(0)  # warm up imports and lazily created pools
    threads_before, fds_before, sockets_before = resources()
    for i in range(1, 201):
        cycle(i)
    assert os.listdir(discovery_dir) == []
    assert settle(lambda: {t.name for t in threading.enumerate()} <= threads_before), threading.enumerate()
    assert settle(lambda: resources()[2] <= sockets_before), psutil.Process().net_connections(kind="inet")
    assert settle(lambda: resources()[1] <= fds_before + 2), (fds_before, resources()[1])


def test_the_unwritable_helper_really_blocks_writes(tmp_path: str) -> None:
    folder = os.path.join(str(tmp_path), "d")
    undo = make_unwritable(folder)
    try:
        with pytest.raises(OSError), open(os.path.join(folder, "x"), "w"):
            pass
    finally:
        undo()
    shutil.rmtree(folder)
