"""A window is discoverable before its server stack has loaded.

Gemini CLI reads the discovery file once, as it starts, and Terminus restarts a restored Gemini CLI
tab as Sublime starts: the file must be out before the MCP SDK (most of a second to import, more on
a first start) has loaded. The socket listens from the moment the file names it, so a client that
connects while the stack loads waits in the backlog and is answered when it is ready: never refused,
never half-answered. A window that closes, a runtime that stops, or a stack that fails to load
meanwhile takes its files back and frees its port.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from companion.runtime import Runtime, RuntimeStopped, WindowHandle
from tests.scripted_editor import ScriptedEditor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}

# `python -m companion serve`, with the import of the server stack held until a file appears and
# what was imported when the discovery file was written printed as one JSON line on stderr.
HELD_SERVE = """
import json, os, sys, time
release = sys.argv[1]

class HoldTheServerStack:
    def find_spec(self, name, path=None, target=None):
        if name == "companion.core.server.window_server":
            print(json.dumps({"held": True}), file=sys.stderr, flush=True)
            while not os.path.exists(release):
                time.sleep(0.01)
        return None

sys.meta_path.insert(0, HoldTheServerStack())
from companion.gemini_ide import discovery
write = discovery.write

def recording_write(*args, **kwargs):
    loaded = {name: name in sys.modules for name in ("asyncio", "mcp", "uvicorn", "pydantic", "psutil")}
    print(json.dumps({"published_with": loaded}), file=sys.stderr, flush=True)
    return write(*args, **kwargs)

discovery.write = recording_write
from companion.cli import main
sys.exit(main(["serve", "--workspace", sys.argv[2], "--diff-policy", "accept", "--no-claude"]))
"""


class HeldServe:
    """`python -m companion serve` whose server stack loads only when `release()` is called."""

    def __init__(self, tmp_path: str, workspace: str) -> None:
        self.tmpdir = os.path.join(tmp_path, "tmp")
        os.makedirs(self.tmpdir)
        self.release_file = os.path.join(tmp_path, "release")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
        env.update(TMPDIR=self.tmpdir, PYTHONPATH=ROOT)
        self.process = subprocess.Popen(
            [sys.executable, "-c", HELD_SERVE, self.release_file, workspace],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self.events.append({"stderr": line})

    def wait_for(self, key: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [e for e in self.events if key in e]
            if found:
                return found[0]
            if self.process.poll() is not None:
                break
            time.sleep(0.01)
        raise AssertionError(f"serve never said {key!r}: {self.events}")

    def discovery(self) -> dict[str, Any]:
        folder = os.path.join(self.tmpdir, "gemini", "ide")
        (name,) = os.listdir(folder)
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            return json.load(handle)

    def release(self) -> None:
        with open(self.release_file, "w", encoding="utf-8"):
            pass

    def stop(self) -> None:
        self.release()
        self.process.terminate()
        self.process.wait(30)
        self._reader.join(10)


@pytest.fixture
def held_serve(tmp_path: str, workspace: str) -> Iterator[HeldServe]:
    serve = HeldServe(str(tmp_path), workspace)
    yield serve
    serve.stop()


def post_initialize(port: int, token: str, timeout: float = 60) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(
            "POST",
            "/mcp",
            json.dumps(INITIALIZE),
            {
                "Host": f"127.0.0.1:{port}",
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_serve_writes_its_discovery_file_before_importing_asyncio_or_the_sdk(held_serve: HeldServe) -> None:
    published = held_serve.wait_for("published_with")["published_with"]
    assert published == {"asyncio": False, "mcp": False, "uvicorn": False, "pydantic": False, "psutil": False}


def test_a_client_that_connects_while_the_sdk_loads_waits_and_is_answered(held_serve: HeldServe) -> None:
    held_serve.wait_for("held")  # the server stack's import has begun and is held
    info = held_serve.discovery()
    answers: list[tuple[int, dict[str, Any]]] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            answers.append(post_initialize(int(info["port"]), str(info["authToken"])))
        except BaseException as exc:
            errors.append(exc)

    client = threading.Thread(target=ask, daemon=True)
    client.start()
    client.join(0.5)
    # Connected, not refused, and nothing answered it: the stack is still held.
    assert client.is_alive() and answers == [] and errors == []
    held_serve.release()
    client.join(60)
    assert errors == []
    ((status, body),) = answers
    assert status == 200 and body["id"] == 1 and body["result"]["serverInfo"]["name"]


def _blocking_factory(started: threading.Event, release: threading.Event) -> Any:
    """A tool factory that holds the window's server start (it runs after the files are out, where
    the server stack loads) until `release` is set."""

    def factory(_server: object) -> list[Any]:
        started.set()
        release.wait(30)
        return []

    return factory


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def _held_window(runtime: Runtime, workspace: str) -> tuple[WindowHandle, threading.Event]:
    started, release = threading.Event(), threading.Event()
    handle = runtime.open_window(ScriptedEditor(), [workspace], tool_factory=_blocking_factory(started, release))
    assert started.wait(30)
    assert os.path.exists(handle.discovery_path) and handle.port > 0  # out before the server serves
    return handle, release


def test_a_window_closed_while_its_stack_loads_takes_its_file_back_and_frees_its_port(
    runtime: Runtime, workspace: str
) -> None:
    handle, release = _held_window(runtime, workspace)
    path, port = handle.discovery_path, handle.port
    closing = handle.close()
    release.set()
    closing.result(30)
    with pytest.raises(RuntimeStopped):
        handle.ready.result(30)
    deadline = time.monotonic() + 30
    while not _refused(port) and time.monotonic() < deadline:
        time.sleep(0.01)  # the opening coroutine closes the socket once the held start returns
    assert not os.path.exists(path) and _refused(port) and handle not in runtime.windows


def test_a_runtime_stopped_while_a_stack_loads_leaves_no_file(discovery_dir: str, workspace: str) -> None:
    runtime = Runtime(discovery_directory=discovery_dir)
    handle, release = _held_window(runtime, workspace)
    threading.Timer(0.2, release.set).start()
    runtime.stop(30)
    assert os.listdir(discovery_dir) == [] and _refused(handle.port)


def test_a_stack_that_fails_to_load_after_publishing_takes_the_file_back(
    runtime: Runtime, discovery_dir: str, workspace: str
) -> None:
    published: list[list[str]] = []
    watching = threading.Event()
    refused_when_answered: list[bool] = []

    def missing_library(_server: object) -> list[Any]:
        published.append(os.listdir(discovery_dir))
        watching.wait(30)
        raise ModuleNotFoundError("No module named 'uvicorn'", name="uvicorn")

    handle = runtime.open_window(ScriptedEditor(), [workspace], tool_factory=missing_library)
    # Runs on the loop thread the moment `ready` is answered: whoever waits on it may look at once
    # (it used to hear of the failure while the port still took connections: a race under load).
    answered = threading.Event()

    def look(_: object) -> None:
        refused_when_answered.append(_refused(handle.port))
        answered.set()

    handle.ready.add_done_callback(look)
    watching.set()
    with pytest.raises(ModuleNotFoundError):
        handle.ready.result(30)
    assert len(published[0]) == 1  # it was out while the stack loaded
    assert handle.discovery_path == "" and os.listdir(discovery_dir) == []
    assert answered.wait(30) and refused_when_answered == [True]
