"""A chat's client terminals (`terminal/*`, reference acp.md): the commands the agent runs through
the client, after it asked the user's permission (kind execute) as it does for its own commands.

A command runs without a shell (argv: `command` then `args`), in a folder inside the workspace
only, with the agent's environment and the variables it names; started, tracked and ended as the
agent itself is (agents/process.py: its own process group, its tree by a marker, the whole tree
killed). Its output (stdout and stderr as one stream) is kept in memory, at most the agent's
`outputByteLimit` and never more than MAX_OUTPUT_BYTES, cut from the start on a UTF-8 character
boundary (`truncated`). At most MAX_LIVE terminals a chat that the agent has not released; every
tree is ended on release, on kill, and when the chat closes. No SDK import here: session.py answers
the requests with what this returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..agents import process

MAX_OUTPUT_BYTES = 4 * 1024 * 1024  # a terminal's output kept, whatever the agent asks
MAX_LIVE = 8  # terminals a chat holds at once (created and not released)
READ_BYTES = 64 * 1024
SHOW_EVERY = 0.1  # seconds: a running command's output reaches its card at most this often
EXIT_GRACE = 2.0  # after the command exits, its last output may still be in the pipe


class TerminalRefused(Exception):
    """A terminal request the client does not carry out; the message says why and what to do."""


@dataclass(frozen=True)
class ExitStatus:
    exit_code: int | None  # None when a signal ended it
    signal: str | None


class Terminal:
    """One command and its output."""

    def __init__(self, terminal_id: str, argv: Sequence[str], limit: int) -> None:
        self.id = terminal_id
        self.argv = list(argv)
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.process: asyncio.subprocess.Process | None = None
        self.transport: asyncio.SubprocessTransport | None = None
        self.exited = asyncio.Event()
        self.tree: process.ProcessTree | None = None
        self.reader: asyncio.Task[None] | None = None

    def add(self, chunk: bytes) -> None:
        """Keep `chunk`; over the limit, the output's start goes, cut on a character boundary."""
        self.output += chunk
        over = len(self.output) - self.limit
        if over > 0:
            while over < len(self.output) and self.output[over] & 0xC0 == 0x80:
                over += 1  # a continuation byte: the character it belongs to goes whole
            del self.output[:over]
            self.truncated = True

    def text(self, last_bytes: int | None = None) -> str:
        """The output as text (its last `last_bytes` bytes, from a character's start); a character
        still arriving (its bytes split between reads) is left for the next read."""
        data = self.output if last_bytes is None else self.output[-last_bytes:]
        start = 0
        while last_bytes is not None and start < min(4, len(data)) and data[start] & 0xC0 == 0x80:
            start += 1
        return bytes(data[start : _complete(data)]).decode("utf-8", "replace")

    def status(self) -> ExitStatus | None:
        code = self.process.returncode if self.process is not None and self.exited.is_set() else None
        if code is None:
            return None
        if code < 0:
            with contextlib.suppress(ValueError):
                return ExitStatus(None, signal.Signals(-code).name)
            return ExitStatus(None, str(-code))
        return ExitStatus(code, None)


