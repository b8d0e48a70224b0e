"""Issue 36's invariant on the change-set tab's per-hunk Apply and its Revert, as a property: the
user reverts some of the changed hunks in the file's review (Revert Hunk, Ctrl+Alt+Z) and clicks
Apply; the disk then holds exactly the mix the user chose, byte for byte: the checkpoint's lines for
the reverted hunks, the changed lines for the others, every line with its own break, the BOM and
the final newline as they were. The file's Revert (in the tab) puts the checkpoint's bytes back.
Driven in the fake Sublime through a terminal checkpoint (Start Checkpoint, another program changes
the file, Review Changes Since Checkpoint).

Drawn: the file's lines (LF, CRLF, CR or mixed line endings, with or without a final newline, with
or without a UTF-8 BOM), which lines change, which hunks the user reverts, or Revert of the whole
file. Each example pumps the UI, so they are few.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adapter.conftest import Companion, pkg
from tests.adapter.test_change_set import BANNER, open_review, put, read, row_link, tab_of, wait_tab
from tests.adapter.test_chat import CEILING, text
from tests.sublime_fake import control

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Example:
    lines: list[tuple[str, str]]  # (text, line break) each, as in the checkpoint
    bom: bool
    changed: list[bool]  # which lines the other program changes (its breaks kept)
    reverted: list[bool]  # per hunk (a run of changed lines): the user reverts it
    revert_file: bool  # instead: the user clicks the file's Revert in the tab

    def hunks(self) -> list[list[int]]:
        return [list(g) for k, g in itertools.groupby(range(len(self.lines)), lambda i: self.changed[i]) if k]

    def stored(self, version: str) -> bytes:
        """The file's bytes: `before` (the checkpoint), `after` (changed), or `chosen` (the mix)."""
        back = {i for hunk, undo in zip(self.hunks(), self.reverted, strict=False) if undo for i in hunk}
        parts = []
        for i, (line, brk) in enumerate(self.lines):
            new = self.changed[i] and (version == "after" or (version == "chosen" and i not in back))
            parts.append(("NEW " + line if new else line) + brk)
        return (BOM if self.bom else b"") + "".join(parts).encode("utf-8")


@st.composite
def examples(draw: Any) -> Example:
    count = draw(st.integers(1, 6))
    words = draw(st.lists(st.text(alphabet="ab é", max_size=4), min_size=count, max_size=count))
    breaks = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=count, max_size=count))
    if draw(st.booleans()):  # no final newline
        breaks[-1] = ""
    changed = draw(st.lists(st.booleans(), min_size=count, max_size=count).filter(any))
    return Example(
        lines=[(f"l{i}:{w}", brk) for i, (w, brk) in enumerate(zip(words, breaks, strict=True))],
        bom=draw(st.booleans()),
        changed=changed,
        reverted=draw(st.lists(st.booleans(), min_size=count, max_size=count)),
        revert_file=draw(st.booleans()),
    )


def line_start(view: Any, line: int) -> int:
    content = text(view)
    offset = 0
    for _ in range(line):
        offset = content.index("\n", offset) + 1
    return offset


def test_apply_after_reverting_some_hunks_writes_exactly_the_chosen_mix(companion: Companion, workspace: str) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    points = pkg("sublime_editor.terminal_checkpoints")._points
    names = itertools.count()

    @given(example=examples())
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(example: Example) -> None:
        name = f"file{next(names)}.txt"
        path = os.path.join(workspace, name)
        put(path, example.stored("before"))
        before = points.get(window.id())
        assert control.run_from_palette(window, "gemini_companion_start_checkpoint")
        control.pump_until(lambda: points.get(window.id()) not in (None, before), CEILING, "the checkpoint")
        put(path, example.stored("after"))  # another program (a terminal agent) changes it
        assert control.run_from_palette(window, "gemini_companion_review_checkpoint_changes")
        tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
        wait_tab(tab, f"  {name}  ")
        if example.revert_file:
            control.click_link(tab, row_link(tab, "revert", name), "gemini_companion.change_set.rows")
            wait_tab(tab, "Reverted 1 file")
            tab.close()
            assert read(path) == example.stored("before"), (example, read(path))
            return
        proposal = open_review(window, tab, name)
        for hunk, undo in zip(example.hunks(), example.reverted, strict=False):
            if undo:
                control.select(proposal, line_start(proposal, hunk[0]))
                assert control.press_keys(proposal, "ctrl+alt+z") == "revert_modification"
        control.click_link(proposal, "apply", BANNER)
        wait_tab(tab, "applied")
        tab.close()
        assert read(path) == example.stored("chosen"), (example, read(path))

    check()
