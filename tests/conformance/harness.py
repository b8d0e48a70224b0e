"""Run the real Gemini CLI IDE client (Node) against a companion and talk to it synchronously.

`IdeClientProcess` starts `ide_client_driver.mjs` in the workspace folder with the environment
Gemini CLI would have inside a Terminus terminal, and turns its JSON lines into method calls. The
API is synchronous on purpose: the fake-Sublime tests play the editor's main thread themselves,
so waits call `pump` (e.g. one pass of the fake's main-thread queue) between polls.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "node_modules")
CORE_DIR = os.path.join(NODE_MODULES, "@google", "gemini-cli-core")
DRIVER = os.path.join(HERE, "ide_client_driver.mjs")

Event = dict[str, Any]


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("Node.js is not on PATH; install Node 20+ to run the conformance tests.")
    return found


def client_env(discovery_tmpdir: str, editor_pid: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `gemini` sees in a Terminus terminal of the window, with an isolated tmpdir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env.update(
        {
            "TMPDIR": discovery_tmpdir,  # Node's os.tmpdir(): where the client looks for discovery files
            "GEMINI_CLI_IDE_PID": str(editor_pid),
            "TERM_PROGRAM": "Terminus-Sublime",  # what Terminus forces; the file's ideInfo must identify us
            # Inside a container the client would connect to host.docker.internal instead of
            # 127.0.0.1 unless one of these is set (getIdeServerHost in ide-connection-utils).
            "SSH_CONNECTION": env.get("SSH_CONNECTION") or "conformance 0 127.0.0.1 0",
        }
    )
    env.update(extra or {})
    return env


class IdeClientProcess:
    def __init__(
        self, workspace: str, env: dict[str, str], pump: Callable[[], None] | None = None
    ) -> None:
        self.workspace = workspace
        self.env = env
        self.pump = pump or (lambda: time.sleep(0.01))
        self.events: list[Event] = []
        self.stderr: list[str] = []
        self._lines: queue.Queue[Event] = queue.Queue()
        self._process: subprocess.Popen[str] | None = None
        self._ids = itertools.count(1)

    # -- process --

    def start(self) -> IdeClientProcess:
        self._process = subprocess.Popen(
            [node(), DRIVER, CORE_DIR],
            cwd=self.workspace,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        return self

    def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if line.strip():
                self._lines.put(json.loads(line))

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.stderr.append(line)

    def stop(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        try:
            self._send({"cmd": "quit"})
            deadline = time.monotonic() + 10
            while process.poll() is None and time.monotonic() < deadline:
                self.pump()
        except (BrokenPipeError, OSError):
            pass
        if process.poll() is None:
            process.kill()
        process.wait(10)

    def __enter__(self) -> IdeClientProcess:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- events --

    def _drain(self) -> None:
        while True:
            try:
                self.events.append(self._lines.get_nowait())
            except queue.Empty:
                return

    def wait_event(self, predicate: Callable[[Event], bool], what: str, timeout: float = 30) -> Event:
        deadline = time.monotonic() + timeout
        while True:
            self._drain()
            for event in self.events:
                if predicate(event):
                    return event
            if time.monotonic() > deadline:
                raise AssertionError(self._explain(f"timed out after {timeout} s waiting for {what}"))
            if self._process is not None and self._process.poll() is not None and self._lines.empty():
                raise AssertionError(self._explain(f"the client exited ({self._process.returncode}) before {what}"))
            self.pump()

    def _explain(self, message: str) -> str:
        tail = "".join(self.stderr[-40:])
        events = "\n".join(json.dumps(e)[:300] for e in self.events[-15:])
        return f"{message}\n-- last events:\n{events}\n-- client stderr:\n{tail}"

    def wait_connected(self, timeout: float = 30) -> Event:
        return self.wait_event(lambda e: e["event"] in ("connected", "error"), "connection", timeout)

    def wait_context(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        event = self.wait_event(
            lambda e: e["event"] == "context" and e["context"] is not None and predicate(e["context"]),
            "a matching ide/contextUpdate",
            timeout,
        )
        return event["context"]

    def contexts(self) -> list[dict[str, Any]]:
        self._drain()
        return [e["context"] for e in self.events if e["event"] == "context" and e["context"] is not None]

    # -- diffs --

    def _send(self, command: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()

    def open_diff(self, file_path: str, new_content: str) -> str:
        """Start `openDiff` as the CLI does; returns an id to wait on with `wait_diff`."""
        diff_id = f"diff-{next(self._ids)}"
        self._send({"cmd": "openDiff", "id": diff_id, "filePath": file_path, "newContent": new_content})
        return diff_id

    def wait_diff(self, diff_id: str, timeout: float = 30) -> Event:
        event = self.wait_event(lambda e: e.get("id") == diff_id, f"the outcome of {diff_id}", timeout)
        if event["event"] == "error":
            raise AssertionError(self._explain(f"{diff_id} failed: {event['message']}"))
        return event

    def resolve_from_cli(self, file_path: str, outcome: str) -> None:
        """The user answers in the CLI's terminal: the CLI calls closeDiff and settles the diff itself."""
        self._send({"cmd": "resolveFromCli", "id": f"cli-{next(self._ids)}", "filePath": file_path, "outcome": outcome})


def active_file(context: dict[str, Any]) -> dict[str, Any] | None:
    files = context.get("workspaceState", {}).get("openFiles", [])
    return next((f for f in files if f.get("isActive")), None)
