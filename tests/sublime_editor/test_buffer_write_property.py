"""Issue 36's invariant on the buffer write-through, as a property: an ACP agent's accepted
`fs/write_text_file` into a file open in Sublime is saved from its buffer (one line ending
throughout, the file's encoding and BOM: `buffer_saves`); the Changes tab at the turn's end says
"reviewed" exactly when the disk still holds those bytes. One chat with `tests/acp/edit_agent.py`
(the SDK's agent side, its script rewritten for each example) in the fake Sublime.

Drawn: the file's text (LF, CRLF, CR or mixed line endings, with or without a final newline, with
or without a UTF-8 BOM), the edited line, the user's line typed into the review (or none), and what
the agent does after our write: nothing, its bytes again, other bytes, append, rename other bytes
over the file. Each example pumps the UI and runs a turn, so they are few.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.core.files.textfile import decode
from tests.line_endings import draw_lines
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_change_set import BANNER, put, read, tab_of, wait_tab
from tests.sublime_editor.test_chat import CEILING, review_proposal, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import control

BOM = b"\xef\xbb\xbf"
OTHER = "bytes the user never saw\n"


@dataclass(frozen=True)
class Example:
    lines: list[tuple[str, str]]  # (text, line break) each
    bom: bool
    edited_line: int
    user_edit: bool
    after: str  # nothing | same | other | append | rename

    def original(self) -> bytes:
        return (BOM if self.bom else b"") + "".join(t + brk for t, brk in self.lines).encode("utf-8")


@st.composite
def examples(draw: Any) -> Example:
    lines = draw_lines(draw, 4, "ab é", 4)
    count = len(lines)
    return Example(
        lines=lines,
        bom=draw(st.booleans()),
        edited_line=draw(st.integers(0, count - 1)),
        user_edit=draw(st.booleans()),
        after=draw(st.sampled_from(["nothing", "same", "other", "append", "rename"])),
    )


def steps(example: Example, path: str) -> list[dict[str, Any]]:
    old = example.lines[example.edited_line][0]
    edit = {"toolCallId": "t1", "kind": "edit", "content": [{"diff_of_read": [old, "changed"], "path": path}]}
    done: list[dict[str, Any]] = [
        {"read": path},
        {"ask": edit},
        {"write": path, "content": {"read_with": [old, "changed"]}},
    ]
    after = {
        "nothing": [],
        "same": [{"own": path, "from": path}],  # the bytes on disk now (ours) again
        "other": [{"own": path, "bytes": OTHER}],
        "append": [{"own": path, "bytes": "appended\n", "how": "append"}],
        "rename": [{"own": path, "bytes": OTHER, "how": "rename"}],
    }[example.after]
    return done + after


def test_a_write_through_the_open_buffer_is_reviewed_exactly_while_the_disk_holds_its_bytes(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    script = os.path.join(str(tmp_path), "script.json")
    with open(script, "w", encoding="utf-8") as handle:
        json.dump([], handle)
    agent = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "edit_agent.py")
    window = setup(companion, workspace, [{"name": "Edits", "command": sys.executable, "args": [agent, script]}])
    chat = start_chat(companion, window, "Edits")
    names = itertools.count()

    @given(example=examples())
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(example: Example) -> None:
        name = f"open{next(names)}.txt"
        path = os.path.join(workspace, name)
        put(path, example.original())
        opened = control.open_file(window, path)
        with open(script, "w", encoding="utf-8") as handle:
            json.dump(steps(example, path), handle)
        send(chat, "edit")
        proposal = review_proposal(window)
        if example.user_edit:
            proposal.run_command("append", {"characters": "a line of the user's own\n"})
        final = text(proposal)
        control.click_link(proposal, "accept", BANNER)
        wait_turn(chat)
        tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
        wait_tab(tab, f"  {name}  ")
        rows = [line for line in text(tab).splitlines() if line.startswith("- ") and f"  {name}  " in line]
        tab.close()
        opened.close()
        disk = read(path)
        if example.after == "nothing":  # the editor's save: the accepted text, one break throughout
            assert decode(disk)[0].replace("\r\n", "\n").replace("\r", "\n") == final, (example, disk)
        reviewed = example.after in ("nothing", "same")  # any other write leaves other bytes
        assert len(rows) == 1, rows
        assert rows[0].endswith("  reviewed") == reviewed, (example, rows, disk)

    check()
