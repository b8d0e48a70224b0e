"""The terminal chat (`python -m companion chat`) with agents that misbehave (tests/acp/raw_agent.py):
scripts can tell from the exit status whether every edit went through the review; what the agent
says while it works shows as one status line; agent output never lands under a question."""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys
import threading

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.review.unchecked import UncheckedEdits
from companion.acp.session import ChatSession
from companion.headless import chat as terminal_chat
from companion.headless import console as console_module
from companion.headless.chat import TerminalView
from companion.headless.console import STATUS_EVERY, Console
from companion.headless.editor import HeadlessEditor
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.raw_agent import REPLY, STATUSES
from tests.acp.test_agent_answers import RAW_AGENT, raw_chat
from tests.acp.test_chat_features import AGENT


@pytest.mark.parametrize("policy", ["accept", "reject"])
def test_an_edit_applied_without_review_ends_with_a_summary_and_exit_3(workspace: str, policy: str) -> None:
    result = raw_chat(workspace, "unreviewed", "--diff-policy", policy)
    path = os.path.join(workspace, "notes.txt")
    assert result.returncode == 3, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"warning: 1 edit applied without review ({path}): run the agent in a mode that asks before editing."
    ]
    assert REPLY in result.stdout


@pytest.mark.parametrize("policy", ["accept", "reject"])
def test_an_edit_refused_before_review_ends_with_a_summary_and_exit_4(workspace: str, policy: str) -> None:
    result = raw_chat(workspace, "refused", "--diff-policy", policy)
    assert result.returncode == 4, result.stderr
    assert result.stderr.strip().splitlines() == [
        "warning: 1 edit refused before review (a file it did not name): the notices above say why."
    ]
    assert "it names no file, so it cannot be reviewed" in result.stdout


def test_every_turn_of_the_interactive_chat_is_counted_in_the_exit_status(workspace: str) -> None:
    result = raw_chat(workspace, "unreviewed", "--diff-policy", "accept", stdin="one\ntwo\n")
    assert result.returncode == 3, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2, result.stderr  # one per turn, each naming that turn's edits
    assert result.stdout.count(REPLY) == 2


def test_a_turn_whose_edits_all_went_through_the_policy_exits_0(workspace: str) -> None:
    result = raw_chat(workspace, "spoof-question", "--diff-policy", "reject")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_an_error_is_one_line_on_stderr_with_no_blank_line_before_it(workspace: str) -> None:
    result = raw_chat(workspace, "prompt-internal")
    assert result.returncode == 1
    assert result.stderr.startswith("error: python reported an error during the prompt"), repr(result.stderr)
    assert result.stderr.count("\n") == 1, repr(result.stderr)


def test_the_agents_status_notifications_are_one_throttled_line_in_a_pipe(workspace: str) -> None:
    result = raw_chat(workspace, "status")
    assert result.returncode == 0, result.stderr
    statuses = [line for line in result.stdout.splitlines() if line.startswith("[status] ")]
    # Three within a moment: the first is printed, the others within STATUS_EVERY are not.
    assert statuses == [f"[status] python: {STATUSES[0]}"], result.stdout
    assert REPLY in result.stdout


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_status_line_is_rewritten_in_place_and_erased_by_output() -> None:
    out = Tty()
    console = Console(out)
    console.say("Working")
    console.status("retrying (1)")
    console.status("retrying (2)")
    console.say(" done.\n")
    console.status(None)
    assert out.getvalue() == "Working\nretrying (1)\r\x1b[2Kretrying (2)\r\x1b[2K done.\n"


def test_in_a_pipe_a_changed_status_is_printed_again_once_the_interval_passed() -> None:
    now = [0.0]
    out = io.StringIO()
    console = Console(out, clock=lambda: now[0])
    for n in range(5):
        console.status(f"retrying ({n})")
    now[0] += STATUS_EVERY
    console.status("retrying (5)")
    console.status("retrying (5)")
    assert out.getvalue() == "[status] retrying (0)\n[status] retrying (5)\n"


@pytest.mark.anyio
async def test_the_status_is_cleared_when_the_turn_ends(workspace: str) -> None:
    view = RecordingView()
    session = ChatSession(custom_agent([sys.executable, RAW_AGENT, "status"]), [workspace], AsyncEditor(), view)
    try:
        await session.start()
        assert await session.prompt("Hello") == "end_turn"
    finally:
        await session.close()
    assert view.called("status") == [*(f"python: {s}" for s in STATUSES), None]


