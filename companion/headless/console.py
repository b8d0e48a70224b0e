"""One terminal shared by what a headless session prints and the questions it asks (the review's
y/n, a permission's menu): a question is always the last thing on the terminal.

While a question waits for its answer, output is held and printed after the answer, so nothing an
agent prints can land under the real question (a fake diff and a fake question did). Output held
past `HOLD_CHARS` is printed at once and the question asked again under it (memory stays bounded).
After held output was printed, the next question shows its context (the diff) again.

In the terminal chat every answer and prompt comes from one reader of stdin (`StdinLines`), so a
question withdrawn while it waits never takes the next line typed.

One status line (an agent retrying its connection for minutes) is rewritten in place on a terminal,
and printed at most every `STATUS_EVERY` seconds elsewhere (a pipe, a log).

Thread-safe: output comes from the event loop, questions block a thread of their own. Everything
written here is already escaped by the caller (`headless.visible`); only the status line's own
erase sequence is added here.
"""

from __future__ import annotations

import collections
import shutil
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:  # `serve` imports this module before its discovery file: asyncio must wait
    import asyncio

T = TypeVar("T")

HOLD_CHARS = 1 << 20  # output held under one question before it is printed and the question asked again
STATUS_EVERY = 10.0  # seconds between status lines when they cannot be rewritten in place
_ERASE_LINE = "\r\x1b[2K"


class Console:
    def __init__(
        self,
        out: TextIO,
        read_line: Callable[[str], str] = input,
        clock: Callable[[], float] = time.monotonic,
        lines: StdinLines | None = None,
    ) -> None:
        self.out = out
        self.read_line = read_line
        self.lines = lines  # the chat's one reader of stdin: a withdrawn question takes no line
        self.clock = clock
        isatty = getattr(out, "isatty", None)
        self.rewrites = bool(isatty and isatty())  # a terminal: the status line is rewritten in place
        self.bell = False  # `chat --bell`: a BEL before a question the agent waits on (a terminal only)
        self._lock = threading.Lock()  # the state below and every write
        self._one_question = threading.Lock()  # one question on the terminal at a time
        self._question: tuple[str, str] | None = None  # (context, question) waiting for its answer
        self._withdrawn: threading.Event | None = None  # set when that question needs no answer any more
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

    def ask(self, context: str, question: str, withdrawn: threading.Event | None = None, waits: bool = False) -> str:
        """Show `context` (unless it is already the last thing above) and `question`, read one line
        (blocks: never call it on the event loop). Output meanwhile is printed after the answer.
        EOFError when input has ended; Withdrawn (an EOFError) when `withdrawn` was set before the
        question's turn, or (reading from `lines`) when it is withdrawn while it waits. `withdrawn` is
        also the question's identity for `withdraw`: two questions may read alike ("Choose 1-2:").
        `waits`: the agent waits on the answer (a permission, a review): with `bell`, the terminal's
        bell rings first, so a user looking elsewhere hears it."""
        with self._one_question:
            if withdrawn is not None and withdrawn.is_set():
                raise Withdrawn("the question was withdrawn before it was asked")
            with self._lock:
                self._erase_status()
                if waits and self.bell and self.rewrites:
                    self._write("\a")
                if context and (context != self._shown_context or self._printed_since_context):
                    self._write(context)
                self._shown_context, self._printed_since_context = context, False
                self._question = (context, question)
                self._withdrawn = token = withdrawn or threading.Event()
                # Lines typed from here on may answer it: reserved before it is shown, since the user
                # (or a test) may answer the moment it is.
                since = self.lines.reserve() if self.lines is not None else 0
                if self.lines is not None:
                    self._write(question)
                else:
                    self._at_line_start = False  # read_line shows the question
                self.out.flush()
            try:
                if self.lines is None:
                    return self.read_line(question)
                return self.lines.take(token, since)  # never a line typed before it was shown
            finally:
                with self._lock:
                    self._at_line_start = True  # the answer ended its line
                    if self._question is not None and self._withdrawn is token:
                        self._question = None
                        self._release()

    def withdraw(self, text: str, withdrawn: threading.Event) -> None:
        """The question asked with `withdrawn`, if it is the one on the terminal, needs no answer any
        more: say `text` and print what was held (a late answer is read and ignored by whoever
        asked). Matched by identity, never by its text: a question that reads like the one on the
        terminal but waits behind it must not take that one away (and its answer with it)."""
        with self._lock:
            if self._question is None or self._withdrawn is not withdrawn:
                return
            self._question = None
            withdrawn.set()  # its reader stops waiting and takes no line
            if self._at_line_start and text.startswith("\n"):
                text = text[1:]  # the line was ended already (a ^C, then "cancelling the turn")
            self._print(text)
            self._release()
        if self.lines is not None:
            self.lines.wake()

    def abandon(self) -> None:
        """The end: a question still on the terminal needs no answer (its reader stops waiting)."""
        with self._lock:
            withdrawn = self._withdrawn if self._question is not None else None
        if withdrawn is not None:
            self.withdraw("\n", withdrawn)

    def prompt(self, text: str) -> None:
        """Show the `>` prompt (a line read next ends it)."""
        with self._lock:
            self._print(("" if self._at_line_start else "\n") + text)

    def line_read(self) -> None:
        """The terminal echoed the line typed, with its line break."""
        with self._lock:
            self._at_line_start = True

    def end_line(self) -> None:
        """The cursor to the start of a line (after `> ` and Ctrl-D, ^C, or a reply with no line
        break), before a line of our own; nothing when it is there already."""
        with self._lock:
            self._erase_status()
            if not self._at_line_start:
                self._write("\n")

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
    columns = shutil.get_terminal_size().columns
    # A terminal that reports no size (a pty nobody sized) says 0: Python 3.10 passes that on
    # (3.11 falls back to 80 itself), and the line would be cut to 20 characters.
    width = (columns if columns > 0 else 80) - 1
    width = max(width, 20)
    return text if len(text) <= width else text[: width - 1] + "…"


