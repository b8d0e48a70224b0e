"""The loop thread: many windows from any thread, fast stop with clients attached, nothing leaked."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Callable

import psutil
import pytest

from companion.core.tool_calls import ToolSpec
from companion.runtime import THREAD_NAME, Runtime, RuntimeStopped, WindowHandle
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor


class HeldClient:
    """A client on its own thread and loop (like a separate CLI) that holds its stream open."""

    def __init__(self, handle: WindowHandle) -> None:
        self.connected = threading.Event()
        self.contexts = 0
        self.error: BaseException | None = None
        self._release: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run(handle)), daemon=True)
        self.thread.start()
        assert self.connected.wait(30), f"client did not connect: {self.error!r}"

    async def _run(self, handle: WindowHandle) -> None:
        self._loop = asyncio.get_running_loop()
        self._release = asyncio.Event()
        try:
            async with connect(handle.url, handle.token) as client:
                await client.wait_for("ide/contextUpdate")
                self.connected.set()
                await self._release.wait()
        except BaseException as exc:  # the server going away ends the client; that is expected
            self.error = exc
            self.connected.set()

    def release(self) -> None:
        if self._loop is not None and self._release is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._release.set)
            except RuntimeError:
                pass
        self.thread.join(10)


def test_five_window_servers_share_one_thread_and_one_loop(runtime: Runtime, tmp_path: str) -> None:
    before = set(threading.enumerate())
    handles = [runtime.open_window(ScriptedEditor(), [str(tmp_path)]) for _ in range(5)]
    for handle in handles:
        handle.ready.result(30)
    started = [t for t in set(threading.enumerate()) - before if not t.name.startswith("asyncio")]  # not to_thread's
    assert [t.name for t in started] == [THREAD_NAME]
    assert len({h.port for h in handles}) == 5


def test_windows_opened_from_many_threads_each_get_a_server_and_a_discovery_file(
    runtime: Runtime, discovery_dir: str, tmp_path: str
) -> None:
    handles: list[WindowHandle] = []
    lock = threading.Lock()

    def open_one(i: int) -> None:
        handle = runtime.open_window(ScriptedEditor(), [os.path.join(str(tmp_path), f"w{i}")])
        with lock:
            handles.append(handle)

    threads = [threading.Thread(target=open_one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for handle in handles:
        handle.ready.result(30)
    assert len({h.port for h in handles}) == 8
    names = sorted(os.listdir(discovery_dir))
    assert names == sorted(os.path.basename(h.discovery_path) for h in handles)
    for handle in handles:
        with open(handle.discovery_path) as f:
            assert json.load(f)["workspacePath"] == handle.folders[0]


def test_folder_changes_rewrite_the_file_and_closing_removes_it(window: WindowHandle, tmp_path: str) -> None:
    extra = os.path.join(str(tmp_path), "second")
    window.set_folders([window.folders[0], extra]).result(10)
    with open(window.discovery_path) as f:
        assert json.load(f)["workspacePath"] == os.pathsep.join([window.folders[0], extra])
    window.close().result(10)
    assert not os.path.exists(window.discovery_path)


def test_stop_is_quick_even_while_clients_hold_their_streams(discovery_dir: str, workspace: str) -> None:
    durations = []
    for _ in range(3):
        runtime = Runtime(discovery_directory=discovery_dir)
        handle = runtime.open_window(ScriptedEditor(), [workspace])
        handle.ready.result(30)
        clients = [HeldClient(handle), HeldClient(handle)]
        started = time.monotonic()
        runtime.stop()
        durations.append(time.monotonic() - started)
        for client in clients:
            client.release()
        assert os.listdir(discovery_dir) == []
    # The bound; the median of three keeps one scheduling hiccup on a shared machine out.
    assert sorted(durations)[1] < 1.0, durations


def test_a_stopped_runtime_refuses_new_windows_clearly(discovery_dir: str) -> None:
    runtime = Runtime(discovery_directory=discovery_dir)
    runtime.stop()
    runtime2 = Runtime(discovery_directory=discovery_dir)
    runtime2.open_window(ScriptedEditor(), []).ready.result(30)
    runtime2.stop()
    with pytest.raises(RuntimeStopped):
        runtime2.open_window(ScriptedEditor(), [])


def test_a_window_closed_before_it_listens_reports_it(runtime: Runtime) -> None:
    handle = runtime.open_window(ScriptedEditor(), [])
    handle.close()
    try:
        handle.ready.result(30)
    except RuntimeStopped:
        pass  # closed before it started
    else:
        assert not os.path.exists(handle.discovery_path)


def test_a_window_whose_server_cannot_be_built_hears_why(runtime: Runtime, workspace: str) -> None:
    """A failing tool factory (or server) answers `ready` with the error: the window must not wait
    forever for a server that will never listen, and the runtime keeps serving other windows."""

    def broken(_server: object) -> list[ToolSpec]:
        raise ValueError("workspace tools could not be built")

    handle = runtime.open_window(ScriptedEditor(), [workspace], tool_factory=broken)
    with pytest.raises(ValueError, match="could not be built"):
        handle.ready.result(30)
    assert not handle.discovery_path and handle not in runtime.windows
    assert runtime.open_window(ScriptedEditor(), [workspace]).ready.result(30).port > 0


def stop_while_binding(runtime: Runtime, workspace: str) -> None:
    def stop_during_start(_server: object) -> list[ToolSpec]:
        # Runs on the loop right before the server binds: the stop arrives while it is binding.
        threading.Thread(target=runtime.stop, daemon=True).start()
        time.sleep(0.05)  # let stop() post its request before this coroutine goes on to bind
        return []

    handles = [runtime.open_window(ScriptedEditor(), [workspace], tool_factory=stop_during_start) for _ in range(3)]
    assert settle(lambda: runtime._thread is not None and not runtime._thread.is_alive())
    for handle in handles:
        try:
            handle.ready.result(0)
        except RuntimeStopped:
            continue  # refused: it never listened
        assert handle.closed and not os.path.exists(handle.discovery_path)


def test_stopping_while_servers_are_still_binding_stops_them_cleanly(
    discovery_dir: str, workspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Sublime reloads the package (or quits) while its windows' servers are still starting: each
    server either finishes starting and is then stopped, or is refused; nothing is cancelled halfway
    (that logged uvicorn tracebacks and left `ready` failing with a bare CancelledError)."""
    caplog.set_level(logging.ERROR)
    for _ in range(5):
        stop_while_binding(Runtime(discovery_directory=discovery_dir), workspace)
    assert os.listdir(discovery_dir) == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def resources() -> tuple[set[threading.Thread], int, int]:
    """Live threads (by identity, so a leaked thread with a familiar name still counts), fds, sockets."""
    process = psutil.Process()
    fds = process.num_fds() if hasattr(process, "num_fds") else process.num_handles()
    return set(threading.enumerate()), fds, len(process.net_connections(kind="inet"))


