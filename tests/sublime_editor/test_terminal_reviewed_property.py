"""Issue 36's invariant for the terminal agents, as a property: after an accepted `openDiff` (Gemini
CLI's through the MCP SDK client, Claude Code's through its WebSocket client), the CLI
writes the file itself, with whatever bytes. The Changes tab since the terminal checkpoint says
"reviewed" exactly when the file holds the accepted text as bytes a write of it may store: the
UTF-8 text the CLI was sent (`ide/diffAccepted`'s content, Claude's FILE_SAVED text), or that
text encoded as the file was stored (its BOM and each untouched line's ending).

Drawn: the file's text (LF, CRLF, CR or mixed line endings, with or without a final newline, with
or without a UTF-8 BOM, UTF-8, cp1252 or UTF-16), the user's edit in the review (none, or a line typed at the end), and
what the CLI writes after the accept: nothing, the text as sent, the text as the file stores it,
other bytes, the accepted bytes with a line appended, other bytes renamed over the file. Each
example pumps the fake Sublime's UI, so they are few.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.core.files.textfile import decode, encode
from tests.line_endings import draw_lines
from tests.sublime_editor.conftest import Companion, ThreadedClient, pkg
from tests.sublime_editor.test_change_set import tab_of, wait_tab
from tests.sublime_editor.test_chat import CEILING, review_proposal, text
from tests.sublime_editor.test_claude import ThreadedClaude, claude, open_diff
from tests.sublime_fake import control

__all__ = ["claude"]  # a fixture this module uses from test_claude

BOM = b"\xef\xbb\xbf"
OTHER = b"bytes the user never saw\n"


@dataclass(frozen=True)
class Example:
    lines: list[tuple[str, str]]  # (text, line break) each
    bom: bool
    encoding: str  # how the file is stored (the BOM only with UTF-8)
    edited_line: int
    user_edit: bool
    after: str  # nothing | sent | stored | other | append | rename

    def original(self) -> bytes:
        text = "".join(t + brk for t, brk in self.lines)
        return (BOM if self.bom and self.encoding == "utf-8" else b"") + text.encode(self.encoding)

    def proposal(self) -> str:
        """What the CLI proposes: one line changed, the file's breaks kept (as Gemini CLI sends them)."""
        return "".join(("changed" if n == self.edited_line else t) + brk for n, (t, brk) in enumerate(self.lines))


@st.composite
def examples(draw: Any) -> Example:
    lines = draw_lines(draw, 4, "abc é", 4)
    count = len(lines)
    return Example(
        lines=lines,
        bom=draw(st.booleans()),
        encoding=draw(st.sampled_from(["utf-8", "utf-8", "cp1252", "utf-16"])),
        edited_line=draw(st.integers(0, count - 1)),
        user_edit=draw(st.booleans()),
        after=draw(st.sampled_from(["nothing", "sent", "stored", "other", "append", "rename"])),
    )


def cli_writes(path: str, after: str, sent: bytes, stored: bytes) -> None:
    """The CLI's own write of `path` after the accept (we never see it write)."""
    if after == "nothing":
        return
    if after == "rename":
        with open(f"{path}.tmp", "wb") as handle:
            handle.write(OTHER)
        os.replace(f"{path}.tmp", path)
        return
    data = {"sent": sent, "stored": stored, "other": OTHER, "append": stored + b"appended\n"}[after]
    with open(path, "wb") as handle:
        handle.write(data)


@pytest.mark.parametrize("cli", ["Gemini CLI", "Claude Code"])
def test_a_terminal_agents_accepted_file_is_reviewed_exactly_when_it_holds_the_accepted_bytes(
    companion: Companion,
    clients: Callable[..., ThreadedClient],
    claude: Callable[..., ThreadedClaude],
    workspace: str,
    cli: str,
) -> None:
    window = control.new_window([workspace])
    companion.load()
    gemini = clients(window) if cli == "Gemini CLI" else None
    claude_code = claude(window) if cli == "Claude Code" else None
    points = pkg("sublime_editor.terminal.checkpoints")._points
    names = itertools.count()

    @given(example=examples())
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(example: Example) -> None:
        number = next(names)
        name = f"file{number}.txt"
        path = os.path.join(workspace, name)
        with open(path, "wb") as handle:
            handle.write(example.original())
        before = points.get(window.id())
        assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
        control.pump_until(lambda: points.get(window.id()) not in (None, before), CEILING, "the checkpoint")
        answer = open_diff(claude_code, path, example.proposal()) if claude_code is not None else None
        if gemini is not None:
            gemini.open_diff(path, example.proposal())
        proposal = review_proposal(window)
        if example.user_edit:
            proposal.run_command("append", {"characters": "a line of the user's own\n"})
        control.click_link(proposal, "accept", "gemini_companion.banner")
        if claude_code is not None and answer is not None:
            saved, content = claude_code.result(answer)
            assert saved == "FILE_SAVED"
        else:
            assert gemini is not None
            control.pump_until(lambda: len(gemini.received("ide/diffAccepted")) > number, CEILING, "the accept")
            content = gemini.received("ide/diffAccepted")[number].params["content"]
        original, fmt = decode(example.original())
        sent, stored = content.encode("utf-8"), encode(content, fmt, original=original)
        cli_writes(path, example.after, sent, stored)
        with open(path, "rb") as handle:
            disk = handle.read()
        if disk == example.original():
            return  # the CLI never wrote: the file is unchanged since the checkpoint, so not listed
        assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
        tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
        wait_tab(tab, f"  {name}  ")
        rows = [line for line in text(tab).splitlines() if line.startswith("- ")]
        tab.close()  # the next example's tab is a new one
        reviewed = disk in (sent, stored)
        assert len(rows) == 1 and f"  {name}  " in rows[0], rows
        assert rows[0].endswith("  reviewed") == reviewed, (example, rows, disk, sent, stored)
        assert ("changed after your review" in rows[0]) == (not reviewed), (example, rows)

    check()
