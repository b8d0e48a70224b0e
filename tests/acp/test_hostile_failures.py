"""A hostile agent (tests/acp/hostile_agent.py) against the chat: terminal requests it may not
make, a line nested too deep to parse, a crash that leaves children in their own sessions, a
signal to `chat` while the agent ignores stdin EOF. Each ends in one clear line, the chat goes on
where it can, and no process or temporary folder is left."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from companion.acp.agents import process
from companion.acp.agents.agents import AgentSpec
from companion.acp.review.files import FsRefused
from companion.acp.session import ChatFailed, ChatSession
from companion.acp.view import Choice
from companion.core.system.process_tree import ProcessTree, is_subreaper, set_subreaper
from companion.mcp_tools.settings import WorkspaceToolSettings
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.hostile_agent import REPLY, TERMINAL_METHODS

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile_agent.py")
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and fork: not on Windows")
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")


def hostile(
    workspace: str, behaviour: str, view: RecordingView | None = None, subreaper: bool = False, **env: str
) -> tuple[ChatSession, RecordingView]:
    view = view or RecordingView()
    spec = AgentSpec("Hostile", (sys.executable, AGENT, behaviour))
    environment = {**os.environ, **env}
    return ChatSession(spec, [workspace], AsyncEditor(), view, env=environment, subreaper=subreaper), view


def pids(record: str, *suffixes: str) -> list[int]:
    found = []
    for suffix in suffixes:
        with open(record + suffix, encoding="utf-8") as handle:
            found.append(int(handle.read().split()[0]))
    return found


def assert_all_gone(pid_list: list[int]) -> None:
    """Each PID has ended (a zombie of ours is reaped by the wait)."""
    alive = []
    for pid in pid_list:
        try:
            proc = psutil.Process(pid)
            proc.wait(5)  # the chat has already stopped everything; this only reaps
        except psutil.NoSuchProcess:
            continue
        except psutil.TimeoutExpired:
            alive.append(pid)
    assert not alive, f"still running: {alive}"


@pytest.fixture
def not_left_a_subreaper() -> Iterator[None]:
    """pytest is not left a child subreaper by a test that makes it one (or by a regression)."""
    yield
    set_subreaper(False)


@pytest.fixture
def killed_at_the_end() -> Iterator[list[int]]:
    """PIDs the test kills whatever happens, so a failing test leaves nothing running."""
    found: list[int] = []
    yield found
    for pid in found:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


async def test_a_hostile_agents_terminal_requests_never_run_anything_the_user_did_not_allow(
    workspace: str, tmp_path: str
) -> None:
    """The client terminal is advertised (terminals.py), but the agent never asked permission for
    `echo pwned`: the user is asked, rejects it, and the create is refused saying so (nothing ran,
    no terminal given); a request naming a terminal id we never gave is refused as invalid params,
    never answered with success."""
    record = os.path.join(str(tmp_path), "answers.jsonl")
    session, view = hostile(workspace, "terminal", HOSTILE_RECORD=record)
    try:
        await session.start()
        assert await session.prompt("run something") == "end_turn"
        assert len(session.terminals) == 0
    finally:
        await session.close()
    with open(record, encoding="utf-8") as handle:
        answers = {a["method"]: a["answer"] for a in map(json.loads, handle)}
    assert set(answers) == set(TERMINAL_METHODS)
    assert [title for title, _ in view.asked] == [f"The agent wants to run: echo pwned in {workspace}"]
    created = answers.pop("terminal/create")
    assert "result" not in created and "the user rejected running it: echo pwned" in created["error"]["message"]
    for method, answer in answers.items():
        assert "result" not in answer, (method, answer)
        assert answer["error"]["code"] == -32602, (method, answer)
        assert "there is no terminal 't1'" in answer["error"]["message"], (method, answer)
    assert view.text == [REPLY]


async def test_a_line_nested_200000_deep_is_skipped_and_the_chat_goes_on(workspace: str) -> None:
    session, view = hostile(workspace, "deep")
    try:
        await session.start()
        assert await session.prompt("hello") == "end_turn"
        assert session.agent is not None and session.agent.skipped_lines == 1
        assert session.agent.first_skipped.startswith('{"jsonrpc":"2.0","method":"x","params":[[[')
        assert await session.prompt("still there?") == "end_turn"
    finally:
        await session.close()
    assert view.text == [REPLY, REPLY]


def chat_process(workspace: str, behaviour: str, record: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "Hello"]
    env = {**os.environ, "PYTHONPATH": ROOT, "HOSTILE_RECORD": record}
    argv += ["--", sys.executable, AGENT, behaviour]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@POSIX_ONLY
@pytest.mark.parametrize("behaviour", ["orphans", "escape"])
def test_a_crash_that_leaves_children_ends_in_one_line_and_no_traceback(
    workspace: str, tmp_path: str, behaviour: str, killed_at_the_end: list[int]
) -> None:
    """`escape`'s grandchild cannot be told from any other process (process_tree.py's limit) and
    keeps the agent's pipes open: closing our end of them must still leave no traceback."""
    record = os.path.join(str(tmp_path), "pid")
    chat = chat_process(workspace, behaviour, record)
    _, stderr = chat.communicate(timeout=CEILING)
    killed_at_the_end += pids(record, ".1", ".2") if behaviour == "orphans" else pids(record, ".1")
    assert chat.returncode == 1
    assert stderr.strip().splitlines() == [
        "error: python exited (exit code 1) during the prompt. Start a new chat; if it happens again, "
        "run the agent in a terminal to see why."
    ], stderr  # and nothing after it: no "Event loop is closed" traceback