def settle(check: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_a_hundred_start_stop_cycles_leave_nothing_behind(discovery_dir: str, workspace: str) -> None:
    def cycle(with_client: bool) -> None:
        runtime = Runtime(discovery_directory=discovery_dir)
        handle = runtime.open_window(ScriptedEditor(), [workspace])
        handle.ready.result(30)
        client = HeldClient(handle) if with_client else None
        runtime.stop()
        if client is not None:
            client.release()

    cycle(True)  # warm up imports and lazily created pools
    threads_before, fds_before, sockets_before = resources()
    for i in range(100):
        cycle(with_client=i % 10 == 0)
    assert os.listdir(discovery_dir) == []
    assert settle(lambda: set(threading.enumerate()) <= threads_before), threading.enumerate()
    assert settle(lambda: resources()[2] <= sockets_before), psutil.Process().net_connections(kind="inet")
    assert settle(lambda: resources()[1] <= fds_before + 2), (fds_before, resources()[1])


def test_a_hundred_window_open_close_cycles_in_one_runtime_leave_nothing_behind(
    runtime: Runtime, discovery_dir: str, workspace: str
) -> None:
    def cycle(with_client: bool) -> None:
        handle = runtime.open_window(ScriptedEditor(), [workspace])
        handle.ready.result(30)
        assert os.path.exists(handle.discovery_path)
        client = HeldClient(handle) if with_client else None
        handle.close().result(10)
        assert not os.path.exists(handle.discovery_path)
        if client is not None:
            client.release()

    cycle(True)  # warm up: the loop thread and lazily created pools exist from here on
    threads_before, fds_before, sockets_before = resources()
    for i in range(100):
        cycle(with_client=i % 10 == 0)
    assert os.listdir(discovery_dir) == []
    assert runtime.windows == []
    assert settle(lambda: set(threading.enumerate()) <= threads_before), threading.enumerate()
    assert settle(lambda: resources()[2] <= sockets_before), psutil.Process().net_connections(kind="inet")
    assert settle(lambda: resources()[1] <= fds_before + 2), (fds_before, resources()[1])


def test_a_loop_that_cannot_start_fails_its_windows_instead_of_leaving_them_waiting(
    discovery_dir: str, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the loop thread dies (an event loop this platform cannot create), every window waiting
    for its server hears why at once, and later windows are refused clearly."""

    def broken_loop(*args: object, **kwargs: object) -> None:
        raise OSError("no event loop for you")

    monkeypatch.setattr(asyncio, "run", lambda main, **kwargs: (main.close(), broken_loop())[1])
    runtime = Runtime(discovery_directory=discovery_dir)
    with pytest.raises(RuntimeStopped, match="no event loop for you"):
        # The thread may die before open_window returns (it refuses) or after (ready answers).
        runtime.open_window(ScriptedEditor(), [workspace]).ready.result(10)
    with pytest.raises(RuntimeStopped, match="no event loop for you"):
        runtime.open_window(ScriptedEditor(), [workspace])
    runtime.stop()


def test_failed_accepts_are_reported_once_per_period_not_once_per_attempt(caplog: pytest.LogCaptureFixture) -> None:
    """At the file-descriptor limit asyncio reports every accept() attempt with a traceback."""
    from companion.runtime import AcceptErrorLog

    loop = asyncio.new_event_loop()
    try:
        handler = AcceptErrorLog()
        error = OSError(24, "Too many open files")
        with caplog.at_level(logging.WARNING, logger="gemini_companion"):
            for _ in range(1000):
                handler(loop, {"message": "socket.accept() out of system resource", "exception": error})
        reports = [r for r in caplog.records if "cannot accept connections" in r.getMessage()]
        assert len(reports) == 1 and "Too many open files" in reports[0].getMessage()
        assert handler.suppressed == 999
        # Anything else still reaches asyncio's own handler.
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            handler(loop, {"message": "something else broke"})
        assert any("something else broke" in r.getMessage() for r in caplog.records if r.name == "asyncio")
    finally:
        loop.close()