class SeesAgentText(TerminalView):
    """The terminal chat's view, telling the test when the agent's text has reached it."""

    def __init__(self, console: Console) -> None:
        super().__init__("prompt", console=console)
        self.agent_spoke = threading.Event()

    def agent_text(self, text: str) -> None:
        super().agent_text(text)
        self.agent_spoke.set()


@pytest.mark.anyio
async def test_agent_output_while_the_review_question_waits_is_printed_after_the_answer(workspace: str) -> None:
    """An agent printed a fake diff and a fake question under the real ones, while the real one waited."""
    loop = asyncio.get_running_loop()
    out = io.StringIO()

    def user(question: str) -> str:  # the prompt thread, with the real question on the terminal
        out.write(question)
        # Something reaches the agent now (session/set_mode), on which it prints the fake.
        asyncio.run_coroutine_threadsafe(session.set_mode("code"), loop).result(CEILING)
        assert view.agent_spoke.wait(CEILING)
        out.write("y\n")
        return "y"

    console = Console(out, user)
    view = SeesAgentText(console)
    spec = custom_agent([sys.executable, RAW_AGENT, "spoof-question"])
    session = ChatSession(spec, [workspace], HeadlessEditor("prompt", console=console), view)
    try:
        await session.start()
        assert await session.prompt("Hello") == "end_turn"
    finally:
        await session.close()
    printed = out.getvalue()
    real_diff, question = printed.index("+changed"), printed.index("Apply this change to")
    answer, fake = printed.index("y\n", question), printed.index("+harmless")
    assert real_diff < question < answer < fake, printed
    assert printed.endswith(REPLY)  # the turn went on once answered


def test_output_held_past_the_limit_is_printed_and_the_question_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_module, "HOLD_CHARS", 10)
    out = io.StringIO()
    console: Console

    def user(question: str) -> str:
        out.write(question)
        console.say("0123456789")  # held: exactly the limit
        console.say("ABC")  # past it: printed, and the question again under it
        console.say("after")
        return "y"

    console = Console(out, user)
    assert console.ask("<the diff>\n", "Apply? ") == "y"
    assert out.getvalue() == "<the diff>\nApply? 0123456789ABC\n<the diff>\nApply? after"
    console.say("\n")
    assert console.ask("<the diff>\n", "Apply? ") == "y"  # printed under it since: shown again
    assert out.getvalue().endswith("after\n<the diff>\nApply? 0123456789ABC\n<the diff>\nApply? after")


def test_a_withdrawn_question_releases_what_was_held_and_is_never_asked_once_withdrawn() -> None:
    out = io.StringIO()
    console: Console

    def user(question: str) -> str:
        out.write(question)
        console.say("agent text")  # held
        console.withdraw("\n(not this one)\n", threading.Event())  # not the one on the terminal
        assert "agent text" not in out.getvalue()
        console.withdraw("\nNo answer is needed.\n", asked)
        console.say(" more")  # no question on the terminal any more: printed at once
        return "a late answer"

    console = Console(out, user)
    asked = threading.Event()  # the question's identity
    assert console.ask("<the diff>\n", "Apply? ", asked) == "a late answer"
    assert out.getvalue() == "<the diff>\nApply? \nNo answer is needed.\nagent text more"
    withdrawn = threading.Event()
    withdrawn.set()  # cancelled while it waited for its turn
    with pytest.raises(EOFError):
        console.ask("<another>\n", "Choose 1-2: ", withdrawn)
    assert "<another>" not in out.getvalue()


def test_the_summary_names_a_few_edits_and_counts_them_all() -> None:
    unchecked = UncheckedEdits()
    for n in range(1000):  # an agent may send thousands: a few names are kept, every one counted
        unchecked.refused.add(f"/w/{n % 500}.txt")
    taken = unchecked.take()
    assert (taken.refused.count, taken.refused.names()) == (1000, "/w/0.txt, /w/1.txt, /w/2.txt and 997 more")
    assert unchecked.refused.count == 0  # the next turn counts afresh


class SeenTty(Tty):
    """A terminal that tells when `text` has been written to it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.seen = text, threading.Event()

    def write(self, s: str) -> int:
        written = super().write(s)
        if self.text in self.getvalue():
            self.seen.set()
        return written


@pytest.mark.anyio
async def test_a_quiet_step_shows_its_progress_in_one_line_rewritten_in_place_then_erased(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first checkpoint of a large folder took seconds with nothing on the screen."""
    monkeypatch.setattr(terminal_chat, "WAIT_SHOWN_AFTER", 0)
    out = SeenTty("checkpoint: 12 401 files")
    counts = iter(range(12400, 12500))
    step = asyncio.get_running_loop().run_in_executor(None, out.seen.wait, CEILING)
    await terminal_chat.waiting(Console(out), step, lambda: f"checkpoint: {next(counts):,} files".replace(",", " "))
    shown = r"checkpoint: 12 400 files… \d+ s\r\x1b\[2Kcheckpoint: 12 401 files… \d+ s\r\x1b\[2K"  # then erased
    assert re.fullmatch(shown, out.getvalue()), repr(out.getvalue())


