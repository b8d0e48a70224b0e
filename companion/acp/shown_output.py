"""What a view shows of a tool call's output (a command's, a terminal's): its last SHOWN_CHARS
characters, without terminal escapes (colours, cursor moves, titles) and control characters, which
a view would show as garbage or, in a terminal, obey. Plain text: each view escapes it for its
own markup (the Sublime card: html.escape). No SDK import here."""

from __future__ import annotations

import re

SHOWN_CHARS = 4000  # what a card shows of a call's output, from its end
# CSI (`\x1b[31m`), OSC (`\x1b]0;title\x07`), other two-character escapes, then the C0/C1 controls
# but tab and line feed: a carriage return (progress bars) is dropped too.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def plain(text: str) -> str:
    """`text` without terminal escapes and control characters (tab and line feed kept)."""
    return _ESCAPES.sub("", text)


def tail(output: str, chars: int = SHOWN_CHARS) -> str:
    """The last `chars` characters of `output` as shown: escapes removed first (a cut inside one
    would leave its visible half), from a slice a little longer, so a flood of escapes costs no
    more than the slice."""
    return plain(output[-4 * chars :])[-chars:]


def line_count(output: str) -> int:
    """The lines of `output` ("output (N lines)"); a last line without a line break counts."""
    if not output:
        return 0
    return output.count("\n") + (0 if output.endswith("\n") else 1)