@POSIX_ONLY
async def test_children_started_in_their_own_session_during_a_turn_are_stopped_with_the_agent(
    workspace: str, tmp_path: str, killed_at_the_end: list[int], not_left_a_subreaper: None
) -> None:
    """As the headless `chat` runs it: a process of its own, a subreaper (Linux)."""
    record = os.path.join(str(tmp_path), "pid")
    session, _ = hostile(workspace, "orphans", subreaper=True, HOSTILE_RECORD=record)
    try:
        await session.start()
        with pytest.raises(ChatFailed, match="exited"):
            await session.prompt("start something and crash")
    finally:
        await session.close()
    children = pids(record, ".1", ".2")  # one in its own session, one double-forked
    killed_at_the_end += children
    assert_all_gone(children)


@LINUX_ONLY
async def test_a_chat_in_a_shared_process_never_makes_it_a_subreaper(
    workspace: str, not_left_a_subreaper: None
) -> None:
    """Sublime's plugin host runs every plugin: as a subreaper it would adopt their orphans, which
    would stay zombies until Sublime quits. Only the headless `chat`, its own process, adopts."""
    assert not is_subreaper()
    session, view = hostile(workspace, "deep")  # as sublime_editor/chat/sessions.py starts it
    try:
        await session.start()
        assert await session.prompt("go") == "end_turn"
        assert not is_subreaper()
    finally:
        await session.close()
    assert view.text == [REPLY]


@POSIX_ONLY
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_to_chat_stops_the_agent_and_removes_its_temporary_folder(
    workspace: str, tmp_path: str, signal_name: str, killed_at_the_end: list[int]
) -> None:
    record = os.path.join(str(tmp_path), "agent")
    chat = chat_process(workspace, "linger", record)
    try:
        agent = _wait_for_record(chat, record)
    except BaseException:
        chat.kill()
        raise
    killed_at_the_end.append(agent[0])
    chat.send_signal(getattr(signal, signal_name))
    _, stderr = chat.communicate(timeout=CEILING)
    assert chat.returncode == 128 + getattr(signal, signal_name), stderr  # the shell's convention (chat --help)
    assert "Stopped." in stderr and "Traceback" not in stderr, stderr
    assert_all_gone([agent[0]])
    assert not os.path.exists(agent[1]), f"the agent's temporary folder {agent[1]} is left"


@POSIX_ONLY
def test_a_second_stop_signal_while_chat_closes_changes_nothing(
    workspace: str, tmp_path: str, killed_at_the_end: list[int]
) -> None:
    """The close takes seconds (the agent ignores stdin EOF): a repeated SIGTERM meanwhile (a
    supervisor insisting) must not kill the chat before it stopped the agent."""
    record = os.path.join(str(tmp_path), "agent")
    chat = chat_process(workspace, "linger", record)
    try:
        agent = _wait_for_record(chat, record)
        killed_at_the_end.append(agent[0])
        chat.send_signal(signal.SIGTERM)
        assert chat.stderr is not None
        while (line := chat.stderr.readline()) and line.strip() != "Stopped.":
            pass  # "Stopped." is said just before the close
        chat.send_signal(signal.SIGTERM)
        _, stderr = chat.communicate(timeout=CEILING)
    except BaseException:
        chat.kill()
        raise
    assert chat.returncode == 128 + signal.SIGTERM, stderr
    assert_all_gone([agent[0]])
    assert not os.path.exists(agent[1]), f"the agent's temporary folder {agent[1]} is left"


def _wait_for_record(chat: subprocess.Popen[str], record: str) -> tuple[int, str]:
    """The agent's "PID TMPDIR", once it wrote them (it does on the prompt, then never answers)."""
    for _ in range(CEILING * 20):
        if os.path.exists(record):
            with open(record, encoding="utf-8") as handle:
                pid, temp = handle.read().split(" ", 1)
            return int(pid), temp
        if chat.poll() is not None:
            raise AssertionError(f"chat ended first: {chat.communicate()}")
        try:
            chat.wait(0.05)
        except subprocess.TimeoutExpired:
            pass
    raise AssertionError(f"the agent wrote no {record} within {CEILING} s")


