"""One terminal shared by what a headless session prints and the questions it asks (the review's
y/n, a permission's menu): a question is always the last thing on the terminal.

While a question waits for its answer, output is held and printed after the answer, so nothing an
agent prints can land under the real question (a fake diff and a fake question did). Output held
past `HOLD_CHARS` is printed at once and the question asked again under it (memory stays bounded).
After held output was printed, the next question shows its context (the diff) again.

One status line (an agent retrying its connection for minutes) is rewritten in place on a terminal,
and printed at most every `STATUS_EVERY` seconds elsewhere (a pipe, a log).

Thread-safe: output comes from the event loop, questions block a thread of their own. Everything
written here is already escaped by the caller (`headless.visible`); only the status line's own
erase sequence is added here.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from typing import TextIO

HOLD_CHARS = 1 << 20  # output held under one question before it is printed and the question asked again
STATUS_EVERY = 10.0  # seconds between status lines when they cannot be rewritten in place
_ERASE_LINE = "\r\x1b[2K"


class Console:
    def __init__(
        self,
        out: TextIO,
        read_line: Callable[[str], str] = input,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out
        self.read_line = read_line
        self.clock = clock
        isatty = getattr(out, "isatty", None)
        self.rewrites = bool(isatty and isatty())  # a terminal: the status line is rewritten in place
        self._lock = threading.Lock()  # the state below and every write
        self._one_question = threading.Lock()  # one question on the terminal at a time
        self._question: tuple[str, str] | None = None  # (context, question) waiting for its answer
        self._held: list[str] = []
        self._held_chars = 0
        self._shown_context = ""  # the context last shown above a question
        self._printed_since_context = False
        self._at_line_start = True
        self._status = ""  # the status line on the terminal ("" none)
        self._last_status = ""  # not a terminal: the status last printed, and when
        self._last_status_at: float | None = None

    def say(self, text: str) -> None:
        """Print `text`, or hold it while a question waits."""
        with self._lock:
            if self._question is None:
                self._print(text)
                return
            self._held.append(text)
            self._held_chars += len(text)
            if self._held_chars > HOLD_CHARS:
                self._release()
                context, question = self._question
                self._write(f"\n{context}{question}")  # asked again, under what was held
                self._printed_since_context = False

    def status(self, text: str | None) -> None:
        """Show `text` as the one status line (one line, escaped); None clears it."""
        with self._lock:
            if self._question is not None:
                return  # the question stays the last line; a newer status will come
            if not self.rewrites:
                self._status_line(text)
            elif text:
                self._erase_status()
                self._write(("" if self._at_line_start else "\n") + _fit(text))
                self._status = text
                self._at_line_start = True  # the next output starts by erasing this line
            else:
                self._erase_status()

    def ask(self, context: str, question: str, withdrawn: threading.Event | None = None) -> str:
        """Show `context` (unless it is already the last thing above) and `question`, read one line
        (blocks: never call it on the event loop). Output meanwhile is printed after the answer.
        EOFError when input has ended, or when `withdrawn` was set before the question's turn."""
        with self._one_question:
            if withdrawn is not None and withdrawn.is_set():
                raise EOFError("the question was withdrawn before it was asked")
            with self._lock:
                self._erase_status()
                if context and (context != self._shown_context or self._printed_since_context):
                    self._write(context)
                self._shown_context, self._printed_since_context = context, False
                self._question = (context, question)
                self.out.flush()
            try:
                return self.read_line(question)
            finally:
                with self._lock:
                    self._at_line_start = True  # the answer ended its line
                    if self._question == (context, question):
                        self._question = None
                        self._release()

    def withdraw(self, text: str, question: str) -> None:
        """`question`, if it is the one on the terminal, needs no answer any more: say `text` and
        print what was held (a late answer is read and ignored by whoever asked)."""
        with self._lock:
            if self._question is None or self._question[1] != question:
                return
            self._question = None
            self._print(text)
            self._release()

    # -- under the lock --

    def _print(self, text: str) -> None:
        if not text:
            return
        self._erase_status()
        self._write(text)
        self._printed_since_context = True

    def _release(self) -> None:
        held, self._held, self._held_chars = "".join(self._held), [], 0
        self._print(held)

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        self._at_line_start = text.endswith("\n")

    def _erase_status(self) -> None:
        if self._status:
            self.out.write(_ERASE_LINE)
            self._status = ""

    def _status_line(self, text: str | None) -> None:
        """Not a terminal: a line when the status changes, at most every STATUS_EVERY seconds."""
        now = self.clock()
        if not text or text == self._last_status:
            return
        if self._last_status_at is not None and now - self._last_status_at < STATUS_EVERY:
            return
        self._last_status, self._last_status_at = text, now
        self._print(("" if self._at_line_start else "\n") + f"[status] {text}\n")


def _fit(text: str) -> str:
    """One terminal line: longer text would wrap, and the erase would then clear only its last row."""
    width = max(shutil.get_terminal_size().columns - 1, 20)
    return text if len(text) <= width else text[: width - 1] + "…"
