"""Text the companion did not write (the agent's reply, a prompt), as the chat view shows it.

The chat view is Markdown; the companion's own lines are its headings (`# Chat: …`, `## You`,
`## <agent>`) and its notices (`> ⓘ …`, `> ⚠ …`). Shown through `ForeignText`, someone else's text:

- can never look like those lines: a line of it that imitates one exactly (`## You`, `## <agent>`,
  `# Chat: …`, a quote starting `ⓘ` or `⚠`, a setext underline under `You`, `<agent>`, `Chat: …`)
  gets a backslash in front (Markdown's escape); any other heading or quote is shown as written;
- never puts a line longer than MAX_LINE_CHARS into the view: with word wrap on, Sublime's
  layout of a very long line freezes the editor (sublime_text#994, #2317; lag from about 2000
  characters: #4844), and an agent pasting minified code puts it in a fence. A longer line goes on
  after CONTINUATION: prose after its last whitespace within BREAK_WINDOW characters of the limit
  (else at the limit), code at the limit; `breaks` says where, so the chat view's copy leaves them
  out and the code the user copies is the code as written;
- never leaves a code fence open over what the companion writes next: before a line of the
  companion's own the fence is closed, and opened again when the text goes on (`interrupt`); when
  the text ends (a turn, a prompt), a dangling fence is closed for good (`finish`). A text line cut
  by the companion's lines goes on at the start of a fresh line, unmarked.

Pure text: no `sublime`, no state beyond the current line and the open fence.
"""

from __future__ import annotations

import re

MAX_LINE_CHARS = 2000  # characters on one prose line of the view; the rest goes on after CONTINUATION
BREAK_WINDOW = 200  # a long prose line breaks after its last whitespace this close to the limit
CONTINUATION = "\n↪ "  # shown where a long line goes on: not the agent's text, the view's layout
ESCAPE = "\\"  # Markdown's escape: `\## You` is text, not a heading
HEAD_CHARS = 256  # of each line: enough to tell a fence, and an imitation of the companion's lines
NOTICE_MARKS = "ⓘ⚠"  # what the companion's notices start with, inside their quote
CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")  # a heading's optional closing sequence (CommonMark)


def _quote_at(head: str, indent: int, final: bool) -> int | None:
    """Where a line that opens a quote needs ESCAPE: only if it quotes a notice (`> ⓘ`, `>> ⚠`)."""
    rest = head[indent:].lstrip("> \t")
    if not rest:
        return -1 if final else None
    return indent if rest[0] in NOTICE_MARKS else -1


def _heading_at(head: str, indent: int, final: bool, agent: str) -> int | None:
    """Where an ATX heading line needs ESCAPE: only if it reads `# Chat: …`, `## You` or `## <agent>`."""
    run = len(head) - indent - len(head[indent:].lstrip("#"))
    if run > 2:
        return -1  # level 3 and deeper: the companion writes none
    if indent + run == len(head):
        return -1 if final else None
    if head[indent + run] not in " \t\r":
        return -1  # `#hashtag`: not a heading
    title = head[indent + run :].lstrip(" \t")
    if run == 1:
        wanted = "Chat:"
        if title.startswith(wanted):
            return indent
        return None if not final and wanted.startswith(title) else -1
    if final:
        title = CLOSING_HASHES.sub("", title.rstrip(" \t\r")).rstrip(" \t")
        return indent if title in ("You", agent) else -1
    for name in ("You", agent):
        if name.startswith(title) or (title.startswith(name) and not title[len(name) :].strip(" \t\r#")):
            return None  # could still be the whole title
    return -1


def _underline_at(head: str, indent: int, final: bool, title: str, agent: str) -> int | None:
    """Where a line needs ESCAPE as the setext underline (`---`, `===`) of a line reading like the
    companion's heading (`You`, `<agent>`; `Chat: …`)."""
    mark = head[indent]
    wanted = title in ("You", agent) if mark == "-" else title.startswith("Chat:")
    if not wanted or head[indent:].rstrip(" \t\r").strip(mark):
        return -1
    return indent if final else None


