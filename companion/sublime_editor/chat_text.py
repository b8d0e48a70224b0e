"""Text the companion did not write (the agent's reply, a prompt), as the chat view shows it.

The chat view is Markdown; the companion's own lines are its headings (`# Chat: …`, `## You`,
`## <agent>`) and its notices (`> ⓘ …`). Shown through `ForeignText`, someone else's text:

- can never look like those lines: a line of it that would start a level-1 or level-2 heading or a
  block quote gets a backslash in front (Markdown's escape), so every such line is the companion's;
- never puts a line longer than MAX_LINE_CHARS into the view: with word wrap on, Sublime's layout of
  a very long line freezes the editor (sublime_text#994, #2317; lag from about 2000 characters:
  #4844), so a longer line goes on after CONTINUATION, on a line of its own that nothing can turn
  into a heading, a quote or a fence. No character is dropped: the line is still there, in order;
- never leaves a code fence open over what the companion writes next: before a line of the
  companion's own the fence is closed, and opened again when the text goes on (`interrupt`); when
  the text ends (a turn, a prompt), a dangling fence is closed for good (`finish`).

Pure text: no `sublime`, no state beyond the current line and the open fence.
"""

from __future__ import annotations

MAX_LINE_CHARS = 2000  # characters on one line of the view; the rest goes on after CONTINUATION
CONTINUATION = "\n↪ "  # shown where a long line goes on: not the agent's text, the view's layout
ESCAPE = "\\"  # Markdown's escape: `\## You` is text, not a heading
HEAD_CHARS = 256  # of each line, enough to tell a fence's opener and closer


def _escape_at(head: str, final: bool) -> int | None:
    """Where a line starting with `head` needs ESCAPE (-1: nowhere; None: not known until more
    of the line is seen). Final: the line ends with `head`."""
    indent = len(head) - len(head.lstrip(" "))
    if indent >= 4 or (indent == len(head) and not final):
        return -1 if indent >= 4 else None
    if indent == len(head):
        return -1
    first = head[indent]
    if first == ">":
        return indent
    if first != "#":
        return -1
    run = len(head) - indent - len(head[indent:].lstrip("#"))
    if run > 2:
        return -1  # level 3 and deeper: the companion writes none
    if indent + run == len(head):
        return indent if final else None
    return indent if head[indent + run] in " \t\r\n" else -1


def _fence(line: str) -> tuple[str, int, str] | None:
    """(the fence's character, its length, what follows) of a fence line, else None."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped or stripped[0] not in "`~":
        return None
    mark = stripped[0]
    run = len(stripped) - len(stripped.lstrip(mark))
    return (mark, run, stripped[run:]) if run >= 3 else None


class ForeignText:
    """One stream of someone else's text (a reply, in chunks; a prompt), made safe to show."""

    def __init__(self, column: int = 0) -> None:
        self._start(column)

    def _start(self, column: int) -> None:
        self._held = ""  # the start of a line, until it is known whether it needs ESCAPE
        self._line_start = column == 0  # the next character starts a line of the text
        self._column = column  # characters on the view's current line
        self._head = ""  # the first HEAD_CHARS characters of the text's current line
        self._fence: str | None = None  # the open code fence's opening line
        self._reopen = False  # the fence was closed for the companion's lines: open it again
        self._goes_on = False  # the companion's lines cut a line of the text: mark where it goes on

    def feed(self, text: str) -> str:
        """What to put into the view for `text`, the next part of the stream."""
        out: list[str] = []
        if text:
            self._resume(out, text)
        text, self._held = self._held + text, ""
        pos = 0
        while pos < len(text):
            if self._line_start:
                plain = self._fence is not None or text[pos] not in " #>"  # most lines: nothing to look at
                at = -1 if plain else _escape_at(text[pos : pos + 8], final=False)
                if at is None:
                    self._held = text[pos:]
                    break
                self._line_start = False
                if at >= 0:
                    self._put(out, text[pos : pos + at])
                    out.append(ESCAPE)
                    self._column += 1
                    pos += at
            newline = text.find("\n", pos)
            end = len(text) if newline < 0 else newline
            self._put(out, text[pos:end])
            if newline < 0:
                break
            out.append("\n")
            self._line_ended()
            pos = newline + 1
        return "".join(out)

    def interrupt(self) -> str:
        """What to put into the view before a line of the companion's own: the text's line ended,
        its open fence closed (both only in the view: the text goes on where it was)."""
        out: list[str] = []
        if self._held:
            at = _escape_at(self._held, final=True) if self._fence is None else -1
            self._line_start = False
            if at is not None and at >= 0:
                self._put(out, self._held[:at])
                out.append(ESCAPE)
                self._column += 1
                self._held = self._held[at:]
            self._put(out, self._held)
            self._held = ""
        if self._column:
            out.append("\n")
            self._column = 0
            self._goes_on = True
        if self._fence is not None and not self._reopen:
            mark, run, _ = _fence(self._fence) or ("`", 3, "")
            out.append(mark * run + "\n")
            self._reopen = True
        return "".join(out)

    def finish(self) -> str:
        """What to put into the view when the text has ended: a dangling fence is closed for good."""
        shown = self.interrupt()
        self._start(0)
        return shown

    def _resume(self, out: list[str], text: str) -> None:
        if self._reopen and self._fence is not None:
            out.append(self._fence + "\n")
        self._reopen = False
        if self._goes_on and not text.startswith("\n"):  # a line that goes on, not one that ends
            out.append(CONTINUATION[1:])
            self._column = len(CONTINUATION) - 1
        self._goes_on = False

    def _put(self, out: list[str], part: str) -> None:
        """Part of one line of the text (no newline), broken after MAX_LINE_CHARS."""
        if len(self._head) < HEAD_CHARS:
            self._head += part[: HEAD_CHARS - len(self._head)]
        start = 0
        while start < len(part):
            if self._column >= MAX_LINE_CHARS:
                out.append(CONTINUATION)
                self._column = len(CONTINUATION) - 1
            end = min(len(part), start + MAX_LINE_CHARS - self._column)
            out.append(part[start:end])
            self._column += end - start
            start = end

    def _line_ended(self) -> None:
        fence = _fence(self._head) if self._head[:1] in (" ", "`", "~") else None
        if fence is not None:
            mark, run, rest = fence
            if self._fence is None and not (mark == "`" and "`" in rest):
                self._fence = self._head
            elif self._fence is not None:
                opened = _fence(self._fence)
                if opened is not None and mark == opened[0] and run >= opened[1] and not rest.strip():
                    self._fence = None
        self._line_start, self._column, self._head = True, 0, ""
