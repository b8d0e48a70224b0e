"""Claude Code in the fake Sublime: its openDiff opens the same review as Gemini's (the banner
names Claude Code), the user's edits come back in FILE_SAVED, closing answers DIFF_REJECTED;
selections reach it in its units, getDiagnostics reads the build panel, and both agents' reviews
are open at once without touching each other."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.claude_client import ClaudeClient
from tests.sublime_editor.conftest import Companion, ThreadedClient, write
from tests.sublime_editor.test_review import banner, review_views, text
from tests.sublime_fake import control, sublime

T = TypeVar("T")
SETTINGS = "Gemini Companion.sublime-settings"


class ThreadedClaude:
    """`ClaudeClient` on its own thread and loop; the test thread plays Sublime's main thread."""

    def __init__(self, port: int, token: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="claude-client", daemon=True)
        self._thread.start()
        self.client: ClaudeClient = self.result(self.submit(lambda: ClaudeClient.connect(port, token)))

    def submit(self, make: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(make(), self._loop)

    def result(self, future: concurrent.futures.Future[T], timeout: float = 30) -> T:
        control.pump_until(future.done, timeout, "Claude Code's call to return")
        return future.result(0)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> concurrent.futures.Future[list[str]]:
        return self.submit(lambda: self.client.call(tool, arguments))

    def notification(self, method: str, timeout: float = 30) -> dict[str, Any]:
        return self.result(self.submit(lambda: self.client.notification(method, timeout)), timeout + 5)

    def close(self) -> None:
        self.result(self.submit(self.client.close))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture
def claude(companion: Companion) -> Iterator[Callable[[sublime.Window], ThreadedClaude]]:
    opened: list[ThreadedClaude] = []

    def make(window: sublime.Window) -> ThreadedClaude:
        handle = companion.ready(window)
        client = ThreadedClaude(handle.port, handle.claude_token)
        control.pump_until(lambda: handle.claude_clients, 30, "Claude Code to be counted as connected")
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


def open_diff(client: ThreadedClaude, path: str, proposal: str) -> concurrent.futures.Future[list[str]]:
    arguments = {"old_file_path": path, "new_file_path": path, "new_file_contents": proposal, "tab_name": "t"}
    future = client.call("openDiff", arguments)
    control.pump_until(lambda: [v for v in sublime.windows()[0].views() if v.settings().get("gemini_companion.role")])
    control.settle()
    return future


def test_claude_reviews_in_the_same_split_and_gets_the_users_edit_back(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "app.py", "x = 1\n")
    view = control.open_file(window, path)
    answer = open_diff(client, path, "x = 2\n")
    current, proposal = review_views(window)
    assert current is not None and text(current) == "x = 1\n" and text(proposal) == "x = 2\n"
    assert "Claude Code" in banner(proposal)
    assert not answer.done()  # Claude Code waits for the decision
    control.select(proposal, proposal.size())
    control.type_text(proposal, "# reviewed\n")
    assert control.run_from_palette(window, "gemini_companion_apply")
    assert client.result(answer) == ["FILE_SAVED", "x = 2\n# reviewed\n"]
    control.settle()
    assert window.views() == [view] and text(view) == "x = 1\n"  # the client writes the file, not the editor


def test_closing_claudes_review_answers_diff_rejected(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "app.py", "x = 1\n")
    control.open_file(window, path)
    answer = open_diff(client, path, "x = 2\n")
    _, proposal = review_views(window)
    control.type_text(proposal, "typed ")
    assert control.close_tab(proposal)
    assert client.result(answer) == ["DIFF_REJECTED", "t"]  # never TAB_CLOSED, which Claude Code takes as accept


def test_gemini_and_claude_reviews_are_open_at_once_and_each_hears_only_its_own(
    companion: Companion,
    claude: Callable[[sublime.Window], ThreadedClaude],
    clients: Callable[[sublime.Window], ThreadedClient],
    workspace: str,
) -> None:
    window = control.new_window([workspace])
    companion.load()
    gemini, claude_client = clients(window), claude(window)
    gemini_path = write(workspace, "g.py", "g = 1\n")
    claude_path = write(workspace, "c.py", "c = 1\n")
    assert not gemini.open_diff(gemini_path, "g = 2\n").is_error
    control.settle()
    answer = claude_client.call(
        "openDiff", {"new_file_path": claude_path, "new_file_contents": "c = 2\n", "tab_name": "c"}
    )
    control.pump_until(
        lambda: len([v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"]) == 2
    )
    proposals = {v.name(): v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"}
    assert "Claude Code" in banner(proposals["c.py ↔ proposed"])
    assert "Claude Code" not in banner(proposals["g.py ↔ proposed"])
    control.click_link(proposals["c.py ↔ proposed"], "accept")
    assert claude_client.result(answer) == ["FILE_SAVED", "c = 2\n"]
    control.click_link(proposals["g.py ↔ proposed"], "reject")
    assert gemini.wait_notification("ide/diffRejected") == {"filePath": gemini_path}
    assert gemini.received("ide/diffAccepted") == []  # Claude's accept never reached Gemini CLI


def test_a_selection_reaches_claude_in_its_units_and_the_status_bar_shows_both_agents(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    path = write(workspace, "app.py", "first\nsecond line\n")
    view = control.open_file(window, path)
    control.settle()
    assert view.get_status("gemini_companion") == "Gemini ○ · Claude ○"
    client = claude(window)
    control.settle()
    assert view.get_status("gemini_companion") == "Gemini ○ · Claude ●"
    control.select(view, sublime.Region(view.text_point(1, 7), view.text_point(1, 2)))  # dragged right to left
    params = control.pump_until(
        lambda: next((n["params"] for n in client.client.notifications if n["params"].get("text") == "cond "), None)
    )
    assert params["filePath"] == path and params["fileUrl"] == Path(path).as_uri()
    assert params["selection"] == {
        "start": {"line": 1, "character": 2},
        "end": {"line": 1, "character": 7},
        "isEmpty": False,
    }
    assert handle.claude_clients == ["claude-code"]


def test_get_diagnostics_reports_the_build_panels_errors_and_nothing_invented(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "app.py", "x = \n")
    assert json.loads(client.result(client.call("getDiagnostics"))[0]) == []  # no build yet
    panel = window.create_output_panel("exec")
    panel.settings().set("result_file_regex", r'^\s*File "(...*?)", line ([0-9]*)')
    panel.settings().set("result_base_dir", workspace)
    panel.run_command("append", {"characters": f'Traceback:\n  File "{path}", line 1\nSyntaxError: invalid syntax\n'})
    found = json.loads(client.result(client.call("getDiagnostics", {"uri": Path(path).as_uri()}))[0])
    assert found == [
        {
            "uri": Path(path).as_uri(),
            "diagnostics": [
                {
                    "message": "",
                    "severity": 1,
                    "source": "build",
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                }
            ],
        }
    ]
    other = Path(write(workspace, "b.py", "")).as_uri()
    assert json.loads(client.result(client.call("getDiagnostics", {"uri": other}))[0]) == []


def test_get_diagnostics_reads_the_lsp_packages_diagnostics_panel_only_while_it_shows(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "app.py", "import os\nx = y\n")
    # What LSP writes there (sublimelsp/LSP: `<file>:` then format_diagnostic_for_panel's lines).
    panel = window.create_output_panel("diagnostics")
    lines = [f"{path}:", "    2:5   error   undefined name 'y' \u200bpyflakes", "    1:1   warning unused import", ""]
    panel.run_command("append", {"characters": "\n".join(lines)})
    assert json.loads(client.result(client.call("getDiagnostics"))[0]) == []  # hidden: LSP may not have refreshed it
    window.run_command("show_panel", {"panel": "output.diagnostics"})
    found = json.loads(client.result(client.call("getDiagnostics", {"uri": Path(path).as_uri()}))[0])
    assert found == [
        {
            "uri": Path(path).as_uri(),
            "diagnostics": [
                {
                    "message": "undefined name 'y'",
                    "severity": 1,
                    "source": "pyflakes",
                    "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 4}},
                },
                {
                    "message": "unused import",
                    "severity": 2,
                    "source": "LSP",
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                },
            ],
        }
    ]


def lsp_panel_line(line: int, column: int, kind: str, message: str, source: str) -> str:
    """One diagnostic as sublimelsp/LSP writes it to its Diagnostics panel (`plugin/core/views.py`
    format_diagnostic_for_panel @ 7ffc721: `" {:>4}:{:<4}{:<8}{}"`, then `" \\u200b<source>"`)."""
    return f" {line:>4}:{column:<4}{kind:<8}{message} \u200b{source}"


@pytest.mark.parametrize("column", [999, 1000, 12345])
def test_get_diagnostics_reads_lsp_lines_whose_column_fills_its_padding(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str, column: int
) -> None:
    """From column 1000 LSP's four-character column runs straight into the kind ("3:1000error")."""
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "wide.py", "x = 1\n")
    panel = window.create_output_panel("diagnostics")
    lines = [f"{path}:", lsp_panel_line(3, column, "warning", "line too long", "ruff"), ""]
    panel.run_command("append", {"characters": "\n".join(lines)})
    window.run_command("show_panel", {"panel": "output.diagnostics"})
    found = json.loads(client.result(client.call("getDiagnostics", {"uri": Path(path).as_uri()}))[0])
    position = {"line": 2, "character": column - 1}
    assert found == [
        {
            "uri": Path(path).as_uri(),
            "diagnostics": [
                {
                    "message": "line too long",
                    "severity": 2,
                    "source": "ruff",
                    "range": {"start": position, "end": position},
                }
            ],
        }
    ]


@pytest.mark.parametrize("miss", [sublime.Region(-1, -1), None], ids=["region_minus_one", "none"])
def test_open_file_selects_from_start_text_to_end_text_and_ignores_text_it_cannot_find(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str, miss: Any
) -> None:
    """What `View.find` answers on a miss is Region(-1, -1) in build 4 and was None in build 3's
    API reference; either way a text that is not there selects nothing and fails nothing."""
    control.find_miss(miss)
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "app.py", "import os\n\ndef main():\n    return 1\n")
    found = client.result(client.call("openFile", {"filePath": path, "startText": "def main", "endText": "1"}))
    assert found == [f"Opened file: {path}"]
    view = control.pump_until(lambda: window.find_open_file(path), 30, "the file to open")
    control.pump_until(lambda: not view.is_loading() and view.sel()[0] != sublime.Region(0, 0), 30, "the selection")
    assert view.substr(view.sel()[0]) == "def main():\n    return 1"
    other = write(workspace, "other.py", "x = 2\n")
    missed = client.result(client.call("openFile", {"filePath": other, "startText": "nowhere", "endText": ""}))
    assert missed == [f"Opened file: {other}"]
    other_view = control.pump_until(lambda: window.find_open_file(other), 30, "the other file to open")
    control.settle()
    assert list(other_view.sel()) == [sublime.Region(0, 0)] and window.active_view() == other_view
    halfway = client.result(client.call("openFile", {"filePath": path, "startText": "import", "endText": "nowhere"}))
    assert halfway == [f"Opened file: {path}"]
    control.settle()
    assert view.substr(view.sel()[0]) == "import"  # no end found: the start text alone
    assert control.errors() == []


@pytest.mark.parametrize("later", [False, True], ids=["saved_on_return", "saved_on_a_later_turn"])
def test_save_document_reports_the_save_whether_it_finishes_on_return_or_later(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str, later: bool
) -> None:
    """No source says whether `save` run from code has written the file when run_command returns:
    either way Claude Code hears it was saved, and the file holds the text."""
    control.save_finishes_later(later)
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)
    path = write(workspace, "app.py", "x = 1\n")
    view = control.open_file(window, path)
    control.type_text(view, "# edited\n")
    answer = json.loads(client.result(client.call("saveDocument", {"filePath": path}))[0])
    assert answer["success"] is True and answer["saved"] is True
    assert not view.is_dirty()
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "# edited\nx = 1\n"


def test_claude_has_the_focused_file_and_cursor_after_start_without_any_click(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    # Files restored at start: the focus and caret are set before the package has a server.
    window = control.new_window([workspace])
    path = write(workspace, "app.py", "first\nsecond line\n")
    view = control.open_file(window, path)
    control.move_cursor(view, 1, 3)
    control.settle()
    companion.load(startup=True)
    client = claude(window)

    def current() -> dict[str, Any] | None:
        answer = json.loads(client.result(client.call("getCurrentSelection"))[0])
        return answer if answer.get("success") else None

    selection = control.pump_until(current, 10, "Claude Code's getCurrentSelection to name the focused file")
    assert selection["filePath"] == path
    assert selection["selection"]["start"] == {"line": 1, "character": 3} and selection["selection"]["isEmpty"]


def test_each_agent_is_served_alone_as_soon_as_the_settings_turn_the_other_off(
    companion: Companion, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    both = companion.ready(window)
    lock = both.lock_path
    gemini_file = both.discovery_path
    assert os.path.exists(lock) and os.path.basename(gemini_file).startswith("gemini-ide-server-")

    def restarted(before: Any) -> Any:
        registry = companion.registry
        control.pump_until(lambda: (s := registry().get(window)) is not None and s.handle is not before, 30, "restart")
        return companion.ready(window)

    control.user_settings(SETTINGS, {"gemini_cli": False})  # Claude Code alone
    claude_only = restarted(both)
    assert not os.path.exists(gemini_file) and os.path.exists(claude_only.lock_path)
    assert not [n for n in os.listdir(companion.discovery_dir) if n.startswith("gemini-ide-server-")]
    assert claude_only.gemini is not None and not claude_only.gemini.serves_gemini  # the workspace tools only
    client = ThreadedClaude(claude_only.port, claude_only.claude_token)
    try:
        control.pump_until(lambda: claude_only.claude_clients, 30, "Claude Code to connect")
    finally:
        client.close()

    control.user_settings(SETTINGS, {"gemini_cli": True, "claude_code": False})  # Gemini CLI alone
    gemini_only = restarted(claude_only)
    assert not os.path.exists(claude_only.lock_path) and gemini_only.lock_path == "" and gemini_only.claude is None
    assert os.path.basename(gemini_only.discovery_path).startswith("gemini-ide-server-")
    assert gemini_only.gemini is not None and gemini_only.gemini.serves_gemini
