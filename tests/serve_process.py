"""A running `python -m companion serve` in a subprocess: its output read line by line, as a user
would read the terminal."""

from __future__ import annotations

import queue
import subprocess
import threading


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
