"""A running `python -m companion serve` in a subprocess: its output read line by line, as a user
would read the terminal."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from companion.gemini_ide.discovery import discovery_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ServeProcess:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)

    def expect(self, fragment: str, timeout: float = 60) -> str:
        """The next line containing `fragment`; fails with all output so far after `timeout` s."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line with {fragment!r}; output so far: {''.join(self.output)}") from None
            if fragment in line:
                return line

    def stop(self) -> None:
        """Ends the process if it still runs: politely first, then for good."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def serve(
    tmp_path: str,
    workspace: str | None,
    policy: str,
    stdin: bool = False,
    cwd: str | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> Iterator[ServeProcess]:
    """`python -m companion serve` on `workspace`, or with no --workspace (then in `cwd`);
    `preexec_fn` runs in the child before it starts (resource limits)."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    folder = ["--workspace", workspace] if workspace is not None else []
    process = subprocess.Popen(
        [sys.executable, "-m", "companion", "serve", *folder, "--diff-policy", policy],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
        preexec_fn=preexec_fn,
    )
    server = ServeProcess(process)
    try:
        yield server
    finally:
        server.stop()


def endpoint(tmp_path: str) -> tuple[str, str, str]:
    directory = discovery_dir({"TMPDIR": str(tmp_path)})
    (name,) = os.listdir(directory)
    path = os.path.join(directory, name)
    with open(path) as f:
        payload = json.load(f)
    return path, f"http://127.0.0.1:{payload['port']}/mcp", payload["authToken"]
