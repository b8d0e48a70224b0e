"""Text files on disk: telling text from binary, the encoding and the line endings, and back.

Encodings recognised: UTF-8 (with or without a BOM), UTF-16 LE/BE and UTF-32 LE/BE with a BOM, and
as a last resort Latin-1 for 8-bit text that is not UTF-8. Binary: a NUL byte (in a file without a
UTF-16/32 BOM) or a high share of control characters in the first 8 KB.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from . import line_diff
from .paths import WorkspaceError

_SNIFF = 8192
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SPLIT = re.compile(r"(\r\n|\r|\n)")
# Each break as one character, to find a mixed file's odd breaks with str.find (_other_breaks).
_ONE_CHAR = {"\r\n": "\0", "\r": "\r", "\n": "\n"}
_BREAK_OF = {char: brk for brk, char in _ONE_CHAR.items()}
# What str.splitlines ends a line at besides "\r\n", "\r" and "\n".
_OTHER_LINE_ENDS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"


class BinaryFile(WorkspaceError):
    pass


@dataclass(frozen=True)
class TextFormat:
    encoding: str  # a Python codec name without BOM handling
    bom: bytes  # written back in front of the text
    newline: str | None  # the file's line ending ("\r\n", "\n", "\r"), None when it has no line break

    @property
    def description(self) -> str:
        names = {"\r\n": "CRLF", "\n": "LF", "\r": "CR"}
        newline = names.get(self.newline or "", "no")
        bom = " with BOM" if self.bom else ""
        return f"{self.encoding}{bom}, {newline} line endings"


def decode(data: bytes, name: str = "the file") -> tuple[str, TextFormat]:
    """The text of `data` and how it was stored; raises BinaryFile when it is not text."""
    text, encoding, bom = _text(data, name)
    return text, TextFormat(encoding, bom, dominant_newline(text))


def text_of(data: bytes, name: str = "the file") -> str:
    """`decode`'s text alone (no count of its line endings); raises BinaryFile when it is not text."""
    return _text(data, name)[0]


