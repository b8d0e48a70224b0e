"""The terminal chat on a real pseudo-terminal (not a pipe): Ctrl-C and Ctrl-D reach it as a user's
keys do (the terminal's line discipline turns ^C into SIGINT for the foreground process group, ^D
into the end of input), and every step waits for what the chat printed, never for a time.

What these guard (issue 38): Ctrl-C at the idle `>` prompt hung until Enter and exited 1; after
Ctrl-C at a review question, `>` did not come back and the next line typed was swallowed by the
withdrawn question's reader; Ctrl-D left the cursor after `> `."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Iterator

import psutil
import pytest

from tests.acp.conftest import CEILING, ROOT
from tests.acp.test_chat_features import AGENT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal; Windows has none")

CTRL_C, CTRL_D = b"\x03", b"\x04"


class Terminal:
    """`chat` as the foreground job of a pseudo-terminal of its own; `expect` reads its screen."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] |= termios.ISIG | termios.ICANON | termios.ECHO  # a user's terminal
        termios.tcsetattr(slave, termios.TCSANOW, attrs)

        def controlling_terminal() -> None:  # after setsid: the pty is our terminal, we its foreground job
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=ROOT,
            env=env,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
        os.close(slave)
        self.screen = ""  # everything printed so far
        self.seen = 0  # what `expect` has matched up to

    def expect(self, text: str) -> str:
        """Wait until `text` is printed after what was matched before; returns the output up to it."""
        deadline = time.monotonic() + CEILING
        while (found := self.screen.find(text, self.seen)) < 0:
            if not self._read(deadline - time.monotonic()):
                raise AssertionError(f"{text!r} was not printed within {CEILING} s; the screen:\n{self.screen}")
        before, self.seen = self.screen[self.seen : found], found + len(text)
        return before

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self) -> int:
        """The exit status, reading the screen meanwhile (a full pty would block the chat)."""
        deadline = time.monotonic() + CEILING
        while self.process.poll() is None:
            if not self._read(min(0.1, deadline - time.monotonic())) and time.monotonic() > deadline:
                raise AssertionError(f"the chat did not end within {CEILING} s; the screen:\n{self.screen}")
        while self._read(0):
            pass
        return self.process.returncode

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], max(timeout, 0))
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every end of the terminal is closed
            return False
        self.screen += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(data)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


@pytest.fixture
def record(tmp_path: object) -> str:
    return os.path.join(str(tmp_path), "prompts.jsonl")


def chat(workspace: str, record: str, *agent: str) -> Terminal:
    """The interactive chat with tests/acp/scripted_agent.py AGENT... on a terminal of its own."""
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--", sys.executable, AGENT, *agent]
    env = {**os.environ, "PYTHONPATH": ROOT, "SCRIPTED_AGENT_RECORD": record, "TERM": "dumb"}
    return Terminal(argv, env)


@pytest.fixture
def terminal(workspace: str, record: str) -> Iterator[Terminal]:
    """A chat whose agent asks to change reviewed.txt on every prompt (a review's y/n)."""
    with open(os.path.join(workspace, "reviewed.txt"), "w", encoding="utf-8") as handle:
        handle.write("before\n")
    term = chat(workspace, record, "checkpoint", record + ".pid")
    try:
        yield term
    finally:
        term.close()


def prompts(record: str) -> list[list[str]]:
    """The text of each prompt the scripted agent received."""
    if not os.path.exists(record):
        return []
    with open(record, encoding="utf-8") as handle:
        return [[block["text"] for block in json.loads(line)] for line in handle]


def test_ctrl_c_at_the_idle_prompt_clears_the_line_and_a_second_ends_the_chat_with_130(
    terminal: Terminal, record: str
) -> None:
    terminal.expect("> ")
    terminal.type(b"half a prompt" + CTRL_C)  # never sent: the line is cleared
    terminal.expect("[Ctrl-C again, or Ctrl-D, ends the chat]")
    terminal.expect("> ")
    terminal.type(b"Hello\n")  # the chat goes on after one Ctrl-C
    terminal.expect("[y]es / [n]o: ")
    terminal.type(b"n\n")
    terminal.expect("> ")
    terminal.type(CTRL_C)
    terminal.expect("[Ctrl-C again, or Ctrl-D, ends the chat]")
    terminal.type(CTRL_C)
    assert terminal.wait() == 130, terminal.screen
    assert "Stopped." in terminal.screen and "Traceback" not in terminal.screen, terminal.screen
    assert prompts(record) == [["Hello"]]


