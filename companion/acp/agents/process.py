"""The agent's process: started without a shell, framed as one JSON message a line on stdout, its
stderr tail kept for error messages, and stopped with everything it started.

`AgentStdio` is the SDK's message-level transport seam (`send`/`receive`/`close`): the SDK does the
JSON-RPC; this only frames lines and keeps a misbehaving agent from hurting us: lines that are not
JSON objects (or nested too deep to parse) are skipped and counted, a line over MAX_LINE_BYTES ends
the chat (its message could be a response we wait on, so skipping it could hang), and a flood yields
to the loop. Backpressure: at most MAX_REQUESTS_IN_FLIGHT of the agent's `fs/*` requests (whose
answers can be whole files) are being answered at once, each until its answer is in the agent's
stdin pipe; beyond that, the agent is not read, so an agent that does not read our answers cannot
make us hold more of them. Other requests (a permission waiting on the user, for as long as the
user likes) never hold a slot: they must not stop the chat.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...core.system.process_tree import ProcessTree, become_subreaper, is_subreaper, new_marker
from ...core.system.processes import kill_one, new_group  # as ask_gemini does

MAX_LINE_BYTES = 64 * 1024 * 1024  # Gemini sends whole file texts in a diff: generous, but bounded
_READ_LIMIT = 1024 * 1024  # StreamReader chunk limit; longer lines are read in pieces
_STDERR_TAIL = 40  # lines
_YIELD_EVERY = 64  # messages read back to back before letting the loop run other work
STOP_GRACE_SECONDS = 2.0
TRACK_SECONDS = 1.0  # how often the agent's process tree is recorded during a turn
# An fs/* answer can be a whole file (chat_read_file_limit_kb): a few at once bounds our memory.
MAX_REQUESTS_IN_FLIGHT = 4
_BIG_ANSWERS = "fs/"  # the methods whose answers hold a slot


class AgentStopped(Exception):
    """The agent's stdout ended or broke the framing; the message says why."""


class AgentProcess:
    """One running agent and its stdio."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        transport: asyncio.SubprocessTransport,
        exited: asyncio.Event,
        argv: Sequence[str],
        tree: ProcessTree,
    ) -> None:
        self.process = process
        self._transport = transport  # closed by `stop`: left to the garbage collector, it outlives the loop
        # Set when the process itself ends. `process.wait()` also waits for its pipes to close,
        # which a child holding them (Gemini CLI relaunches itself) can delay forever.
        self.exited = exited
        self.argv = list(argv)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        self.skipped_lines = 0  # stdout lines that were not JSON objects
        self.first_skipped = ""
        self.framing_error: str | None = None  # why reading stopped, when it was not a plain EOF
        self.stdout_closed = asyncio.Event()
        # Set while the agent is not read: MAX_REQUESTS_IN_FLIGHT of its requests are being answered.
        self.backpressure = asyncio.Event()
        self.tree = tree
        self._turns = 0
        self._in_turn = asyncio.Event()  # set while a turn runs: the tree is scanned only then
        self._stderr_task = asyncio.ensure_future(self._collect_stderr())
        self._tracker = asyncio.ensure_future(self._track_tree())

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr_text(self) -> str:
        return "\n".join(self.stderr_tail).strip()

    async def _collect_stderr(self) -> None:
        stream = self.process.stderr
        if stream is None:
            return
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line over the limit: keep its start
                line = await stream.read(_READ_LIMIT)
            except Exception:
                return
            if not line:
                return
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip()[:1000])

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """While the block runs (a prompt turn: the agent starts things), its tree is recorded."""
        self._turns += 1
        self._in_turn.set()
        try:
            yield
        finally:
            self._turns -= 1
            if not self._turns:
                self._in_turn.clear()

    async def _track_tree(self) -> None:
        """Record the agent's process tree during turns: a child it starts in its own session and
        that it then leaves (by crashing) is no longer under it when the chat stops. Never while
        idle (a scan of the process table costs CPU), and once more at `stop`."""
        while True:
            await self._in_turn.wait()
            await asyncio.to_thread(self.tree.update)
            if await self._exited(TRACK_SECONDS):
                return

    async def stop(self) -> None:
        """Close stdin (agents exit on EOF), then terminate, then kill the whole tree: every process
        it started that `tree` saw (process_tree.py) and, on POSIX, its process group; then close
        the pipes."""
        # Before the agent goes: the processes it left (in a session of their own) are no longer its
        # children once it has exited, and outside a turn the tree was last recorded long ago.
        await asyncio.to_thread(self.tree.update)
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        if not await self._exited(STOP_GRACE_SECONDS / 2):
            try:
                self.process.terminate()
            except ProcessLookupError:
                pass
            await self._exited(STOP_GRACE_SECONDS)
        self._tracker.cancel()
        await asyncio.to_thread(_kill_all, self.pid, self.process.returncode is None, self.tree)
        await self._exited(5)
        self._stderr_task.cancel()
        self._transport.close()

    async def _exited(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            return False
        return True

    async def wait_exit(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the process to end; True when it has."""
        return await self._exited(timeout)


async def start(argv: Sequence[str], cwd: str, env: Mapping[str, str], *, subreaper: bool = False) -> AgentProcess:
    """Start the agent (raises OSError when it cannot run) in its own process group, so a Ctrl-C
    meant for us reaches it only as our session/cancel, and stopping it is targeted. `subreaper`:
    this is a process of our own (the headless `chat`), which may adopt the agent's orphans
    (process_tree.py); never in Sublime's shared plugin host."""
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    marker = new_marker()
    adopts = subreaper and become_subreaper()  # before it starts: its orphans come to us (Linux)
    # asyncio.create_subprocess_exec, with a protocol that also says when the process itself ends.
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(exited, _READ_LIMIT, loop),
        *argv,
        cwd=cwd,
        env={**env, marker[0]: marker[1]},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        **new_group(),
    )
    try:
        tree = await asyncio.to_thread(ProcessTree, transport.get_pid(), marker, adopts)
    except BaseException:  # cancelled here, the agent (in its own session) and its pipes would leak
        _kill_all(transport.get_pid(), True, None)
        transport.close()
        raise
    return AgentProcess(asyncio.subprocess.Process(transport, protocol, loop), transport, exited, argv, tree)