def _text(data: bytes, name: str) -> tuple[str, str, bytes]:
    """(text, encoding, BOM) of `data`; BinaryFile when it is not text."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError:
                raise BinaryFile(
                    f"{name} starts with a {encoding} byte-order mark but is not valid {encoding}."
                ) from None
            return text, encoding, bom
    head = data[:_SNIFF]
    if b"\x00" in head or len(_CONTROL.findall(head)) > max(8, len(head) // 10):
        raise BinaryFile(f"{name} is a binary file; read_file only returns text.")
    # Not UTF-8: an 8-bit file. Windows-1252 first, as Sublime Text's default fallback_encoding
    # (so "€" reads as "€", not as a control character); Latin-1 when a byte has no Windows-1252
    # meaning. Both decode byte for byte, so writing back keeps every untouched byte as it was.
    for encoding in ("utf-8", "cp1252"):
        text = _decoded(data, encoding)
        if text is not None:
            return text, encoding, b""
    return data.decode("latin-1"), "latin-1", b""  # every byte is a Latin-1 character


def _decoded(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def dominant_newline(text: str) -> str | None:
    head = text[: 1 << 20]
    crlf = head.count("\r\n")  # counted in C: no Python step per line
    counts = {"\r\n": crlf, "\n": head.count("\n") - crlf, "\r": head.count("\r") - crlf}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] else None


def to_newline(text: str, newline: str) -> str:
    """Every line break of `text` as `newline`."""
    lf = text.replace("\r\n", "\n").replace("\r", "\n")  # str.replace: C speed, same as one regex pass
    return lf if newline == "\n" else lf.replace("\n", newline)


def same_text(a: str, b: str) -> bool:
    """The same text, whatever its line breaks (an editor holds "\n", a file may hold CRLF)."""
    return a == b or to_newline(a, "\n") == to_newline(b, "\n")


def keep_line_endings(original: str, text: str, newline: str) -> str:
    """`text` with every line that `original` has too, at the same place in the sequence, ending as
    it ended there (a line edited in place as well); added lines end with `newline`.

    Any line break in `text` ends a line ("\r\n", "\r" or "\n": an agent may send the raw text
    it read, CRLF included), and the break it ends with is replaced, never added to. So untouched
    lines come back byte for byte: mixed endings stay mixed, and a lone CR that the editor showed
    as a line break stays a lone CR."""
    if _only_breaks(original, newline):
        return to_newline(text, newline)  # every line ends with `newline`, kept or added: no diff needed
    others = _other_breaks(original, newline)
    if others is None:  # not one of the three breaks: each line's break, line by line
        old_lines, old_breaks = _lines_and_breaks(original, newline)  # a last line without a break: `newline`
        others = {n: brk for n, brk in enumerate(old_breaks) if brk != newline}
    else:
        old_lines = _lines_in_c(original)
    if "\r" in text:
        new_lines, new_breaks = _lines_and_breaks(text, "")
    else:  # the usual text (an editor's): split in C, no per-line work
        new_lines = text.split("\n")
        new_breaks = ["\n"] * len(new_lines)
        if new_lines[-1]:
            new_breaks[-1] = ""
        else:
            new_lines.pop()
            new_breaks.pop()
    endings = [newline] * len(new_lines)
    kept = [  # lines kept at i1..i2, at j - i1 in `text`: a line edited in place keeps its ending too
        (i1, i1 + min(i2 - i1, j2 - j1), j1 - i1)
        for tag, i1, i2, j1, j2 in line_diff.opcodes(old_lines, new_lines)
        if tag in ("equal", "replace")
    ]
    _keep_other_breaks(others, kept, endings)
    if new_breaks and not new_breaks[-1]:
        endings[-1] = ""  # a last line without a break keeps none
    if "\r" in endings:  # only then can a kept lone CR merge with the next line's LF
        _never_merge(list(zip(new_lines, new_breaks, strict=True)), endings, newline)
    joined = [""] * (2 * len(new_lines))
    joined[0::2], joined[1::2] = new_lines, endings
    return "".join(joined)


def _lines_in_c(text: str) -> list[str]:
    """`lines(text)` in one pass: str.splitlines, which also ends a line at a form feed and a few
    other characters, so only when `text` has none of them (each looked for in C)."""
    if any(char in text for char in _OTHER_LINE_ENDS):
        return lines(text)
    return text.splitlines()


def _other_breaks(text: str, newline: str) -> dict[int, str] | None:
    """The lines of `text` whose break is not `newline`, and their break; None when that cannot be
    told this way (`newline` none of the three breaks, or a NUL in the text). Found with str.find
    and counted with str.count (C): a file with a few odd endings costs no step per line."""
    if newline not in _ONE_CHAR or "\0" in text:
        return None
    chars = text.replace("\r\n", "\0")  # now every break is one character: NUL (CRLF), CR or LF
    ours = _ONE_CHAR[newline]
    end = len(chars)
    odd = {char: -1 for char in _ONE_CHAR.values() if char != ours}  # each one's next position (end: none)
    found: dict[int, str] = {}
    line = at = 0
    while True:
        for char, position in odd.items():
            if position < at:
                position = chars.find(char, at)
                odd[char] = end if position < 0 else position
        here = min(odd.values())
        if here == end:
            return found
        line += chars.count(ours, at, here)  # every break between two odd ones is `newline`
        found[line] = _BREAK_OF[chars[here]]
        line += 1
        at = here + 1


def _keep_other_breaks(others: dict[int, str], kept: list[tuple[int, int, int]], endings: list[str]) -> None:
    """Each odd break of an old line that `text` keeps (in `kept`: old lines i1..i2, moved by
    `shift` lines) on that line in `endings`; the other kept lines end with `newline` already."""
    ranges = iter(kept)
    current = next(ranges, None)
    for line, brk in others.items():  # in the order of the lines
        while current is not None and current[1] <= line:
            current = next(ranges, None)
        if current is None:
            return
        if current[0] <= line:
            endings[line + current[2]] = brk


def _lines_and_breaks(text: str, last: str) -> tuple[list[str], list[str]]:
    """The lines of `text` and the break each ends with (`last` for a last line without one)."""
    parts = _SPLIT.split(text)  # line, break, line, break, ..., the text after the last break
    lines, breaks = parts[0::2], parts[1::2]
    if lines[-1]:
        breaks.append(last)
    else:
        lines.pop()
    return lines, breaks


def _only_breaks(text: str, newline: str) -> bool:
    """Every line break of `text` is `newline` (counted in C: no line is looked at)."""
    if newline == "\n":
        return "\r" not in text
    if newline == "\r":
        return "\n" not in text
    return text.count("\r") == text.count("\n") == text.count("\r\n")


def with_breaks_of(sent: str, text: str) -> str:
    """`text` (an editor's, every break "\n") with the line breaks of `sent`, the agent's own text:
    `sent` itself when `text` has its lines, else each line kept from it ends as it ended there and
    an added line with `sent`'s dominant break. What is written for a file that has no endings of
    its own yet (a new file): exactly what the agent sent, where the user did not change it."""
    if "\r" not in sent:
        return text
    if text == to_newline(sent, "\n"):
        return sent
    return keep_line_endings(sent, text, dominant_newline(sent) or "\n")


def with_breaks_of_sources(final: str, kept: str, reverted: str, newline: str) -> str:
    """`final` (the review's text, every break "\n") with each line's own break: a line of `kept`
    (the file now) ends as it ends there, else a line of `reverted` (the checkpoint, put back by a
    hunk revert) as it ended there, else (a line the user typed) with `newline`. Per-hunk Apply
    writes this, so a reverted line gets its checkpoint bytes back and a kept line stays the
    agent's, byte for byte (issue #36). Linear: line_diff, never difflib."""
    lines, breaks = _lines_and_breaks(final, "")
    endings: list[str | None] = [None] * len(lines)
    for source in (kept, reverted):
        _take_breaks(source, lines, endings)
    found = [newline if e is None else e for e in endings]
    for n in range(len(found) - 1):
        found[n] = found[n] or newline  # a source's last line without a break is no longer last here
    if found:
        found[-1] = found[-1] or newline if breaks[-1] else ""  # the review decides the final newline
    if "\r" in found:
        _never_merge(list(zip(lines, breaks, strict=True)), found, newline)
    joined = [""] * (2 * len(lines))
    joined[0::2], joined[1::2] = lines, found
    return "".join(joined)


def _take_breaks(source: str, lines: list[str], endings: list[str | None]) -> None:
    """Give each line of `lines` still without an ending the break of the `source` line it matches."""
    old_lines, old_breaks = _lines_and_breaks(source, "")
    for tag, i1, i2, j1, _j2 in line_diff.opcodes(old_lines, lines):
        if tag == "equal":
            for k in range(i2 - i1):
                if endings[j1 + k] is None:
                    endings[j1 + k] = old_breaks[i1 + k]


def _never_merge(lines: list[tuple[str, str]], endings: list[str], newline: str) -> None:
    """A lone CR kept on a line followed by an empty line ending in LF would read back as one CRLF:
    a line lost. That line ends with the file's newline instead (or, in a CR file, the next one in CR)."""
    merges = range(len(lines) - 1)
    # In the order that settles a chain of them: a CR file passes the CR on, others take it back.
    for n in merges if newline == "\r" else reversed(merges):
        if endings[n] == "\r" and not lines[n + 1][0] and endings[n + 1].startswith("\n"):
            if newline == "\r":
                endings[n + 1] = "\r"
            else:
                endings[n] = newline


def lines(text: str) -> list[str]:
    """The lines of `text` without their breaks, as the review shows them: "\r\n", "\r" and "\n"
    end a line, nothing else does (not a form feed, unlike str.splitlines)."""
    found = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return found[:-1] if found[-1] == "" else found  # the break at the end starts no line


def _split_lines(text: str) -> list[tuple[str, str]]:
    """(line, its break) for every line of `text`; the break is "" for a last line without one."""
    parts = _SPLIT.split(text)  # line, break, line, break, ..., the text after the last break
    lines = list(zip(parts[0::2], parts[1::2], strict=False))
    if parts[-1]:
        lines.append((parts[-1], ""))
    return lines


def encode(text: str, fmt: TextFormat, name: str = "the file", original: str | None = None) -> bytes:
    """`text` stored like the file was: same encoding, BOM and line endings. Given the file's
    `original` text, each untouched line keeps its own ending (see keep_line_endings)."""
    if fmt.newline is not None:
        text = keep_line_endings(original, text, fmt.newline) if original is not None else to_newline(text, fmt.newline)
    try:
        return fmt.bom + text.encode(fmt.encoding)
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start : exc.end]
        raise WorkspaceError(
            f"The new text of {name} cannot be stored in its encoding ({fmt.encoding}): "
            f"{char!r} has no {fmt.encoding} form. Nothing was written."
        ) from None


NEW_FILE = TextFormat("utf-8", b"", None)