def _escape_at(head: str, final: bool, agent: str, title: str = "") -> int | None:
    """Where a line starting with `head` needs ESCAPE (-1: nowhere; None: not known until more
    of the line is seen). Final: `head` is the whole line. Title: the line before it, if prose."""
    indent = len(head) - len(head.lstrip(" "))
    if indent >= 4:
        return -1
    if indent == len(head):
        return -1 if final else None
    if title and head[indent] in "-=":
        return _underline_at(head, indent, final, title, agent)
    if head[indent] == ">":
        return _quote_at(head, indent, final)
    if head[indent] == "#":
        return _heading_at(head, indent, final, agent)
    return -1


def _fence(line: str) -> tuple[str, int, str] | None:
    """(the fence's character, its length, what follows) of a fence line, else None. Any
    indentation: a fence in a list item is indented past CommonMark's 3 spaces, and Claude and
    Gemini nest code in numbered steps all the time (an indented code block holding a fence line
    is the rarer case)."""
    stripped = line.lstrip(" \t")
    if not stripped or stripped[0] not in "`~":
        return None
    mark = stripped[0]
    run = len(stripped) - len(stripped.lstrip(mark))
    return (mark, run, stripped[run:]) if run >= 3 else None


def _break_after(tail: str, room: int) -> int:
    """How much of `tail` stays on a line that has `room` characters left: up to its last
    whitespace in the final BREAK_WINDOW characters (a word is not cut in two), else all the room."""
    if room <= 0:
        return 0
    start = max(0, room - BREAK_WINDOW)
    window = tail[start:room]
    last = max(window.rfind(" "), window.rfind("\t"))
    return start + last + 1 if last >= 0 else room


