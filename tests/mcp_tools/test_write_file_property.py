"""Issue 36's invariant on the MCP `write_file` path, as a property: what an accepted `write_file`
puts on disk is exactly the accepted proposal (after the user's own edits in the review) as
encoded for that file: an existing file's encoding, BOM and each untouched line's own ending; a
new file's bytes exactly as the agent sent them where the user did not edit them. A real MCP client
(the pinned `mcp` SDK, `tests/mcp_client.py`) drives a real window server; `ScriptedEditor` plays
the user.

Drawn: the file's text (LF, CRLF, CR or mixed line endings, with or without a final newline, with
or without a UTF-8 BOM) or no file at all, the agent's text (one line changed, the file's breaks
or all LF), and the user's edit in the review (none, a line added, the first line replaced).
`write_file` keeps no "reviewed" flag of its own (the terminal agents' change sets do, see
tests/sublime_editor/test_terminal_checkpoints_property.py), so what another writer does afterwards is not
drawn here.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.core.files.textfile import decode, encode, with_breaks_of
from companion.core.reviews import Review
from companion.runtime import WindowHandle
from tests.line_endings import draw_lines
from tests.mcp_tools.test_tools import editor, read_bytes, tool_settings, window, write_and_decide, write_bytes
from tests.scripted_editor import ScriptedEditor

__all__ = ["editor", "tool_settings", "window"]  # fixtures this module uses from test_tools

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Example:
    lines: list[tuple[str, str]]  # (text, line break) each
    bom: bool
    exists: bool
    edited_line: int
    agent_lf: bool  # the agent sends its text with LF whatever the file has
    user_edit: str  # none | add | replace

    def original(self) -> bytes:
        return (BOM if self.bom else b"") + "".join(t + brk for t, brk in self.lines).encode("utf-8")

    def sent(self) -> str:
        """The agent's `content`: the file with one line changed."""
        text = "".join(("changed" if n == self.edited_line else t) + brk for n, (t, brk) in enumerate(self.lines))
        return text.replace("\r\n", "\n").replace("\r", "\n") if self.agent_lf else text


@st.composite
def examples(draw: Any) -> Example:
    lines = draw_lines(draw, 6, "abc xyzé", 6)
    count = len(lines)
    return Example(
        lines=lines,
        bom=draw(st.booleans()),
        exists=draw(st.booleans()),
        edited_line=draw(st.integers(0, count - 1)),
        agent_lf=draw(st.booleans()),
        user_edit=draw(st.sampled_from(["none", "add", "replace"])),
    )


def users_text(proposal: str, edit: str) -> str:
    """The text the user accepts: the proposal (every break "\n", as the editor holds it) edited."""
    if edit == "add":
        return proposal + "a line of the user's own\n"
    if edit == "replace":
        return "the user's first line" + proposal[proposal.index("\n") :] if "\n" in proposal else "the user's"
    return proposal


def test_write_file_puts_exactly_the_accepted_bytes_on_disk(window: WindowHandle, editor: ScriptedEditor) -> None:
    names = itertools.count()

    @given(example=examples())
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(example: Example) -> None:
        number = next(names)
        name = f"file{number}.txt"
        path = os.path.join(window.folders[0], name)
        if example.exists:
            write_bytes(path, example.original())
        accepted: list[str] = []

        def decide(review: Review) -> None:
            accepted.append(users_text(review.proposal, example.user_edit))
            review.accept(accepted[0])

        sent = example.sent()
        result = anyio.run(
            lambda: write_and_decide(window, editor, {"path": name, "content": sent}, decide, review_number=number + 1)
        )
        assert not result.is_error, result
        disk = read_bytes(path)
        final = accepted[0]
        if example.exists:
            text, fmt = decode(example.original())
            expected = encode(final, fmt, name, original=text)  # the file's encoding, BOM and endings
        elif example.user_edit == "none":
            expected = sent.encode("utf-8")  # a new file: exactly the agent's bytes
        else:
            expected = with_breaks_of(sent, final).encode("utf-8")
        assert disk == expected, (example, disk, expected)
        # Whatever the bytes, they read back as the text the user accepted.
        assert decode(disk)[0].replace("\r\n", "\n").replace("\r", "\n") == final

    check()