@pytest.mark.anyio
async def test_a_quiet_step_shows_nothing_in_a_pipe() -> None:
    out = io.StringIO()
    assert await terminal_chat.waiting(Console(out), asyncio.sleep(0, "done"), "waiting for the agent") == "done"
    assert out.getvalue() == ""


def test_a_checkpoint_under_way_counts_what_it_found(
    workspace: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `checkpoint: N files…` shows: the scan's count while it runs, 0 once it is over."""
    from companion.core.history import checkpoints
    from companion.core.history.turns import Turns

    for n in range(3):
        with open(os.path.join(workspace, f"{n}.txt"), "w", encoding="utf-8") as handle:
            handle.write("x\n")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [workspace])
    counted: list[int] = []
    scan_folder = checkpoints.Scan.folder

    def folder(scan: checkpoints.Scan, root: str) -> None:
        scan_folder(scan, root)
        counted.append(turns.checkpointer.scanned)  # the scan is still under way

    monkeypatch.setattr(checkpoints.Scan, "folder", folder)
    turns.begin()
    assert counted == [3]
    assert turns.checkpointer.scanned == 0


def piped_chat(workspace: str, lines: str) -> subprocess.CompletedProcess[str]:
    """The interactive chat, `--diff-policy prompt`, with `lines` piped in (no terminal)."""
    with open(os.path.join(workspace, "reviewed.txt"), "w", encoding="utf-8") as handle:
        handle.write("before\n")
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--", sys.executable, AGENT]
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [*argv, "checkpoint"], cwd=ROOT, env=env, input=lines, capture_output=True, text=True, timeout=CEILING
    )


def test_in_a_pipe_a_review_is_answered_by_the_next_line(workspace: str) -> None:
    result = piped_chat(workspace, "Edit\ny\n")
    assert result.returncode == 0, result.stderr
    with open(os.path.join(workspace, "reviewed.txt"), encoding="utf-8") as handle:
        assert handle.read() == "after\n"


def test_in_a_pipe_a_review_left_without_an_answer_is_rejected_with_a_line_saying_so(workspace: str) -> None:
    """Input that ended at a review's question rejected it without a word."""
    result = piped_chat(workspace, "Edit\n")
    path = os.path.join(workspace, "reviewed.txt")
    assert f"\nNo answer (input ended): the change to {path} is rejected.\n" in result.stdout, result.stdout
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "before\n"


class _Screen(io.StringIO):
    """A terminal's output that says when `wanted` was shown (tests synchronise on output)."""

    def __init__(self, wanted: str) -> None:
        super().__init__()
        self.wanted, self.shown = wanted, threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.wanted in self.getvalue():
            self.shown.set()
        return written


@pytest.mark.anyio
async def test_cancelling_a_hidden_question_never_takes_away_the_identical_one_on_screen() -> None:
    """The attack: two permissions read alike ("Choose 1-2:"); the agent withdraws the one still
    waiting its turn. The one on the terminal must stay, and the line typed must answer it (matched by
    text, it was withdrawn and its permission answered as cancelled)."""
    from companion.acp.view import Choice
    from companion.headless.console import StdinLines

    read_end, write_end = os.pipe()
    screen = _Screen("Choose 1-2: ")
    with os.fdopen(read_end, encoding="utf-8") as stdin:
        view = TerminalView("prompt", console=Console(screen, lines=StdinLines(stdin)), interactive=True)
        choices = [Choice("allow", "Allow", "allow_once"), Choice("reject", "Reject", "reject_once")]
        shown = asyncio.ensure_future(view.choose("Run echo shown", choices))
        assert await asyncio.to_thread(screen.shown.wait, CEILING)
        hidden = asyncio.ensure_future(view.choose("Run echo hidden", choices))
        for _ in range(3):
            await asyncio.sleep(0)  # yields only: `hidden` starts and waits behind the question shown
        hidden.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hidden
        os.write(write_end, b"2\n")
        os.close(write_end)
        assert await asyncio.wait_for(shown, CEILING) == "reject"
    assert "hidden" not in screen.getvalue()