class ForeignText:
    """One stream of someone else's text (a reply, in chunks; a prompt), made safe to show."""

    def __init__(self, agent: str, column: int = 0) -> None:
        self._agent = agent  # `## <agent>` is one of the companion's headings
        self.breaks: list[int] = []  # where the last text returned has a CONTINUATION (its offsets)
        self._start(column)

    def _start(self, column: int) -> None:
        self._held = ""  # the start of a line, until it is known whether it needs ESCAPE
        self._line_start = column == 0  # the next character starts a line of the view
        self._column = column  # characters put on the view's current line
        self._tail = ""  # the end of a long prose line, until it is known where it breaks
        self._head = ""  # the first HEAD_CHARS characters of the text's current line
        self._title = ""  # the text's previous line, outside fences: a setext heading's title
        self._fenced = False  # the current line's fence (opening or closing) is taken into account
        self._fence: str | None = None  # the open code fence's opening line
        self._reopen = False  # the fence was closed for the companion's lines: open it again
        self._cut = False  # the companion's lines ended the view's line inside a line of the text

    def feed(self, text: str) -> str:
        """What to put into the view for `text`, the next part of the stream."""
        out: list[str] = []
        self.breaks = []
        if text:
            text = self._resume(out, text)
        text, self._held = self._held + text, ""
        pos = 0
        while pos < len(text):
            if self._line_start:
                plain = self._fence is not None or text[pos] not in " #>-="  # most lines: nothing to look at
                newline = text.find("\n", pos, pos + HEAD_CHARS)
                head = text[pos : pos + HEAD_CHARS] if newline < 0 else text[pos:newline]
                at = -1 if plain else _escape_at(head, newline >= 0, self._agent, self._title)
                if at is None and len(head) < HEAD_CHARS:
                    self._held = text[pos:]
                    break
                self._line_start = False
                if at is None or at >= 0:  # an imitation, or too long to tell: escaped
                    at = 0 if at is None else at
                    self._put(out, text[pos : pos + at])
                    out.append(ESCAPE)
                    self._column += 1
                    pos += at
            newline = text.find("\n", pos)
            end = len(text) if newline < 0 else newline
            self._put(out, text[pos:end])
            if newline < 0:
                break
            self._end_line(out)
            pos = newline + 1
        return "".join(out)

    def interrupt(self) -> str:
        """What to put into the view before a line of the companion's own: the text's line ended,
        its open fence closed (both only in the view: the text goes on where it was)."""
        out: list[str] = []
        self.breaks = []
        if self._held:
            at = _escape_at(self._held, True, self._agent, self._title) if self._fence is None else -1
            if at is not None and at >= 0:
                self._put(out, self._held[:at])
                out.append(ESCAPE)
                self._column += 1
                self._held = self._held[at:]
            self._put(out, self._held)
            self._held = ""
        self._flush(out)
        if self._column:
            out.append("\n")
            self._column = 0
            self._cut = True
            self._fence_line()  # the view ended the line: a fence line in it is one there now
        self._line_start = True  # what follows starts a line of the view: it may need ESCAPE
        if self._fence is not None and not self._reopen:
            mark, run, _ = _fence(self._fence) or ("`", 3, "")
            indent = self._fence[: len(self._fence) - len(self._fence.lstrip(" \t"))]
            out.append(indent + mark * run + "\n")  # indented as opened: closes it inside a list item too
            self._reopen = True
        return "".join(out)

    def finish(self) -> str:
        """What to put into the view when the text has ended: a dangling fence is closed for good."""
        shown = self.interrupt()
        self._start(0)
        return shown

    def _resume(self, out: list[str], text: str) -> str:
        """Goes on after `interrupt`; returns what is left of `text` to show."""
        if self._reopen and self._fence is not None:
            out.append(self._fence + "\n")
        self._reopen = False
        if self._cut and text.startswith("\n"):  # the line the view already ended, ended by the text
            self._line_ended()
            text = text[1:]
        self._cut = False
        return text

    def _put(self, out: list[str], part: str) -> None:
        """Part of one line of the text (no newline); a prose line breaks near MAX_LINE_CHARS."""
        if len(self._head) < HEAD_CHARS:
            self._head += part[: HEAD_CHARS - len(self._head)]
        self._tail += part
        while self._column + len(self._tail) > MAX_LINE_CHARS:
            room = MAX_LINE_CHARS - self._column
            # Code breaks at the limit: a break at a space could read as the code's own layout.
            kept = room if self._fence is not None else _break_after(self._tail, room)
            self.breaks.append(sum(map(len, out)) + kept)
            out.append(self._tail[:kept] + CONTINUATION)
            self._tail = self._tail[kept:]
            self._column = len(CONTINUATION) - 1
        # What cannot be where the line breaks (before the window) goes out now.
        ready = max(0, MAX_LINE_CHARS - BREAK_WINDOW - self._column)
        if ready:
            out.append(self._tail[:ready])
            self._column += len(self._tail[:ready])
            self._tail = self._tail[ready:]

    def _flush(self, out: list[str]) -> None:
        out.append(self._tail)
        self._column += len(self._tail)
        self._tail = ""

    def _end_line(self, out: list[str]) -> None:
        self._flush(out)
        out.append("\n")
        self._line_ended()

    def _line_ended(self) -> None:
        fence = _fence(self._head) if self._head[:1] in (" ", "\t", "`", "~") else None
        prose = self._fence is None and fence is None and len(self._head) < HEAD_CHARS
        self._title = self._head.strip(" \t\r") if prose else ""
        self._fence_line()
        self._line_start, self._column, self._head, self._tail = True, 0, "", ""
        self._fenced = False

    def _fence_line(self) -> None:
        """Opens or closes the fence as the text's current line does (once per line: a line the
        companion's lines cut is a whole line in the view, and goes on after them as prose)."""
        fence = _fence(self._head) if self._head[:1] in (" ", "\t", "`", "~") else None
        if fence is None or self._fenced:
            return
        self._fenced = True
        mark, run, rest = fence
        if self._fence is None and not (mark == "`" and "`" in rest):
            self._fence = self._head
        elif self._fence is not None:
            opened = _fence(self._fence)
            if opened is not None and mark == opened[0] and run >= opened[1] and not rest.strip():
                self._fence = None
