"""The adapter running in our fake Sublime, and MCP clients that watch it like Gemini CLI does.

`editor` is a fresh fake Sublime whose discovery folder is private to the test (TMPDIR, as Node's
`os.tmpdir()` reads it). `Companion` loads `Gemini Companion/plugin.py` the way Sublime does and
gives access to the loaded package's registry. `ThreadedClient` is the `mcp` SDK client (with a
binding per `ide/*` notification) on its own thread and loop, so the test thread stays free to play
Sublime's main thread while it waits. Every test ends with no main-thread violation and no
exception in any plugin callback.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import sys
import threading
import types
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from tests.sublime_fake import _state, control

control.install()

import sublime  # noqa: E402  (the fake, installed above)

from tests.mcp_client import IdeClient, Received, connect  # noqa: E402

T = TypeVar("T")
PACKAGE = control.PACKAGE_NAME


def pkg(module: str) -> types.ModuleType:
    """A module of the loaded package, as Sublime imported it (`Gemini Companion.companion...`)."""
    return sys.modules[f"{PACKAGE}.companion.{module}"]


class Companion:
    """The Gemini Companion package inside the fake editor."""

    def __init__(self, discovery_dir: str) -> None:
        self.discovery_dir = discovery_dir
        self.plugin: types.ModuleType | None = None

    def load(self, startup: bool = False) -> types.ModuleType:
        self.plugin = control.load_plugin(startup=startup)
        windows = pkg("sublime_editor.windows")
        # The loop thread checks the libraries first; then the main thread starts every window's server.
        control.pump_until(
            lambda: windows.registry() is not None or windows.library_problem() is not None, 30, "the start"
        )
        return self.plugin

    def unload(self) -> None:
        if self.plugin is not None:
            control.unload_plugin()
            self.plugin = None

    def registry(self) -> Any:
        return pkg("sublime_editor.windows").registry()

    def state(self, window: sublime.Window) -> Any:
        registry = self.registry()
        state = registry.get(window) if registry is not None else None
        assert state is not None, f"no companion server for {window!r}"
        return state

    def ready(self, window: sublime.Window, timeout: float = 30) -> Any:
        """The window's handle once its server listens (the main thread is pumped meanwhile)."""
        handle = control.pump_until(lambda: self.registry() and self.registry().get(window), timeout).handle
        control.pump_until(handle.ready.done, timeout, "the window's server to start")
        handle.ready.result(0)
        return handle

    def discovery_files(self) -> dict[str, dict[str, Any]]:
        if not os.path.isdir(self.discovery_dir):
            return {}
        files = {}
        for name in sorted(os.listdir(self.discovery_dir)):
            with open(os.path.join(self.discovery_dir, name), encoding="utf-8") as handle:
                files[name] = json.load(handle)
        return files

    def discovery_of(self, window: sublime.Window) -> dict[str, Any]:
        path = self.state(window).handle.discovery_path
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


class ThreadedClient:
    """The SDK's MCP client on its own thread; results come back as futures the test pumps for."""

    def __init__(self, url: str, token: str, name: str = "test-client") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[IdeClient] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, args=(url, token, name), name="sdk-client", daemon=True)
        self._thread.start()
        self.client = control.pump_until(lambda: self._ready.done(), 30, "the SDK client to connect") and (
            self._ready.result()
        )

    def _run(self, url: str, token: str, name: str) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main(url, token, name))
        self._loop.close()

    async def _main(self, url: str, token: str, name: str) -> None:
        self._stop = asyncio.Event()
        try:
            async with connect(url, token, name) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)

    def received(self, method: str | None = None) -> list[Received]:
        return [r for r in list(self.client.received) if method is None or r.method == method]

    def contexts(self) -> list[dict[str, Any]]:
        return [r.params for r in self.received("ide/contextUpdate")]

    def last_context(self) -> dict[str, Any] | None:
        contexts = self.contexts()
        return contexts[-1] if contexts else None

    def wait_context(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        """Pump until the newest context satisfies `predicate`."""

        def check() -> dict[str, Any] | None:
            last = self.last_context()
            return last if last is not None and predicate(last) else None

        return control.pump_until(check, timeout, "a matching ide/contextUpdate")

    def call(self, make: Callable[[IdeClient], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(make(self.client), self._loop)

    def result(self, future: concurrent.futures.Future[T], timeout: float = 30) -> T:
        control.pump_until(future.done, timeout, "the tool call to return")
        return future.result(0)

    def open_diff(self, path: str, content: str) -> Any:
        return self.result(self.call(lambda c: c.open_diff(path, content)))

    def close_diff(self, path: str) -> Any:
        return self.result(self.call(lambda c: c.close_diff(path)))

    def wait_notification(self, method: str, timeout: float = 30) -> dict[str, Any]:
        found = control.pump_until(lambda: self.received(method), timeout, method)
        return found[0].params

    def close(self) -> None:
        if self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        deadline_pumps = 0
        while self._thread.is_alive() and deadline_pumps < 1000:
            control.pump(0.01)
            deadline_pumps += 1


def loop_threads() -> list[threading.Thread]:
    """The companion's loop threads still running (a stopped one ends on its own, shortly)."""
    return [t for t in threading.enumerate() if t.name == "gemini-companion-loop"]


@pytest.fixture
def editor(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[_state.Host]:
    tmpdir = os.path.join(str(tmp_path), "tmp")
    os.makedirs(tmpdir)
    monkeypatch.setenv("TMPDIR", tmpdir)  # Node's os.tmpdir(): where discovery files go
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", os.path.join(str(tmp_path), "claude"))  # Claude Code's lock files
    host = control.reset(os.path.join(str(tmp_path), "data"))
    yield host
    control.shutdown()


@pytest.fixture
def companion(editor: _state.Host, tmp_path: Any) -> Iterator[Companion]:
    """The package, loaded by the test; unloaded at the end, which must leave no discovery file."""
    instance = Companion(os.path.join(str(tmp_path), "tmp", "gemini", "ide"))
    yield instance
    instance.unload()  # returns at once; the loop thread stops the servers and deletes the files
    control.pump_until(lambda: not loop_threads(), 30, "the loop thread to end after unloading")
    control.settle()
    assert instance.discovery_files() == {}
    locks = os.path.join(str(tmp_path), "claude", "ide")
    assert not os.path.isdir(locks) or os.listdir(locks) == [], "a Claude Code lock file was left behind"
    assert control.violations() == []
    assert control.errors() == []


@pytest.fixture
def workspace(tmp_path: Any) -> str:
    path = os.path.join(str(tmp_path), "workspace")
    os.makedirs(path)
    return path


def write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return path


def open_paths(context: dict[str, Any] | None) -> list[str]:
    return [f["path"] for f in (context or {}).get("workspaceState", {}).get("openFiles", [])]


def active(context: dict[str, Any] | None) -> dict[str, Any] | None:
    files = (context or {}).get("workspaceState", {}).get("openFiles", [])
    return next((f for f in files if f.get("isActive")), None)


@pytest.fixture
def clients(companion: Companion) -> Iterator[Callable[[sublime.Window], ThreadedClient]]:
    """`clients(window)` connects an SDK client to that window's server (closed before unloading)."""
    opened: list[ThreadedClient] = []

    def make(window: sublime.Window) -> ThreadedClient:
        handle = companion.ready(window)
        client = ThreadedClient(handle.url, handle.token)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()
