"""Issue 36's invariant on the change-set tab's per-hunk Apply and its Revert, as a property: the
user reverts some of the changed hunks in the file's review (Revert Hunk, Ctrl+Alt+Z) and clicks
Apply; the disk then holds exactly the mix the user chose, byte for byte: the checkpoint's lines for
the reverted hunks, the changed lines for the others, every line with its own break, the BOM and
the final newline as they were. The file's Revert (in the tab) puts the checkpoint's bytes back.
Driven in the fake Sublime through a terminal checkpoint (Start Checkpoint, another program changes
the file, Review Changes Since Checkpoint).

Drawn: the file's lines (LF, CRLF, CR or mixed line endings, with or without a final newline, with
or without a UTF-8 BOM), which lines change and the break each changed line ends with then (its own
or another: the reverted line must get its checkpoint break back), which hunks the user reverts, or Revert of the whole
file. Each example pumps the UI, so they are few.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import example as hypothesis_example
from hypothesis import strategies as st

from tests.sublime_editor.conftest import Companion, pkg
from tests.sublime_editor.test_change_set import BANNER, open_review, put, read, row_link, tab_of, wait_tab
from tests.sublime_editor.test_chat import CEILING, text
from tests.sublime_fake import control

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Example:
    lines: list[tuple[str, str]]  # (text, line break) each, as in the checkpoint
    bom: bool
    changed: list[bool]  # which lines the other program changes
    new_breaks: list[str]  # the break each changed line has after the change (maybe another one)
    reverted: list[bool]  # per hunk (a run of changed lines): the user reverts it
    revert_file: bool  # instead: the user clicks the file's Revert in the tab
    bom_after: bool | None = None  # the changed file's BOM when not the checkpoint's

    def hunks(self) -> list[list[int]]:
        return [list(g) for k, g in itertools.groupby(range(len(self.lines)), lambda i: self.changed[i]) if k]

    def stored(self, version: str) -> bytes:
        """The file's bytes: `before` (the checkpoint), `after` (changed), or `chosen` (the mix)."""
        back = {i for hunk, undo in zip(self.hunks(), self.reverted, strict=False) if undo for i in hunk}
        parts = []
        for i, (line, brk) in enumerate(self.lines):
            new = self.changed[i] and (version == "after" or (version == "chosen" and i not in back))
            parts.append("NEW " + line + self.new_breaks[i] if new else line + brk)
        # Apply stores the text in the file's encoding and BOM now (the changed file's), Revert the checkpoint's.
        bom = self.bom if version == "before" or self.bom_after is None else self.bom_after
        return (BOM if bom else b"") + "".join(parts).encode("utf-8")


@st.composite
def examples(draw: Any) -> Example:
    count = draw(st.integers(1, 6))
    words = draw(st.lists(st.text(alphabet="ab é", max_size=4), min_size=count, max_size=count))
    breaks = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=count, max_size=count))
    if draw(st.booleans()):  # no final newline
        breaks[-1] = ""
    changed = draw(st.lists(st.booleans(), min_size=count, max_size=count).filter(any))
    # A changed line may end with another break (a CRLF line rewritten with LF); a last line
    # without one stays without one (the review shows the final newline as it is).
    others = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=count, max_size=count))
    new_breaks = [other if brk else "" for brk, other in zip(breaks, others, strict=True)]
    return Example(
        lines=[(f"l{i}:{w}", brk) for i, (w, brk) in enumerate(zip(words, breaks, strict=True))],
        bom=draw(st.booleans()),
        changed=changed,
        new_breaks=new_breaks,
        reverted=draw(st.lists(st.booleans(), min_size=count, max_size=count)),
        revert_file=draw(st.booleans()),
    )


def line_start(view: Any, line: int) -> int:
    content = text(view)
    offset = 0
    for _ in range(line):
        offset = content.index("\n", offset) + 1
    return offset


# Issue 36's example: the agent rewrote a CRLF line with LF; reverting the hunk must bring the CRLF back.
CRLF_LINE_REWRITTEN_WITH_LF = Example(
    lines=[("l0:", "\r\n")], bom=False, changed=[True], new_breaks=["\n"], reverted=[True], revert_file=False
)


def review_and_decide(window: Any, workspace: str, name: str, example: Example) -> None:
    """Checkpoint the file's `before`, let another program write `after`, then in the change-set
    tab revert the file or the chosen hunks and Apply; asserts the disk holds what the user chose."""
    points = pkg("sublime_editor.terminal.checkpoints")._points
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


def test_apply_after_reverting_a_crlf_line_the_agent_rewrote_with_lf_puts_its_crlf_back(
    companion: Companion, workspace: str
) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    review_and_decide(window, workspace, "crlf.txt", CRLF_LINE_REWRITTEN_WITH_LF)
    assert read(os.path.join(workspace, "crlf.txt")) == b"l0:\r\n"


def test_apply_keeps_the_files_bom_now_and_gives_a_reverted_line_its_checkpoint_break(
    companion: Companion, workspace: str
) -> None:
    """The documented rule when the checkpoint and the file now differ in BOM: Apply writes the
    file's encoding and BOM now, each reverted line with its checkpoint break."""
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    lines = [("l0:é", "\r\n"), ("l1:", "\r\n"), ("l2:", "\r\n")]
    dropped = Example(lines, True, [True, False, True], ["\n", "", "\n"], [True, False], False, bom_after=False)
    review_and_decide(window, workspace, "bom.txt", dropped)
    assert read(os.path.join(workspace, "bom.txt")) == "l0:é\r\nl1:\r\nNEW l2:\n".encode()
    added = Example(lines, False, [True, False, False], ["\r", "", ""], [True], False, bom_after=True)
    review_and_decide(window, workspace, "bom2.txt", added)
    assert read(os.path.join(workspace, "bom2.txt")) == BOM + "l0:é\r\nl1:\r\nl2:\r\n".encode()


def test_apply_after_reverting_some_hunks_writes_exactly_the_chosen_mix(companion: Companion, workspace: str) -> None:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    names = itertools.count()

    @given(example=examples())
    @hypothesis_example(example=CRLF_LINE_REWRITTEN_WITH_LF)
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(example: Example) -> None:
        review_and_decide(window, workspace, f"file{next(names)}.txt", example)

    check()
