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
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tests.adapter import conftest as adapter
from tests.conformance.harness import DRIVER, IdeClientProcess, node, require_node_modules
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
    """The user runs "Gemini Companion: Open Gemini CLI" from the palette; the terminal that starts."""
    before = len(terminus.started)
    assert control.run_from_palette(window, "gemini_companion_open_cli")
    return control.pump_until(lambda: terminus.started[before:] and terminus.started[before], timeout)


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