async def spawn_command(
    argv: Sequence[str], cwd: str, env: Mapping[str, str]
) -> tuple[asyncio.subprocess.Process, asyncio.SubprocessTransport, asyncio.Event, ProcessTree]:
    """A command the agent runs in a client terminal (terminals.py): started as the agent is (no
    shell, its own process group, its tree tracked by a marker), stdin closed, stderr into stdout.
    Raises OSError when it cannot run."""
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    marker = new_marker()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(exited, _READ_LIMIT, loop),
        *argv,
        cwd=cwd,
        env={**env, marker[0]: marker[1]},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        **new_group(),
    )
    try:
        # In a process of ours that adopts orphans (the headless chat), the command's are ours to reap too.
        tree = await asyncio.to_thread(ProcessTree, transport.get_pid(), marker, is_subreaper())
    except BaseException:
        _kill_all(transport.get_pid(), True, None)
        transport.close()
        raise
    return asyncio.subprocess.Process(transport, protocol, loop), transport, exited, tree


def kill_tree(pid: int, running: bool, tree: ProcessTree) -> None:
    """Kill a command's whole tree, as the agent's (blocking: call it off the loop)."""
    tree.update()
    _kill_all(pid, running, tree)


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    def __init__(self, exited: asyncio.Event, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._exited = exited

    def process_exited(self) -> None:
        super().process_exited()
        self._exited.set()


class AgentStdio:
    """The SDK's Transport over the agent's stdin/stdout (newline-delimited JSON)."""

    def __init__(self, agent: AgentProcess) -> None:
        self.agent = agent
        self._read_in_a_row = 0
        self._slots = asyncio.Semaphore(MAX_REQUESTS_IN_FLIGHT)
        self._answering: collections.Counter[str] = collections.Counter()  # request ids holding a slot

    async def send(self, message: dict[str, Any]) -> None:
        answered = self._answered_request(message)
        try:
            stdin = self.agent.process.stdin
            if stdin is None or stdin.is_closing():
                raise ConnectionError("the agent's input is closed")
            stdin.write((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
            await stdin.drain()  # an answer holds its slot until the agent reads it
        finally:
            if answered is not None:
                self._answering[answered] -= 1
                if not self._answering[answered]:
                    del self._answering[answered]  # else one key per request id, for the whole chat
                self._slots.release()

    def _answered_request(self, message: dict[str, Any]) -> str | None:
        """The key of the agent's request this message answers, when it holds a slot."""
        if "method" in message or "id" not in message:
            return None
        key = _id_key(message["id"])
        return key if self._answering.get(key, 0) > 0 else None

    async def _take_slot(self, request_id: Any) -> None:
        """Wait until fewer than MAX_REQUESTS_IN_FLIGHT requests of the agent are being answered;
        meanwhile nothing more is read from it (it blocks writing, not we buffering)."""
        if self._slots.locked():
            self.agent.backpressure.set()
        await self._slots.acquire()
        self.agent.backpressure.clear()
        self._answering[_id_key(request_id)] += 1

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                self.agent.stdout_closed.set()
                return None
            self._read_in_a_row += 1
            if self._read_in_a_row >= _YIELD_EVERY:  # a flood must not starve Ctrl-C and the UI
                self._read_in_a_row = 0
                await asyncio.sleep(0)
            text = line.strip()
            if not text:
                continue
            message = _json_object(text)
            if message is None:
                self.agent.skipped_lines += 1
                if not self.agent.first_skipped:
                    self.agent.first_skipped = text[:200].decode("utf-8", "replace")
                continue
            if "id" in message and str(message.get("method", "")).startswith(_BIG_ANSWERS):
                await self._take_slot(message["id"])
            return message

    async def close(self) -> None:
        stdin = self.agent.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    async def _read_line(self) -> bytes | None:
        stdout = self.agent.process.stdout
        assert stdout is not None
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await stdout.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:
                chunk = await stdout.readexactly(exc.consumed)
            except asyncio.IncompleteReadError as exc:
                return b"".join([*chunks, exc.partial]) if chunks or exc.partial else None
            except (OSError, ValueError) as exc:
                self.agent.framing_error = f"its output could not be read ({exc})"
                return None
            size += len(chunk)
            if size > MAX_LINE_BYTES:
                self.agent.framing_error = (
                    f"it sent a line of more than {MAX_LINE_BYTES // 2**20} MiB on stdout, more than a chat accepts"
                )
                return None
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                return b"".join(chunks)


def _json_object(text: bytes) -> dict[str, Any] | None:
    if not text.startswith(b"{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # a line nested deeper than the parser recurses is garbage too
        return None
    return value if isinstance(value, dict) else None


def _id_key(request_id: Any) -> str:
    """A JSON-RPC id (any JSON value from a hostile agent) as a hashable key."""
    return json.dumps(request_id, sort_keys=True)


def _kill_all(pid: int, running: bool, tree: ProcessTree | None) -> None:
    """Kill the agent (when still `running`), its process group (POSIX: it leads its own session)
    and every process of its tree still alive (when there is one); wait for them to go."""
    if running:
        kill_one(pid)
    if hasattr(os, "killpg"):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass  # the group is empty: everyone already left
    if tree is not None:
        tree.kill()