def _complete(data: bytes | bytearray) -> int:
    """The end of `data`'s last complete UTF-8 character."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: its lead is further back
        need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
        return end if need <= back else end - back
    return end


class Terminals:
    """A chat's terminals by id. `shown(terminal_id)` is called (on the loop) when a terminal's
    output or state changed, at most every SHOW_EVERY seconds, so its card can show it."""

    def __init__(
        self,
        folders: Sequence[str],
        env: Mapping[str, str],
        shown: Callable[[Terminal], None] | None = None,
        max_live: int = MAX_LIVE,
        max_output: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self.folders = [os.path.abspath(f) for f in folders]
        self.env = dict(env)
        self.shown = shown
        self.max_live = max_live
        self.max_output = max_output
        self._terminals: dict[str, Terminal] = {}
        self._ids = itertools.count(1)
        self._pending: set[str] = set()  # terminals whose change is waiting to be shown

    def __len__(self) -> int:
        return len(self._terminals)

    def get(self, terminal_id: str) -> Terminal:
        found = self._terminals.get(terminal_id)
        if found is None:
            raise TerminalRefused(f"there is no terminal {terminal_id!r} (it was released, or never created)")
        return found

    async def create(
        self,
        command: str,
        args: Sequence[str] | None,
        cwd: str | None,
        env: Mapping[str, str],
        output_byte_limit: int | None,
    ) -> Terminal:
        """Start the command; TerminalRefused (nothing started) when it cannot run here."""
        if len(self._terminals) >= self.max_live:
            raise TerminalRefused(
                f"this chat already holds {self.max_live} terminals; release one (terminal/release) "
                "before creating another"
            )
        folder = self._folder(cwd)
        limit = self.max_output if output_byte_limit is None else max(0, min(output_byte_limit, self.max_output))
        argv = [command, *(args or [])]
        terminal = Terminal(f"term-{next(self._ids)}", argv, limit)
        try:
            started = await process.spawn_command(argv, folder, {**self.env, **env})
        except OSError as exc:
            raise TerminalRefused(
                f"{command!r} could not be started ({exc.strerror or exc}); give a program on the PATH "
                "or its full path, and its arguments in `args` (no shell runs the command)"
            ) from None
        terminal.process, terminal.transport, terminal.exited, terminal.tree = started
        self._terminals[terminal.id] = terminal
        terminal.reader = asyncio.ensure_future(self._read(terminal))
        return terminal

    def _folder(self, cwd: str | None) -> str:
        if not self.folders:
            raise TerminalRefused("the chat has no workspace folder to run a command in")
        folder = os.path.abspath(os.path.join(self.folders[0], cwd)) if cwd else self.folders[0]
        real = os.path.realpath(folder)
        if not any(_inside(real, os.path.realpath(f)) for f in self.folders):
            raise TerminalRefused(
                f"the folder {cwd!r} is outside the workspace ({', '.join(self.folders)}); run the command "
                "in a folder inside it"
            )
        if not os.path.isdir(real):
            raise TerminalRefused(f"the folder {cwd!r} does not exist; create it first, or run the command elsewhere")
        return folder

    async def _read(self, terminal: Terminal) -> None:
        assert terminal.process is not None and terminal.process.stdout is not None
        stream = terminal.process.stdout
        with contextlib.suppress(Exception):
            while chunk := await stream.read(READ_BYTES):
                terminal.add(chunk)
                self._show(terminal)
        if self.shown is not None:  # the end, whatever the throttle held back
            self.shown(terminal)

    def _show(self, terminal: Terminal) -> None:
        """Its card is shown the change: at once the first time, then at most every SHOW_EVERY."""
        if self.shown is None or terminal.id in self._pending:
            return
        self._pending.add(terminal.id)
        asyncio.get_running_loop().call_later(SHOW_EVERY, self._shown, terminal)
        self.shown(terminal)

    def _shown(self, terminal: Terminal) -> None:
        self._pending.discard(terminal.id)
        if self.shown is not None:
            self.shown(terminal)

    def show(self, terminal_id: str) -> None:
        """Show the terminal's output now (a tool call embedding it was just shown)."""
        terminal = self._terminals.get(terminal_id)
        if terminal is not None and self.shown is not None:
            self.shown(terminal)

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        terminal = self.get(terminal_id)
        await terminal.exited.wait()
        if terminal.reader is not None:  # its last output, unless a process it left holds the pipe
            await asyncio.wait([terminal.reader], timeout=EXIT_GRACE)
        status = terminal.status()
        return status if status is not None else ExitStatus(None, None)

    async def kill(self, terminal_id: str) -> None:
        """End the command's whole tree; the terminal stays, its output and exit status readable."""
        await _end(self.get(terminal_id))

    async def release(self, terminal_id: str) -> None:
        """End the command's tree if it still runs, and forget the terminal."""
        terminal = self.get(terminal_id)
        del self._terminals[terminal_id]
        await _end(terminal, closing=True)

    async def close(self) -> None:
        """The chat ends: every terminal's tree ended, everything released."""
        terminals, self._terminals = list(self._terminals.values()), {}
        await asyncio.gather(*(_end(t, closing=True) for t in terminals), return_exceptions=True)


async def _end(terminal: Terminal, closing: bool = False) -> None:
    running = terminal.process is not None and terminal.process.returncode is None
    if terminal.process is not None and terminal.tree is not None:
        # The tree even when the command itself exited: what it started in the background may run on.
        await asyncio.to_thread(process.kill_tree, terminal.process.pid, running, terminal.tree)
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            await asyncio.wait_for(terminal.exited.wait(), 5)
    if closing:
        if terminal.reader is not None:
            terminal.reader.cancel()
        if terminal.transport is not None:
            terminal.transport.close()


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive (Windows)
        return False