# -- the one reader of stdin --
# Every reader of its own (an `input()` per question, each on a thread) left a question that was
# withdrawn (Ctrl-C, or the agent closed the review) still blocked in its read: it took the next
# line the user typed for the `>` prompt, and the line was lost. StdinLines is the chat's one reader:
# a thread reads line after line into a queue, and whoever needs a line (the `>` prompt, a review's
# y/n, a permission's menu, a restore's k/t) takes the next one; a withdrawn taker stops waiting at
# once and takes nothing. The thread is a daemon blocked in a read: the chat ends with `os._exit`
# once it has flushed (`started`), since a normal exit would wait for stdin's lock (see `serve`).


class Withdrawn(EOFError):
    """The taker was withdrawn before a line came: it took none."""


# On a terminal a line typed while nobody waits for one (ahead, during a turn) is a prompt for the
# `>` after the turn: a question asked later takes only lines typed after it was shown (it took the
# line typed ahead as its answer, an invalid one, and the line was lost). `typed_ahead` says so on
# the screen as the line arrives. From a pipe the lines are a script: taken in order, as they come.


class StdinLines:
    def __init__(self, stream: TextIO, typed_ahead: Callable[[str], None] | None = None) -> None:
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.terminal = bool(isatty and isatty())
        self.typed_ahead = typed_ahead  # called (on the reader's thread) with a line typed ahead
        self._changed = threading.Condition()  # guards the state below
        self._lines: collections.deque[tuple[int, str]] = collections.deque()  # (arrival number, line)
        self._arrived = 0
        self._takers = 0  # takers waiting now: a line that comes meanwhile is not typed ahead
        self._ended = False
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    def reserve(self) -> int:
        """A question is about to be shown: lines from now on are for a taker (not typed ahead).
        Returns the `since` to give `take`, which ends the reservation."""
        self._start()
        with self._changed:
            self._takers += 1
            return self._arrived if self.terminal else 0

    def take(self, withdrawn: threading.Event | None = None, since: int | None = None) -> str:
        """The next line, without its line break (blocks: never call it on the event loop).
        With `since` from `reserve` (a question), on a terminal: the next line typed from then on;
        earlier ones stay queued for the prompt. EOFError once input has ended; Withdrawn when
        `withdrawn` is set (see `wake`) first."""
        self._start()
        with self._changed:
            if since is None:
                self._takers += 1
                since = 0
            try:
                while (found := self._first(since)) is None:
                    if withdrawn is not None and withdrawn.is_set():
                        raise Withdrawn("the question was withdrawn")
                    if self._ended:
                        raise EOFError("input ended")
                    self._changed.wait()
                self._lines.remove(found)
                return found[1]
            finally:
                self._takers -= 1

    def queued(self) -> int:
        """Lines typed and not taken yet."""
        with self._changed:
            return len(self._lines)

    def waiting(self) -> list[str]:
        """The lines typed and not taken yet, oldest first (the prompts queued during a turn)."""
        with self._changed:
            return [text for _, text in self._lines]

    def drop_last(self) -> str | None:
        """The newest line not taken yet, taken out (None when there is none)."""
        with self._changed:
            return self._lines.pop()[1] if self._lines else None

    def _first(self, since: int) -> tuple[int, str] | None:
        return next((line for line in self._lines if line[0] >= since), None)

    async def next_line(self) -> str:
        """`take` for the event loop: cancelled, it takes nothing (a line it had already taken is
        put back first in the queue), and its thread returns at once."""
        import asyncio

        withdrawn = threading.Event()
        taking = asyncio.ensure_future(off_the_loop(self.take, withdrawn))
        try:
            return await asyncio.shield(taking)
        except asyncio.CancelledError:
            withdrawn.set()
            self.wake()
            taking.add_done_callback(self._put_back)
            raise

    def wake(self) -> None:
        """Takers look at their `withdrawn` event again (call it after setting one)."""
        with self._changed:
            self._changed.notify_all()

    def _put_back(self, taking: asyncio.Future[str]) -> None:
        """A line taken just as its taker was cancelled goes back first in the queue: never lost."""
        if not taking.cancelled() and taking.exception() is None:
            with self._changed:
                self._lines.appendleft((-1, taking.result()))  # before any other, for any taker
                self._changed.notify_all()

    def _start(self) -> None:
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._read, name="companion-stdin", daemon=True)
                self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):  # a closed terminal (EIO), a closed stream
                line = ""
            text = line[:-1] if line.endswith("\n") else line
            with self._changed:
                ahead = bool(line) and self.terminal and self._takers == 0
                if not line:
                    self._ended = True
                else:
                    self._lines.append((self._arrived, text))
                    self._arrived += 1
                self._changed.notify_all()
            if not line:
                return
            if ahead and self.typed_ahead is not None:
                self.typed_ahead(text)


async def off_the_loop(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` on a daemon thread of its own: a call blocked in a read (a question nobody will
    answer any more) never holds up the end of the chat, as a thread of the loop's executor would
    (asyncio.run joins them)."""
    import asyncio

    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = call(*args), None
        except BaseException as exc:  # handed over to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:
            pass  # the loop is closed: nobody waits any more

    threading.Thread(target=run, name="companion-ask", daemon=True).start()
    return await done
