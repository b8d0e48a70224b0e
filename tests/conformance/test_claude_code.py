"""The real Claude Code (`claude`, pinned in tests/conformance/claude) through its /ide integration,
offline, and with Gemini CLI in the same window (see claude_harness.py for how it runs with no
account).

The model is the local stand-in: its first turn asks for one `Write` of the target file. The real
client then asks the user for permission, which it routes to the IDE as `openDiff` and waits on;
the scripted user decides the review in the editor; the file ends as the user decided, and the
tool result the client sends back to the model says what happened.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from companion.core.reviews import Review
from companion.runtime import WindowHandle
from tests.conformance.claude_harness import ClaudeTerminal, ModelStandIn, claude_env, make_config, pinned_version
from tests.conformance.harness import (
    PINNED,
    DecidingEditor,
    GeminiTerminal,
    HeadlessCompanion,
    accept,
    isolate_tmpdir,
    reject,
)
from tests.conformance.test_gemini_cli import Setup as GeminiSetup

pytestmark = [pytest.mark.conformance, pytest.mark.skipif(os.name == "nt", reason="the pty harness is POSIX")]


class Window:
    """A window serving both agents (Gemini CLI finds it in `<base>/tmp`), with a Claude Code
    config folder holding its lock file."""

    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch, gemini: bool = True) -> None:
        self.base = base
        self.workspace = os.path.realpath(str(base / "project"))
        os.makedirs(self.workspace)
        isolate_tmpdir(monkeypatch, str(base / "tmp"))
        self.config = make_config(str(base / "claude-config"), self.workspace)
        self.editor = DecidingEditor()
        lock_dir = os.path.join(self.config, "ide")
        self.companion = HeadlessCompanion([self.workspace], self.editor, claude_lock_dir=lock_dir, gemini=gemini)

    @property
    def handle(self) -> WindowHandle:
        return self.companion.handle

    def claude(self, model: ModelStandIn) -> ClaudeTerminal:
        env = claude_env(self.config, self.handle.port, model.url)
        return ClaudeTerminal(["--permission-mode", "default"], self.workspace, env).start()

    def wait_connected(self, claude: ClaudeTerminal, timeout: float = 60) -> None:
        claude.wait_until(lambda: "claude-code" in self.handle.claude_clients, "Claude Code's IDE connection", timeout)

    def ask(self, claude: ClaudeTerminal, prompt: str) -> None:
        claude.wait_text("for agents", 60)  # the prompt is ready (its footer)
        os.write(claude.fd, prompt.encode())
        time.sleep(0.5)  # the TUI echoes with cursor moves, not the typed text: no echo to wait for
        claude.submit()


@pytest.fixture
def window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Window]:
    window = Window(tmp_path, monkeypatch)
    with window.companion:
        yield window


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def wait_for(condition: object, what: str, terminal: ClaudeTerminal, timeout: float = 60) -> None:
    terminal.wait_until(condition, what, timeout)  # type: ignore[arg-type]


def claude_writes(window: Window, target: str, content: str, prompt: str) -> list[dict[str, Any]]:
    """The real Claude Code, asked `prompt`, writes `content` to `target` through our review; its
    tool results once the write is done (the user's decision is the editor's, set beforehand)."""
    with ModelStandIn("Write", {"file_path": target, "content": content}) as model:
        claude = window.claude(model)
        try:
            window.wait_connected(claude)
            window.ask(claude, prompt)
            wait_for(lambda: model.tool_results(), "the tool result", claude)
            return model.tool_results()
        finally:
            claude.stop()


def claude_review(editor: DecidingEditor) -> Review:
    return next(review for review, _proposal, _revision in editor.shown if review.agent == "claude")


def test_the_pinned_claude_is_installed() -> None:
    import subprocess

    from tests.conformance.claude_harness import claude_binary

    version = subprocess.run([claude_binary(), "--version"], capture_output=True, text=True, timeout=60).stdout
    assert version.startswith(f"{pinned_version()} ")


def test_accepted_with_an_edit_the_client_writes_the_users_text_and_tells_the_model(window: Window) -> None:
    target = os.path.join(window.workspace, "hello.txt")
    with open(target, "w") as handle:
        handle.write("old\n")
    window.editor.decide("hello.txt", accept(lambda proposal: proposal + "a line the user typed\n"))
    tool_results = claude_writes(window, target, "new from claude\n", "please write hello.txt")
    review = claude_review(window.editor)
    assert review.requested_by == "Claude Code" and review.proposal == "new from claude\n"
    assert read(target) == "new from claude\na line the user typed\n"
    result = json.dumps(tool_results)
    assert "user modified your proposed content" in result


def test_a_window_serving_claude_code_alone_reviews_its_edit_and_gemini_cli_finds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = Window(tmp_path, monkeypatch, gemini=False)
    with window.companion:
        assert window.handle.discovery_path == "" and not os.path.exists(str(tmp_path / "tmp" / "gemini" / "ide"))
        target = os.path.join(window.workspace, "alone.txt")
        window.editor.decide("alone.txt", accept(lambda proposal: proposal + "and the user's line\n"))
        claude_writes(window, target, "from claude\n", "please write alone.txt")
        assert read(target) == "from claude\nand the user's line\n"


def test_rejected_in_the_editor_nothing_is_written_and_the_client_says_so(window: Window) -> None:
    target = os.path.join(window.workspace, "new.txt")  # a new file: a rejection must not create it
    window.editor.decide("new.txt", reject())
    with ModelStandIn("Write", {"file_path": target, "content": "unwanted\n"}) as model:
        claude = window.claude(model)
        try:
            window.wait_connected(claude)
            window.ask(claude, "please write new.txt")
            claude.wait_text("Rejected write to new.txt", 60)  # the client's own words; the turn stops
            assert claude_review(window.editor).proposal == "unwanted\n"
            time.sleep(1)
            assert not os.path.exists(target)
        finally:
            claude.stop()


def test_gemini_and_claude_in_one_window_each_review_in_the_same_ui_and_neither_sees_the_others(
    window: Window,
) -> None:
    """Both real clients connected to one window at once; each proposes a change, the user edits
    and accepts each in the editor, and each client writes its own file with the user's text."""
    gemini_file = os.path.join(window.workspace, "from_gemini.txt")
    claude_file = os.path.join(window.workspace, "from_claude.txt")
    window.editor.decide("from_gemini.txt", accept(lambda proposal: proposal + "edited in Sublime (gemini)\n"))
    window.editor.decide("from_claude.txt", accept(lambda proposal: proposal + "edited in Sublime (claude)\n"))
    gemini_setup = GeminiSetup(str(window.base), window.workspace, window.editor, window.companion, PINNED)
    with ModelStandIn("Write", {"file_path": claude_file, "content": "claude's text\n"}) as model:
        claude = window.claude(model)
        gemini: GeminiTerminal = gemini_setup.gemini(gemini_file, "gemini's text\n").start()
        try:
            window.wait_connected(claude)
            gemini_setup.ask(gemini, "write the file")
            window.ask(claude, "please write from_claude.txt")
            gemini.wait_until(lambda: os.path.exists(gemini_file), "Gemini CLI writing its file", 120)
            wait_for(lambda: model.tool_results(), "Claude Code's tool result", claude, 120)
            claude.wait_until(lambda: os.path.exists(claude_file), "Claude Code writing its file", 30)
        finally:
            claude.stop()
            gemini.stop()
    assert read(gemini_file) == "gemini's text\nedited in Sublime (gemini)\n"
    assert read(claude_file) == "claude's text\nedited in Sublime (claude)\n"
    agents = sorted((review.agent, os.path.basename(review.file_path)) for review, _p, _r in window.editor.shown)
    assert agents == [("claude", "from_claude.txt"), ("gemini", "from_gemini.txt")]
    # Claude's closeAllDiffTabs at the start of its query and Gemini's own traffic closed nothing of the other's.
    assert window.editor.closed == []