async def test_the_chats_file_limit_is_its_own_setting_16_mib_by_default(workspace: str) -> None:
    """Agents read whole source files: the chat's limit is not read_file's 100 KB (a ranged read of a
    150 KB file was refused), and a refusal names the setting that raises it."""
    path = os.path.join(workspace, "big.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(("x" * 99 + "\n") * 1500)  # 150 KB, over read_file's limit
    session, _ = hostile(workspace, "deep")  # never started: only its file access is used
    assert os.path.getsize(path) > WorkspaceToolSettings().read_limit_bytes
    assert await session.files.read(path, 1, 2) == ("x" * 99 + "\n") * 2
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("x" * (16 * 1024 * 1024))
    with pytest.raises(FsRefused, match=r"over the read limit of 16\.0 MB \(setting `chat_read_file_limit_kb`\)"):
        await session.files.read(path, None, None)
    spec = AgentSpec("Hostile", (sys.executable, AGENT, "deep"))
    raised = ChatSession(spec, [workspace], AsyncEditor(), RecordingView(), read_limit_bytes=17 * 1024 * 1024)
    assert len(await raised.files.read(path, None, None)) == os.path.getsize(path)


class OpenReviews(RecordingView):
    """Permission questions stay open (as a Sublime review can) until `decide` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.decide = asyncio.Event()
        self.replied = asyncio.Event()

    async def choose(self, title: str, choices: list[Choice]) -> str | None:
        self.asked.append((title, choices))
        await self.decide.wait()
        return choices[0].option_id

    def agent_text(self, text: str) -> None:
        super().agent_text(text)
        self.replied.set()


async def test_five_open_permission_requests_do_not_stop_the_chat(workspace: str) -> None:
    """Only fs/* answers (whole files) hold a backpressure slot: with 5 questions open, the agent's
    text still arrives."""
    view = OpenReviews()
    session, _ = hostile(workspace, "permissions", view)
    try:
        await session.start()
        turn = asyncio.ensure_future(session.prompt("ask five times"))
        await asyncio.wait_for(view.replied.wait(), CEILING)
        assert view.text == [REPLY]  # sent after the 5 requests: they did not stop the reading
        view.decide.set()
        assert await asyncio.wait_for(turn, CEILING) == "end_turn"
    finally:
        await session.close()
    assert len(view.asked) == 5 and view.text == [REPLY, "5 answered"]


@POSIX_ONLY
async def test_a_start_cancelled_after_the_spawn_leaves_no_agent(
    workspace: str, monkeypatch: pytest.MonkeyPatch, killed_at_the_end: list[int]
) -> None:
    """A chat closed while its agent is starting: the cancellation lands between the spawn and
    the return (the tree is built in a thread, held here until the cancel)."""
    spawned, release = threading.Event(), threading.Event()

    def held_tree(pid: int, marker: tuple[str, str], adopts: bool) -> ProcessTree:
        killed_at_the_end.append(pid)
        spawned.set()
        release.wait(CEILING)
        return ProcessTree(pid, marker, adopts)

    monkeypatch.setattr(process, "ProcessTree", held_tree)
    argv = [sys.executable, "-c", "import time; time.sleep(600)"]
    starting = asyncio.ensure_future(process.start(argv, workspace, dict(os.environ)))
    try:
        assert await asyncio.to_thread(spawned.wait, CEILING)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
    finally:
        release.set()
    assert_all_gone(killed_at_the_end)


async def test_the_agents_tree_is_scanned_during_turns_never_while_idle(
    workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan of the process table costs CPU in Sublime's plugin host: an idle chat costs none."""
    scanned = threading.Event()
    update = ProcessTree.update

    def counted(tree: ProcessTree) -> None:
        scanned.set()
        update(tree)

    monkeypatch.setattr(ProcessTree, "update", counted)
    session, _ = hostile(workspace, "deep")
    try:
        await session.start()
        # No event can say "nothing happened": three of the periods a running turn is scanned at.
        assert not await asyncio.to_thread(scanned.wait, 3 * process.TRACK_SECONDS), "scanned while idle"
        assert await session.prompt("go") == "end_turn"
        assert await asyncio.to_thread(scanned.wait, CEILING), "never scanned during the turn"
    finally:
        await session.close()


def test_one_update_scans_the_process_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """With 120 processes, two scans (and the environment of every child) were 18 ms of CPU per
    update: now one (psutil's children(recursive=True) reads the table once; process_iter too)."""
    scans: list[int] = []
    children, process_iter = psutil.Process.children, psutil.process_iter

    def counted_children(proc: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
        scans.append(1)
        return children(proc, recursive)

    def counted_iter(*args: Any, **kwargs: Any) -> Iterator[psutil.Process]:
        scans.append(1)
        return process_iter(*args, **kwargs)

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        monkeypatch.setattr(psutil.Process, "children", counted_children)
        monkeypatch.setattr(psutil, "process_iter", counted_iter)
        for adopts in (False, True):
            tree = ProcessTree(os.getpid(), ("UNUSED_MARKER", "x"), adopts)
            scans.clear()
            tree.update()
            assert len(scans) == 1 and child.pid in tree.seen
    finally:
        child.kill()
        child.wait()
