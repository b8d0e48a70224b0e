"""Everyday workflow through the fake Sublime: Terminus, Send to Gemini, status bar, doctor, privacy.

The fixtures of the adapter tests (a fresh fake editor with a private TMPDIR, the package loaded by
the test and unloaded at the end with no discovery file, violation or plugin exception left) are
reused; `terminus` adds a stand-in Terminus package (terminus_package/main.py) with Terminus' exact
command signatures. `CommandIdeClient` runs the real Gemini CLI client (`IdeClient`) with the exact
command line, folder and environment the stand-in resolved from `terminus_open`, through the user's
login shell as Terminus would spawn it.
"""

from __future__ import annotations

import os
import shutil
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conformance.harness import DRIVER, IdeClientProcess, node, require_node_modules
from tests.sublime_editor import conftest as adapter
from tests.sublime_fake import _state, control, sublime

# The adapter tests' fixtures, for this folder too.
editor = adapter.editor
companion = adapter.companion
workspace = adapter.workspace
clients = adapter.clients

TERMINUS_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "terminus_package")
SETTINGS = "Gemini Companion.sublime-settings"
STATUS_KEY = "gemini_companion"


TERMINUS_SETTINGS = """// The stand-in Terminus package's settings (Gemini Companion detects Terminus by this resource).
{
\t"unix_term": "linux",
\t"unix_lang": "en_US.UTF-8",
}
"""


@pytest.fixture
def terminus(editor: _state.Host, tmp_path: Any) -> Iterator[types.ModuleType]:
    """The stand-in Terminus package, installed as Packages/Terminus and loaded (its module has
    `.started` and `.terminals`). It lives outside the repository, whose tree the fake serves as
    the Gemini Companion package: a Terminus.sublime-settings there would make Terminus look installed."""
    root = os.path.join(str(tmp_path), "Packages", "Terminus")
    os.makedirs(root)
    shutil.copyfile(os.path.join(TERMINUS_SOURCE, "main.py"), os.path.join(root, "main.py"))
    with open(os.path.join(root, "Terminus.sublime-settings"), "w", encoding="utf-8") as handle:
        handle.write(TERMINUS_SETTINGS)
    module = control.load_plugin("Terminus.main", "Terminus", root)
    yield module
    control.unload_plugin("Terminus.main")


def terminals_started(terminus: types.ModuleType) -> list[Any]:
    return list(terminus.started)


def open_cli(window: sublime.Window, terminus: types.ModuleType, timeout: float = 30) -> Any:
    """The user runs "Gemini Companion: Open Gemini CLI" from the palette; its terminal, once live."""
    return open_agent(window, terminus, "gemini_companion_open_cli", f"gemini-companion-{window.id()}", timeout)


def open_agent(window: sublime.Window, terminus: types.ModuleType, command: str, tag: str, timeout: float = 30) -> Any:
    """The user runs `command` from the palette; the terminal it starts with `tag` (not one another
    Send started), once Terminus has drawn it (its first render sets `terminus_view.viewport_y`)."""
    before = len(terminus.started)
    assert control.run_from_palette(window, command)

    def started() -> Any:
        mine = [t for t in terminus.started[before:] if t.tag == tag]
        return mine[-1] if mine and mine[-1].view.settings().has("terminus_view.viewport_y") else None

    return control.pump_until(started, timeout, f"the terminal {tag} to be live")


def cli_command() -> list[str]:
    """`gemini_command` for tests: the real IdeClient driver instead of the `gemini` binary."""
    require_node_modules()
    return [node(), DRIVER]


class CommandIdeClient(IdeClientProcess):
    """The real IdeClient started with a given command line (the one Terminus would spawn)."""

    def __init__(self, command: list[str], cwd: str, env: dict[str, str], pump: Any) -> None:
        super().__init__(cwd, env, pump)
        self.command = command

    def argv(self) -> list[str]:
        return self.command


def run_in_terminal(terminal: Any) -> CommandIdeClient:
    """Spawn what the Terminus terminal runs (its cmd, cwd and child environment) as the real client."""
    return CommandIdeClient(terminal.cmd, terminal.cwd, terminal.env, pump=lambda: control.pump(0.005)).start()


def status_of(view: sublime.View) -> str:
    return view.get_status(STATUS_KEY)


@pytest.fixture
def container_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside this container the real IdeClient needs SSH_CONNECTION (else it dials host.docker.internal);
    set in the "plugin host" environment, which Terminus children inherit."""
    monkeypatch.setenv("SSH_CONNECTION", os.environ.get("SSH_CONNECTION") or "workflow 0 127.0.0.1 0")


class Hold:
    """One long callback of another package on Sublime's one shared async worker (a slow `*_async`
    handler or `set_timeout_async` callback: sublime_text#6936, sublime_lib#90): whatever is queued
    behind it, Terminus' `terminus_open` included, waits until `release()`."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self._release = threading.Event()
        sublime.set_timeout_async(self._run)

    def _run(self) -> None:
        self.inside.set()
        self._release.wait()

    def wait_inside(self) -> Hold:
        assert self.inside.wait(30), "the shared worker never reached the other package's callback"
        return self

    def release(self) -> None:
        self._release.set()


class BusyWorker:
    """Other packages keeping the shared worker busy; every hold ends with the test."""

    def __init__(self) -> None:
        self.holds: list[Hold] = []

    def queue(self) -> Hold:
        """A hold queued behind what the worker has now; it starts when they are done."""
        self.holds.append(Hold())
        return self.holds[-1]

    def hold(self) -> Hold:
        """A hold that has the worker now."""
        return self.queue().wait_inside()

    def release(self) -> None:
        for hold in self.holds:
            hold.release()


@pytest.fixture
def busy_worker(editor: _state.Host) -> Iterator[BusyWorker]:
    worker = BusyWorker()
    yield worker
    worker.release()