def test_ctrl_c_at_a_review_question_withdraws_it_and_the_next_line_reaches_the_agent(
    terminal: Terminal, record: str
) -> None:
    terminal.expect("> ")
    terminal.type(b"Edit\n")
    terminal.expect("Apply this change to")
    terminal.expect("[y]es / [n]o: ")
    terminal.type(CTRL_C)
    shown = terminal.expect("> ")  # back at once, before anything else is typed
    assert "you cancelled the turn (Ctrl-C)" in shown, terminal.screen
    assert "client closed" not in shown, terminal.screen
    terminal.type(b"Next prompt\n")
    terminal.expect("[y]es / [n]o: ")  # the agent got it: it asks again
    terminal.type(b"n\n")
    terminal.expect("> ")
    assert prompts(record) == [["Edit"], ["Next prompt"]], terminal.screen
    terminal.type(CTRL_D)
    assert terminal.wait() == 0, terminal.screen
    with open(os.path.join(os.path.dirname(record), "workspace", "reviewed.txt"), encoding="utf-8") as handle:
        assert handle.read() == "before\n"  # the withdrawn review wrote nothing


def test_ctrl_d_at_the_prompt_ends_the_chat_on_a_line_of_its_own(terminal: Terminal) -> None:
    terminal.expect("> ")
    terminal.type(CTRL_D)
    assert terminal.wait() == 0, terminal.screen
    assert terminal.screen.endswith("> \n"), repr(terminal.screen)


def test_sigterm_at_the_idle_prompt_ends_the_chat_and_its_agent_with_143(terminal: Terminal, record: str) -> None:
    terminal.expect("> ")
    with open(record + ".pid", encoding="utf-8") as handle:
        agent = psutil.Process(int(handle.read()))
    terminal.process.send_signal(signal.SIGTERM)
    assert terminal.wait() == 128 + signal.SIGTERM, terminal.screen
    assert "Stopped." in terminal.screen and "Traceback" not in terminal.screen, terminal.screen
    _, alive = psutil.wait_procs([agent], timeout=CEILING)
    assert alive == [], "the agent was left running"


def test_an_agent_that_does_not_answer_shows_a_waiting_line_rewritten_in_place(workspace: str, record: str) -> None:
    """Sixty seconds of silence before the start's timeout said anything; now a status line counts."""
    terminal = chat(workspace, record, "garbage-only")  # never answers initialize
    try:
        terminal.expect("waiting for the agent to start… 2 s")
        terminal.expect("\r\x1b[2Kwaiting for the agent to start… 3 s")  # the same line, rewritten
        terminal.type(CTRL_C)
        assert terminal.wait() == 130, terminal.screen
    finally:
        terminal.close()
    assert terminal.screen.endswith("\r\x1b[2KStopped.\n"), repr(terminal.screen)  # the status line erased first


# The chat, with the prompt's checkpoint scan made endless (a huge folder, cheaply): the scan says
# when it has started on the terminal, then waits on an event nobody sets.
ENDLESS_SCAN = """
import sys, threading
import companion.core.history.checkpoints as checkpoints
def endless(self, *args, **kwargs):
    print("[the scan started]", file=sys.stderr, flush=True)
    threading.Event().wait()
checkpoints.Checkpointer.take = endless
from companion.cli import main
sys.argv = ["companion", *sys.argv[1:]]
sys.exit(main())
"""


def test_ctrl_c_during_the_prompts_checkpoint_scan_ends_the_chat_at_once(
    workspace: str, record: str, tmp_path: object
) -> None:
    """F11: Ctrl-C while the first checkpoint of a large folder is taken printed "Stopped." and then
    waited for the whole scan (its worker thread was joined at exit)."""
    argv = [sys.executable, "-c", ENDLESS_SCAN, "chat", "--workspace", workspace, "--checkpoints"]
    argv += ["--", sys.executable, AGENT, "checkpoint", record + ".pid"]
    cache = os.path.join(str(tmp_path), "cache")
    env = {**os.environ, "PYTHONPATH": ROOT, "SCRIPTED_AGENT_RECORD": record, "TERM": "dumb"}
    terminal = Terminal(argv, {**env, "GEMINI_COMPANION_CACHE": cache})
    try:
        terminal.expect("> ")
        terminal.type(b"Hello\n")
        terminal.expect("[the scan started]")
        terminal.type(CTRL_C)
        assert terminal.wait() == 130, terminal.screen  # the old chat never ended: the scan never does
    finally:
        terminal.close()
    assert "Stopped." in terminal.screen and "Traceback" not in terminal.screen, terminal.screen
    assert prompts(record) == []  # the prompt never left


