"""Run the real Gemini CLI IDE client (Node) against a companion and talk to it synchronously.

`IdeClientProcess` starts `ide_client_driver.mjs` in the workspace folder with the environment Gemini
CLI has inside a Terminus terminal, and turns its JSON lines into blocking calls (a reader thread per
pipe; no asyncio in the caller). Tests that play an editor's main thread themselves (the fake
Sublime) pass `pump`, which is called between polls while waiting.

The companion side: `HeadlessCompanion` runs `companion.runtime.Runtime` in-process with a
`DecidingEditor`, the Editor port whose user is scripted by the test (decisions by file name or by a
callback, with an optional edit of the proposal before accepting; or decided later by hand).

`GeminiTerminal` runs the real `gemini` binary in a pseudo-terminal (see test_gemini_cli.py for why
the IDE diff path needs the interactive UI), with `make_gemini_home` and `recorded_turns` for its
private settings and recorded model responses.

Isolation: the client finds discovery files in `<os.tmpdir()>/gemini/ide`; Node's `os.tmpdir()` is
`$TMPDIR`, so both sides get the same private TMPDIR (`isolate_tmpdir`). It picks the file by the
editor's PID (`GEMINI_CLI_IDE_PID`, else a walk up its process tree to the shell's grandparent) and
then by workspace; `client_env` sets `GEMINI_CLI_IDE_PID` to the companion's editor PID, which is
what the walk finds inside Sublime (Terminus' shell -> plugin host -> sublime_text).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pyte
import pytest

from companion.core.reviews import Review
from companion.gemini_ide.discovery import discovery_dir, node_tmpdir
from companion.runtime import Runtime, WindowHandle
from tests.scripted_editor import ScriptedEditor

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "ide_client_driver.mjs")


@dataclass(frozen=True)
class Release:
    """One installed Gemini CLI: `folder` holds its package.json (the pin) and node_modules."""

    folder: str

    @property
    def version(self) -> str:
        with open(os.path.join(self.folder, "package.json"), encoding="utf-8") as handle:
            return json.load(handle)["dependencies"]["@google/gemini-cli-core"]

    @property
    def core_dir(self) -> str:  # @google/gemini-cli-core: the IdeClient
        return os.path.join(self.folder, "node_modules", "@google", "gemini-cli-core")

    @property
    def cli_dir(self) -> str:  # @google/gemini-cli: the `gemini` binary
        return os.path.join(self.folder, "node_modules", "@google", "gemini-cli")

    @property
    def gemini_js(self) -> str:
        return os.path.join(self.cli_dir, "bundle", "gemini.js")

    def __str__(self) -> str:
        return f"gemini-cli-{self.version}"


# The release the README's figures and most tests use, and the oldest the README says works
# (its IDE client, dist/src/ide, is byte-identical to the pinned one's).
PINNED = Release(HERE)
OLDEST = Release(os.path.join(HERE, "oldest"))
RELEASES = (PINNED, OLDEST)

IDE_INFO = {"name": "sublimetext", "displayName": "Sublime Text"}

Event = dict[str, Any]


class IdeClientError(AssertionError):
    """The client did not do what the test waited for; the message carries its events and stderr."""


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise IdeClientError("Node.js is not on PATH; install Node 20+ to run the conformance tests.")
    return found


def require_node_modules(release: Release = PINNED) -> None:
    for package in (release.core_dir, release.cli_dir):
        if not os.path.isfile(os.path.join(package, "package.json")):
            raise IdeClientError(
                f"{package} is missing: run `python3 dev.py test`, which installs it with `npm ci` in {release.folder}."
            )


def isolate_tmpdir(monkeypatch: pytest.MonkeyPatch, path: str) -> str:
    """Point TMPDIR (Node's os.tmpdir()) at `path` in this process for the test, so an in-process
    companion writes its discovery file where a client started with the same TMPDIR looks.
    Returns the discovery folder."""
    os.makedirs(path, exist_ok=True)
    monkeypatch.setenv("TMPDIR", path)
    return discovery_dir({"TMPDIR": path})


def client_env(discovery_tmpdir: str, editor_pid: int | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `gemini` sees in a Terminus terminal of the window, with an isolated tmpdir.

    `editor_pid=None` leaves GEMINI_CLI_IDE_PID unset: the client then walks its process tree.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env.update(
        {
            "TMPDIR": discovery_tmpdir,  # Node's os.tmpdir(): where the client looks for discovery files
            "TERM_PROGRAM": "Terminus-Sublime",  # what Terminus forces; the file's ideInfo must identify us
            # Inside a container the client would connect to host.docker.internal instead of
            # 127.0.0.1 unless one of these is set (getIdeServerHost in ide-connection-utils).
            "SSH_CONNECTION": env.get("SSH_CONNECTION") or "conformance 0 127.0.0.1 0",
        }
    )
    if editor_pid is not None:
        env["GEMINI_CLI_IDE_PID"] = str(editor_pid)
    env.update(extra or {})
    return env


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env["TERM_PROGRAM"] = "Terminus-Sublime"
    env["SSH_CONNECTION"] = env.get("SSH_CONNECTION") or "conformance 0 127.0.0.1 0"
    return env


class IdeClientProcess:
    """The real `IdeClient` in a Node process, one per simulated `gemini`.

    `env` is laid over the environment of this process (minus any GEMINI_CLI_IDE_* variables), with
    TERM_PROGRAM=Terminus-Sublime and SSH_CONNECTION set; give TMPDIR (and GEMINI_CLI_IDE_PID,
    GEMINI_CLI_IDE_SERVER_PORT, ...) there. The working directory is `workspace`.
    """

    def __init__(
        self,
        workspace: str,
        env: dict[str, str] | None = None,
        pump: Callable[[], None] | None = None,
        release: Release = PINNED,
    ) -> None:
        self.workspace = workspace
        self.release = release
        self.env = {**_base_env(), "GCLI_CORE_DIR": release.core_dir, **(env or {})}
        self.pump = pump
        self.events: list[Event] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        self._process: subprocess.Popen[str] | None = None
        self._readers: list[threading.Thread] = []
        self._ids = itertools.count(1)
        self._stdout_done = False

    # -- process --

    def argv(self) -> list[str]:
        """What runs the client: the driver of the real IdeClient."""
        return [node(), DRIVER]

    def start(self) -> IdeClientProcess:
        require_node_modules(self.release)
        self._process = subprocess.Popen(
            self.argv(),
            cwd=self.workspace,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, name="ide-client-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name="ide-client-stderr", daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        return self

    def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "garbage", "line": line}
            with self._changed:
                self.events.append(event)
                self._changed.notify_all()
        with self._changed:
            self._stdout_done = True
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.stderr.append(line)

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def stop(self, timeout: float = 15) -> None:
        """Quit the client (it disconnects as `gemini` does on exit) and reap the process."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            try:
                self._send({"cmd": "quit"})
                assert process.stdin is not None
                process.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass
            deadline = time.monotonic() + timeout
            while process.poll() is None and time.monotonic() < deadline:
                if self.pump is not None:
                    self.pump()
                time.sleep(0.01)
            if process.poll() is None:
                process.kill()
        process.wait(timeout)
        for reader in self._readers:
            reader.join(5)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass

    def __enter__(self) -> IdeClientProcess:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- events --

    def snapshot(self) -> list[Event]:
        with self._changed:
            return list(self.events)

    def wait_event(self, predicate: Callable[[Event], bool], what: str, timeout: float = 30, start: int = 0) -> Event:
        """The first event at index >= `start` matching `predicate`, waiting up to `timeout` s.

        Fails at once (with the client's events and stderr) if the client exits, reports an error
        for this wait, or loses its connection to the companion.
        """
        deadline = time.monotonic() + timeout
        index = start
        while True:
            with self._changed:
                events = list(self.events)
                done = self._stdout_done
            for event in events[index:]:
                if predicate(event):
                    return event
                if event.get("event") == "disconnected":
                    raise IdeClientError(self.explain(f"the client lost its connection while waiting for {what}"))
                if event.get("event") == "error" and event.get("stage") in ("load", "connect", "uncaught"):
                    raise IdeClientError(self.explain(f"the client failed while waiting for {what}"))
            index = len(events)
            if done:
                raise IdeClientError(self.explain(f"the client exited ({self.returncode}) before {what}"))
            if time.monotonic() > deadline:
                raise IdeClientError(self.explain(f"timed out after {timeout} s waiting for {what}"))
            if self.pump is not None:
                self.pump()
                with self._changed:
                    if len(self.events) == index and not self._stdout_done:
                        self._changed.wait(0.005)
            else:
                with self._changed:
                    if len(self.events) == index and not self._stdout_done:
                        self._changed.wait(0.1)

    def explain(self, message: str) -> str:
        with self._changed:
            events = list(self.events)
        tail = "".join(self.stderr[-60:])
        shown = "\n".join(json.dumps(e)[:400] for e in events[-20:])
        return f"{message}\n-- last client events:\n{shown}\n-- client stderr (tail):\n{tail}"

    def wait_connected(self, timeout: float = 30) -> Event:
        """The `connected` event: `ide`, `idePid`, `tools`, `diffing`, `url`."""
        return self.wait_event(lambda e: e.get("event") == "connected", "the connection to the companion", timeout)

    def wait_context(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        """The client's stored IDE context (after its own normalisation) once `predicate` holds.

        The current context counts, and so does any later one.
        """
        with self._changed:
            indexes = [i for i, e in enumerate(self.events) if e.get("event") == "context"]
        start = indexes[-1] if indexes else 0
        event = self.wait_event(
            lambda e: e.get("event") == "context" and e.get("context") is not None and predicate(e["context"]),
            "a matching ide/contextUpdate",
            timeout,
            start,
        )
        return event["context"]

    def contexts(self) -> list[dict[str, Any]]:
        return [e["context"] for e in self.snapshot() if e.get("event") == "context" and e.get("context") is not None]

    def notifications(self, method: str | None = None) -> list[Event]:
        """Raw ide/* notifications as the client received them (before its handlers)."""
        return [
            e
            for e in self.snapshot()
            if e.get("event") == "notification" and (method is None or e.get("method") == method)
        ]

    # -- diffs --

    def _send(self, command: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise IdeClientError("the client was not started")
        process.stdin.write(json.dumps(command) + "\n")
        process.stdin.flush()

    def open_diff(self, file_path: str, new_content: str) -> str:
        """`IdeClient.openDiff` as the CLI calls it; returns an id to wait on with `wait_diff`."""
        diff_id = f"diff-{next(self._ids)}"
        self._send({"cmd": "openDiff", "id": diff_id, "filePath": file_path, "newContent": new_content})
        return diff_id

    def wait_diff(self, diff_id: str, timeout: float = 30) -> Event:
        """The outcome of an openDiff: {"status": "accepted"|"rejected", "content": str|None, ...}."""
        event = self.wait_event(
            lambda e: e.get("id") == diff_id and e.get("event") in ("diff", "error"),
            f"the outcome of {diff_id}",
            timeout,
        )
        if event["event"] == "error":
            raise IdeClientError(self.explain(f"{diff_id} failed: {event['message']}"))
        return event

    def close_diff(self, file_path: str, timeout: float = 30) -> str | None:
        """The user accepts in the CLI's terminal: `resolveDiffFromCli(path, 'accepted')`, which calls
        closeDiff; returns the content closeDiff gave back (the review's text, user edits included).

        Fails if the pending openDiff ended as anything but accepted (a companion that notifies while
        serving closeDiff turns the terminal's accept into a reject).
        """
        close_id = f"close-{next(self._ids)}"
        self._send({"cmd": "closeDiff", "id": close_id, "filePath": file_path})
        event = self.wait_event(
            lambda e: e.get("id") == close_id and e.get("event") in ("closed", "error"),
            f"closeDiff of {file_path}",
            timeout,
        )
        if event["event"] == "error":
            raise IdeClientError(self.explain(f"closeDiff of {file_path} failed: {event['message']}"))
        if event["status"] not in (None, "accepted"):
            raise IdeClientError(
                self.explain(f"the terminal accepted {file_path}, but the client recorded {event['status']!r}")
            )
        return event["content"]

    def resolve_from_cli(self, file_path: str, outcome: str) -> None:
        """The user answers in the CLI's terminal; the pending openDiff then reports as a `diff` event."""
        self._send({"cmd": "resolveFromCli", "id": f"cli-{next(self._ids)}", "filePath": file_path, "outcome": outcome})


def active_file(context: dict[str, Any]) -> dict[str, Any] | None:
    files = context.get("workspaceState", {}).get("openFiles", [])
    return next((f for f in files if f.get("isActive")), None)


def open_paths(context: dict[str, Any]) -> list[str]:
    return [f["path"] for f in context.get("workspaceState", {}).get("openFiles", [])]


# -- the companion side --


@dataclass(frozen=True)
class Decision:
    """What the scripted user does with a review: accept (optionally editing the proposal) or reject."""

    accept: bool
    edit: Callable[[str], str] | None = None

    def apply(self, review: Review) -> None:
        if self.accept:
            review.accept(self.edit(review.proposal) if self.edit is not None else review.proposal)
        else:
            review.reject()


def accept(edit: str | Callable[[str], str] | None = None) -> Decision:
    """Accept; `edit` is the text the user leaves in the review, or a function of the proposal."""
    if isinstance(edit, str):
        text = edit
        return Decision(True, lambda _proposal: text)
    return Decision(True, edit)


def reject() -> Decision:
    return Decision(False)


DecisionRule = Callable[[Review], "Decision | None"]


class DecidingEditor(ScriptedEditor):
    """The Editor port with a scripted user who decides some reviews as soon as they are shown.

    A review is decided by the first match of: a decision registered for its exact path, one
    registered for its file name, then `rule(review)`. Undecided reviews stay open, as with
    `ScriptedEditor`.
    """

    def __init__(self, rule: DecisionRule | None = None) -> None:
        super().__init__()
        self.rule = rule
        self.by_name: dict[str, Decision] = {}

    def decide(self, name_or_path: str, decision: Decision) -> DecidingEditor:
        self.by_name[name_or_path] = decision
        return self

    async def show_review(self, review: Review) -> None:
        await super().show_review(review)
        decision = self.by_name.get(review.file_path) or self.by_name.get(os.path.basename(review.file_path))
        if decision is None and self.rule is not None:
            decision = self.rule(review)
        if decision is not None:
            decision.apply(review)


class HeadlessCompanion:
    """The companion core in this process: a Runtime with one window server for `folders`.

    Its discovery file goes to `<tmpdir>/gemini/ide` (Node's rule); with `tmpdir=None` the folder
    follows this process's TMPDIR, like the real companion (see `isolate_tmpdir`).
    """

    def __init__(
        self,
        folders: Sequence[str],
        editor: DecidingEditor | Any | None = None,
        tmpdir: str | None = None,
        editor_pid: int | None = None,
        claude_lock_dir: str | None = None,
        gemini: bool = True,
    ) -> None:
        """With `claude_lock_dir`, the window serves Claude Code too and writes its lock file there;
        without `gemini`, it does not serve Gemini CLI."""
        self.folders = list(folders)
        self.editor = editor if editor is not None else DecidingEditor()
        self.tmpdir = tmpdir
        self.runtime = Runtime(
            editor_pid=editor_pid,
            discovery_directory=None if tmpdir is None else discovery_dir({"TMPDIR": tmpdir}),
            lock_directory=claude_lock_dir,
        )
        self.serves_claude = claude_lock_dir is not None
        self.serves_gemini = gemini
        self.window: WindowHandle | None = None

    def start(self, timeout: float = 30) -> HeadlessCompanion:
        handle = self.runtime.open_window(
            self.editor, self.folders, claude=self.serves_claude, gemini=self.serves_gemini
        )
        handle.ready.result(timeout)
        self.window = handle
        return self

    @property
    def handle(self) -> WindowHandle:
        if self.window is None:
            raise RuntimeError("the companion was not started")
        return self.window

    @property
    def context(self) -> Any:
        return self.handle.context

    @property
    def editor_pid(self) -> int:
        return self.runtime.editor_pid

    def client_env(self, extra: dict[str, str] | None = None, with_pid: bool = True) -> dict[str, str]:
        """The env for an `IdeClientProcess`/`gemini` that should find this companion."""
        tmpdir = self.tmpdir if self.tmpdir is not None else node_tmpdir()
        return client_env(tmpdir, self.editor_pid if with_pid else None, extra)

    def stop(self) -> None:
        self.runtime.stop()

    def __enter__(self) -> HeadlessCompanion:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


# -- the real `gemini` binary --

# The settings the brief of the end-to-end test prescribes, plus what keeps a test run off the network
# (no update check or self-update, no usage statistics).
GEMINI_SETTINGS: dict[str, Any] = {
    "ide": {"enabled": True, "hasSeenNudge": True},
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
}

# Gemini CLI takes an Enter that comes within 30 ms of a typed character for a newline inside a paste,
# not a submit (`bufferFastReturn`, FAST_RETURN_TIMEOUT = 30 in its KeypressContext, 0.58.0 and
# 0.61.0; terminals without the kitty keyboard protocol, such as Terminus): `submit` presses Enter
# at least this long after the echo of the typed text was seen, which is after the CLI took it.
ENTER_AFTER_TYPING_S = 0.05

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# A TUI may leave blank cells unwritten and move the cursor over them instead: Claude Code does so
# word by word (cursor to column N) when it believes it runs in CI (`CI` set). Such a move within
# the line reads as one space, so the words on the screen stay words in `screen_text`.
_CURSOR_RIGHT = re.compile(r"\x1b\[\d*C|\x1b\[(?:[2-9]|\d\d+)G")


class _Screen(pyte.Screen):
    """pyte's screen (the emulator Terminus draws its terminals with). An SGR with a private marker
    (`CSI > 4 ; 2 m`, xterm's modifyOtherKeys, which Gemini CLI sends) sets a keyboard mode, not a
    colour: it is ignored here, where pyte would fail on it."""

    def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
        if not private:
            super().select_graphic_rendition(*attrs)


def make_gemini_home(home: str, settings: dict[str, Any] | None = None) -> str:
    """A private home for `gemini` (GEMINI_CLI_HOME and HOME) holding `.gemini/settings.json`."""
    os.makedirs(os.path.join(home, ".gemini"), exist_ok=True)
    with open(os.path.join(home, ".gemini", "settings.json"), "w", encoding="utf-8") as handle:
        json.dump(GEMINI_SETTINGS if settings is None else settings, handle)
    return home


def recorded_turns(*turns: list[dict[str, Any]]) -> str:
    """A `--fake-responses(-non-strict)` file: one JSON line per model call, each a streamed answer
    (`{"method": "generateContentStream", "response": [GenerateContentResponse, ...]}`) whose parts
    are given per turn (FakeContentGenerator.fromFile in @google/gemini-cli-core)."""
    lines = []
    for parts in turns:
        chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]}
        lines.append(json.dumps({"method": "generateContentStream", "response": [chunk]}))
    return "\n".join(lines) + "\n"


def write_file_call(file_path: str, content: str) -> dict[str, Any]:
    return {"functionCall": {"name": "write_file", "args": {"file_path": file_path, "content": content}}}


class GeminiTerminal:
    """The real `gemini` (bundle/gemini.js of @google/gemini-cli) in a pseudo-terminal (POSIX).

    The terminal's output is read continuously on a thread (the CLI's UI would block on a full
    pty otherwise); `screen_text()` is that output with the terminal escapes removed. `stop()` ends
    the whole process group: the CLI relaunches itself as a child process.
    """

    def __init__(
        self,
        argv: Sequence[str],
        cwd: str,
        env: dict[str, str],
        columns: int = 120,
        rows: int = 40,
        release: Release = PINNED,
    ) -> None:
        self.release = release
        self.argv = [node(), release.gemini_js, *argv]
        self.cwd = cwd
        self.env = env
        self.size = (rows, columns)
        self.output = bytearray()
        self._screen = _Screen(columns, rows)
        self._screen_stream = pyte.ByteStream(self._screen)
        self._screen_error: Exception | None = None
        self.pid = 0
        self.fd = -1
        self.exit_status: int | None = None
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._typed_at = 0.0  # when the echo of the last typed text was seen (time.monotonic)

    def start(self) -> GeminiTerminal:
        import pty

        require_node_modules(self.release)
        master, slave = pty.openpty()
        self._set_size(slave)
        try:
            # subprocess forks and execs in C (safe in this multi-threaded process); a new session
            # makes the CLI and its relaunched child one process group for `stop`.
            self._process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.pid, self.fd = self._process.pid, master
        self._reader = threading.Thread(target=self._read, name="gemini-pty", daemon=True)
        self._reader.start()
        return self

    def _set_size(self, fd: int) -> None:
        import fcntl
        import struct
        import termios

        rows, columns = self.size
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO once the child side is gone
                return
            if not data:
                return
            with self._lock:
                self.output += data
                try:
                    self._screen_stream.feed(data)
                except Exception as exc:  # keep reading: a TUI blocks on a full pty
                    self._screen_error = exc

    def screen_text(self, start: int = 0) -> str:
        with self._lock:
            raw = bytes(self.output[start:])
        text = _CURSOR_RIGHT.sub(" ", raw.decode("utf-8", "replace"))
        return _ANSI.sub("", text).replace("\r", "")

    def screen_lines(self) -> list[str]:
        """The screen as the user sees it now, line by line."""
        with self._lock:
            if self._screen_error is not None:
                raise AssertionError(f"the terminal emulator could not read the output: {self._screen_error!r}")
            return [line.rstrip() for line in self._screen.display]

    def wait_screen(self, text: str, timeout: float = 90) -> None:
        """Wait until a line of the screen shows `text`. A TUI that redraws only the cells that changed
        (Claude Code) never writes a line's unchanged characters again, so its output may lack, in one
        piece, text that its screen shows: `wait_text` can miss it."""
        self.wait_until(lambda: any(text in line for line in self.screen_lines()), f"{text!r} on the screen", timeout)

    def mark(self) -> int:
        with self._lock:
            return len(self.output)

    def alive(self) -> bool:
        if self._process is None:
            return False
        self.exit_status = self._process.poll()
        return self.exit_status is None

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if not self.alive():
                raise AssertionError(self.explain(f"gemini exited ({self.exit_status}) before {what}"))
            if time.monotonic() > deadline:
                raise AssertionError(self.explain(f"timed out after {timeout} s waiting for {what}"))
            time.sleep(0.05)

    def wait_text(self, text: str, timeout: float = 90, start: int = 0) -> None:
        self.wait_until(lambda: text in self.screen_text(start), f"{text!r} on the terminal", timeout)

    def explain(self, message: str) -> str:
        with self._lock:
            screen = "\n".join(line.rstrip() for line in self._screen.display if line.strip())
        return f"{message}\n-- the screen:\n{screen}\n-- the terminal's output (tail):\n{self.screen_text()[-3000:]}"

    def type(self, text: str, timeout: float = 60) -> None:
        """Type `text` at the prompt and wait for its echo (Enter is separate: `submit`)."""
        start = self.mark()
        os.write(self.fd, text.encode("utf-8"))
        self.wait_text(text, timeout, start)
        self._typed_at = time.monotonic()

    def submit(self) -> int:
        """Press Enter, as a key of its own (see ENTER_AFTER_TYPING_S); returns the output offset from
        before it, for waits on what follows."""
        early = self._typed_at + ENTER_AFTER_TYPING_S - time.monotonic()
        if early > 0:
            time.sleep(early)
        start = self.mark()
        os.write(self.fd, b"\r")
        return start

    def wait_ide_connected(self, display_name: str = "Sublime Text", timeout: float = 60) -> None:
        """Ask `/ide status` until the CLI says it is connected to the IDE (it connects in the
        background after start-up, so a prompt typed too early would be confirmed in the terminal)."""
        deadline = time.monotonic() + timeout
        self.wait_text("Type your message", timeout)
        while True:
            # Slash commands load after the prompt first shows; typed before that, "/ide status"
            # would go to the model. The command's description in the completion list shows
            # that it is known.
            start = self.mark()
            self.type("/ide status")
            self.wait_text("Check status of IDE integration", max(1.0, deadline - time.monotonic()), start)
            start = self.submit()
            self.wait_until(
                lambda at=start: any(s in self.screen_text(at) for s in ("Connected to", "Connecting", "Disconnected")),
                "the answer to /ide status",
                max(1.0, deadline - time.monotonic()),
            )
            answer = self.screen_text(start)
            if f"Connected to {display_name}" in answer:
                return
            if "Disconnected" in answer or time.monotonic() > deadline:
                raise AssertionError(self.explain(f"gemini is not connected to {display_name}"))
            time.sleep(0.2)  # still connecting: ask again

    def stop(self) -> None:
        import signal

        process = self._process
        if process is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if process.poll() is not None:
                    break
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the relaunched child, if it outlived its parent
            except (ProcessLookupError, PermissionError):
                pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self._reader is not None:
            self._reader.join(5)

    def __enter__(self) -> GeminiTerminal:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