def test_pausing_takes_the_selection_out_of_claude_codes_prompt_and_resuming_brings_it_back(window: Window) -> None:
    from companion.core.context import Position

    other = os.path.join(window.workspace, "notes.txt")
    with open(other, "w") as handle:
        handle.write("A_SELECTED_LINE\n")

    def prompt_with(model: ModelStandIn, question: str) -> str:
        """The user message that carried `question` to the model, with what the client attached after
        it (2.1.331 sends IDE context as the messages that follow: the turn's own, not history)."""
        for request in model.requests:
            messages = request.get("messages", [])
            asked = [i for i, m in enumerate(messages) if m.get("role") == "user" and question in json.dumps(m)]
            if asked:
                return json.dumps(messages[asked[-1] :])
        return ""

    with ModelStandIn("NoSuchTool", {}) as model:  # the model only ever answers "Done."
        claude = window.claude(model)
        try:
            window.wait_connected(claude)
            claude.wait_prompt()  # the user selects once Claude Code shows its prompt
            window.handle.context.activate(other, Position(1, 16), "A_SELECTED_LINE", anchor=Position(1, 1))
            claude.wait_screen("1 line selected", 30)  # Claude Code's own indicator
            window.handle.context.set_paused(True)  # the user pauses context sharing before asking
            time.sleep(1)
            window.ask(claude, "first question")
            claude.wait_until(lambda: prompt_with(model, "first question"), "the first prompt", 60)
            first = prompt_with(model, "first question")
            assert "A_SELECTED_LINE" not in first and "notes.txt" not in first
            window.handle.context.set_paused(False)  # sharing again: the selection comes back
            claude.wait_screen("1 line selected", 30)
            time.sleep(1)
            window.ask(claude, "second question")
            claude.wait_until(lambda: prompt_with(model, "second question"), "the second prompt", 60)
            assert "A_SELECTED_LINE" in prompt_with(model, "second question")
        finally:
            claude.stop()