def test_a_line_typed_during_a_turn_is_a_prompt_for_after_it_never_a_later_questions_answer(
    workspace: str, record: str
) -> None:
    """The attack on the user's typing: a line typed while the agent works, before it asks y/n. The
    question took it as its (invalid) answer and it was gone. It is kept, said so, and sent at `>`."""
    with open(os.path.join(workspace, "reviewed.txt"), "w", encoding="utf-8") as handle:
        handle.write("before\n")
    gate = os.path.join(os.path.dirname(record), "gate")
    os.mkfifo(gate)
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--", sys.executable, AGENT]
    env = {**os.environ, "PYTHONPATH": ROOT, "SCRIPTED_AGENT_RECORD": record, "TERM": "dumb"}
    terminal = Terminal([*argv, "checkpoint"], {**env, "SCRIPTED_AGENT_GATE": gate})
    try:
        terminal.expect("> ")
        terminal.type(b"Edit\n")
        terminal.expect("At the gate.")
        terminal.type(b"typed ahead\n")  # the agent is still working: no question yet
        terminal.expect("[queued: typed ahead — sent when the turn ends; /queue lists, /unqueue drops the last]")
        with open(gate, "w", encoding="utf-8") as opened:
            opened.write("go\n")
        terminal.expect("[y]es / [n]o: ")
        terminal.type(b"y\n")  # the answer, typed after the question was shown
        terminal.expect("> typed ahead\n")  # sent at the next `>`, shown there
        terminal.expect("At the gate.")
        with open(gate, "w", encoding="utf-8") as opened:
            opened.write("go\n")
        terminal.expect("[y]es / [n]o: ")
        terminal.type(b"n\n")
        terminal.expect("> ")
        terminal.type(CTRL_D)
        assert terminal.wait() == 0, terminal.screen
    finally:
        terminal.close()
    assert prompts(record) == [["Edit"], ["typed ahead"]], terminal.screen
    with open(os.path.join(workspace, "reviewed.txt"), encoding="utf-8") as handle:
        assert handle.read() == "after\n"  # the first review was answered y by the line typed for it


def test_lines_typed_during_a_turn_are_queued_listed_dropped_and_sent_after_it(workspace: str, record: str) -> None:
    """Issue #41: each line typed while the agent works is said to be queued; /queue lists them,
    /unqueue drops the newest; the rest reach the agent one by one after the turn, never during it."""
    with open(os.path.join(workspace, "reviewed.txt"), "w", encoding="utf-8") as handle:
        handle.write("before\n")
    gate = os.path.join(os.path.dirname(record), "gate")
    os.mkfifo(gate)
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--", sys.executable, AGENT]
    env = {**os.environ, "PYTHONPATH": ROOT, "SCRIPTED_AGENT_RECORD": record, "TERM": "dumb"}
    terminal = Terminal([*argv, "checkpoint"], {**env, "SCRIPTED_AGENT_GATE": gate})
    try:
        terminal.expect("> ")
        terminal.type(b"Edit\n")
        terminal.expect("At the gate.")
        terminal.type(b"first\n")
        terminal.expect("[queued: first — sent when the turn ends")
        terminal.type(b"second\n")
        terminal.expect("[queued: second — ")
        terminal.type(b"/queue\n")
        terminal.expect("  1) first\n  2) second\n")
        terminal.type(b"/unqueue\n")
        terminal.expect("[unqueued: second]")
        assert prompts(record) == [["Edit"]]  # nothing went to the agent during its turn
        with open(gate, "w", encoding="utf-8") as opened:
            opened.write("go\n")
        terminal.expect("[y]es / [n]o: ")
        terminal.type(b"y\n")
        terminal.expect("> first\n")  # sent once the turn has ended
        terminal.expect("At the gate.")
        with open(gate, "w", encoding="utf-8") as opened:
            opened.write("go\n")
        terminal.expect("[y]es / [n]o: ")
        terminal.type(b"n\n")
        terminal.expect("> ")
        terminal.type(b"/queue\n")
        terminal.expect("[nothing is queued]")
        terminal.type(CTRL_D)
        assert terminal.wait() == 0, terminal.screen
    finally:
        terminal.close()
    assert prompts(record) == [["Edit"], ["first"]], terminal.screen


@pytest.mark.parametrize("bell", [True, False])
def test_bell_rings_before_a_question_the_agent_waits_on_only_when_asked_for(
    workspace: str, record: str, bell: bool
) -> None:
    """Issue #41: `--bell` puts a BEL before the review's question (the agent waits for the user,
    who may look elsewhere); without it the terminal gets none."""
    with open(os.path.join(workspace, "reviewed.txt"), "w", encoding="utf-8") as handle:
        handle.write("before\n")
    flags = ["--bell"] if bell else []
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, *flags, "--", sys.executable, AGENT]
    env = {**os.environ, "PYTHONPATH": ROOT, "SCRIPTED_AGENT_RECORD": record, "TERM": "dumb"}
    terminal = Terminal([*argv, "checkpoint"], env)
    try:
        terminal.expect("> ")
        terminal.type(b"Edit\n")
        before = terminal.expect("[y]es / [n]o: ")
        assert ("\a" in before) is bell, repr(before)
        assert before.count("\a") <= 1
        terminal.type(b"n\n")
        terminal.expect("> ")
        terminal.type(CTRL_D)
        assert terminal.wait() == 0, terminal.screen
    finally:
        terminal.close()
