"""What a write changes besides the lines a diff shows (issue #36): the line endings, the final
newline, the encoding and the byte-order mark. A review prints these as lines above its diff
("line endings: CRLF → LF", "no newline at end of file", "BOM removed"), headless and in Sublime.

Pure: the caller passes the file's text and format as read, and the text and format the write
will store (`as_written` gives them for our own write paths, which keep each untouched line's
ending). Keeping a file's endings compares the texts line by line: call it off the main thread.
"""

from __future__ import annotations

import re

from .files.disk_text import DiskText
from .files.textfile import NEW_FILE, TextFormat, dominant_newline, keep_line_endings, with_breaks_of

_BREAK = re.compile(r"\r\n|\r|\n")
_NAMES = {"\r\n": "CRLF", "\n": "LF", "\r": "CR"}


def review_notes(disk: DiskText | None, proposal: str) -> list[str]:
    """The notes of a review of `proposal` against the file as read (`disk`; None: not read), as
    our write stores it. Nothing when the file's text is not shown (the review says why instead)."""
    if disk is None or disk.not_shown is not None:
        return []
    old = disk.text if disk.exists else None
    return write_notes(old, disk.format, *as_written(old, disk.format, proposal))


def as_written(old: str | None, fmt: TextFormat | None, proposal: str) -> tuple[str, TextFormat]:
    """The text and format our write of `proposal` stores (textfile.encode with the file's `old`
    text; a new file: the breaks the proposal itself has)."""
    if old is None:
        return with_breaks_of(proposal, proposal), NEW_FILE
    if fmt is None:  # read from a buffer: its encoding is not known, its breaks are
        fmt = TextFormat(NEW_FILE.encoding, b"", dominant_newline(old))
    if fmt.newline is None:
        return proposal, fmt
    return keep_line_endings(old, proposal, fmt.newline), fmt


def write_notes(old: str | None, old_format: TextFormat | None, new: str, new_format: TextFormat) -> list[str]:
    """One line for each way the stored file changes beyond its lines ([] when none). `old` is None
    for a file that does not exist yet; `new` is the text exactly as it will be stored."""
    notes: list[str] = []
    before, after = _breaks(old or ""), _breaks(new)
    if before and after and before != after:
        notes.append(f"line endings: {before} → {after}")
    elif not before and after not in ("", "LF"):
        notes.append(f"line endings: {after}")
    ends_before = old is not None and old != "" and _ends_with_break(old)
    if new and not _ends_with_break(new) and (old is None or old == "" or ends_before):
        notes.append("no newline at end of file")
    elif new and _ends_with_break(new) and old and not ends_before:
        notes.append("newline added at end of file")
    if old_format is not None and old is not None:
        if old_format.encoding != new_format.encoding:
            notes.append(f"encoding: {old_format.encoding} → {new_format.encoding}")
        if old_format.bom and not new_format.bom:
            notes.append("BOM removed")
        elif new_format.bom and not old_format.bom:
            notes.append("BOM added")
    return notes


def _breaks(text: str) -> str:
    """The kind of line break `text` uses: "CRLF", "LF", "CR", "mixed (…)" or "" when none."""
    kinds = sorted(_NAMES[m] for m in set(_BREAK.findall(text)))
    if len(kinds) > 1:
        return f"mixed ({', '.join(kinds)})"
    return kinds[0] if kinds else ""


def _ends_with_break(text: str) -> bool:
    return text.endswith(("\n", "\r"))
