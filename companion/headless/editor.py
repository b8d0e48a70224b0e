"""A headless editor: the same server outside Sublime, for demos, tests and the stdio bridge.

Diff policy: `accept` and `reject` decide every review at once (as the user would, without
edits); `prompt` prints a unified diff and asks on the terminal. Outcomes never depend on the
proposed content: a model writes that content, so it must not be able to decide its own review.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from ..core.files import line_diff
from .console import Console, Withdrawn

if TYPE_CHECKING:  # `serve` imports this module before its discovery file is out: nothing heavy at the top
    from ..core.files.disk_text import DiskText
    from ..core.reviews import Review

POLICIES = ("prompt", "accept", "reject")


class HeadlessEditor:
    """The Editor port without a UI.

    In `prompt` mode one thread asks about one review at a time, in the order they arrived;
    `closeDiff` drops a review still waiting its turn. Only open reviews are kept (`shown`)."""

    def __init__(
        self,
        policy: str = "prompt",
        out: TextIO | None = None,
        ask: Callable[[str], str] | None = None,
        console: Console | None = None,
        announce: bool = False,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown diff policy {policy!r}; use one of {', '.join(POLICIES)}")
        self.policy = policy
        self.announce = announce  # `serve`: one line per decision the policy takes (the chat says its own)
        # The terminal, shared with whatever else prints there (the chat): questions stay last.
        self.console = console or Console(out or sys.stdout, ask or input)
        self.shown: list[Review] = []  # open reviews, oldest first: the one being asked about, then the queue
        self._changed = threading.Lock()  # guards `shown`
        self._prompter: threading.Thread | None = None
        self._asking: tuple[Review, threading.Event] | None = None  # the review asked about, its question's identity
        # Who closes a review still asked about: the MCP client (serve), the agent (chat); the chat
        # says "you cancelled the turn" while it cancels one on your Ctrl-C.
        self.closed_by = "the client closed it"

    @property
    def prompting(self) -> bool:
        """A prompt may be waiting on the terminal (its thread is blocked reading stdin)."""
        return self._prompter is not None

    async def show_review(self, review: Review) -> None:
        if self.policy in ("accept", "reject"):
            if self.policy == "accept":
                review.accept(review.proposal)
            else:
                review.reject()
            if self.announce:
                done = "accepted" if self.policy == "accept" else "rejected"
                self.console.say(f"{done} the change to {visible(review.file_path)} (--diff-policy {self.policy})\n")
        else:
            with self._changed:
                if review not in self.shown:  # a newer proposal for a queued review keeps its place
                    self.shown.append(review)
                if self._prompter is None:
                    # input() blocks: one plain thread asks, so the loop keeps serving meanwhile.
                    self._prompter = threading.Thread(target=self._prompt_loop, name="companion-prompt", daemon=True)
                    self._prompter.start()
        import asyncio

        await asyncio.sleep(0)

    async def close_review(self, review: Review) -> str:
        with self._changed:
            asking = self._asking if self._asking is not None and self._asking[0] is review else None
            if review in self.shown:
                self.shown.remove(review)
        if asking is not None:  # its question is on the terminal, or about to be: it needs no answer
            asking[1].set()
            closed = f"\nNo answer is needed for {visible(review.file_path)}: {self.closed_by}.\n"
            self.console.withdraw(closed, asking[1])
        return review.proposal

    async def unsaved_text(self, path: str) -> str | None:
        return None  # no buffers: the disk is the truth

    async def write_through_buffer(self, path: str, text: str) -> bool | str:
        return False

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        # Nothing was typed here (accept or reject only): the client still holds the same text.
        self.console.say(f"\nThe accepted change to {visible(path)} could not be written: {visible(reason)}\n")
        return False

    async def open_file(self, path: str, start_text: str, end_text: str) -> bool:
        return False  # no window to show a file in

    async def is_dirty(self, path: str) -> bool | None:
        return None  # no buffers

    async def save_file(self, path: str) -> bool | None:
        return None

    async def diagnostics(self, path: str | None) -> dict[str, list[dict[str, Any]]]:
        return {}  # no language servers or builds here: nothing is invented

    def _prompt_loop(self) -> None:
        while True:
            with self._changed:
                if not self.shown:  # nothing left to ask: no idle thread stays; the next review starts one
                    self._prompter = None
                    return
                review = self.shown[0]
            if review.is_open:
                self._prompt(review)
            with self._changed:
                if self.shown and self.shown[0] is review:
                    self.shown.pop(0)

    def _prompt(self, review: Review) -> None:
        """Ask until the user answers about the proposal on screen; a newer proposal that arrived
        meanwhile is shown and asked about again, so nobody approves text they did not see."""
        revision, diff, question = 0, "", _question(review)
        while review.is_open:
            if revision != review.revision:
                revision = review.revision
                diff = unified_diff(review.file_path, review.proposal, review.disk)
            token = threading.Event()  # this question's identity: another review's may read alike
            with self._changed:
                self._asking = (review, token)
            try:  # the diff is shown again when something was printed under it meanwhile
                answer = self.console.ask(diff, question, token, True).strip()
            except Withdrawn:
                continue  # closed meanwhile: close_review said so
            except EOFError:
                if review.is_open:  # never a silent reject
                    path = visible(review.file_path)
                    self.console.say(f"\nNo answer (input ended): the change to {path} is rejected.\n")
                answer = "n"
            if not review.is_open or revision != review.revision:
                continue
            word, _, reason = answer.partition(" ")
            if answer.lower() in ("y", "yes"):
                review.accept(review.proposal)
                return
            if word.lower() in ("n", "no"):  # `n REASON`: rejected, and the agent hears why
                review.reject(reason)
                return


def _question(review: Review) -> str:
    if review.delete:
        return f"Delete {visible(review.file_path)}{visible(what_else(review))}? [y]es / [n]o: "
    return f"Apply this change to {visible(review.file_path)}{visible(what_else(review))}? [y]es / [n]o: "


def what_else(review: Review) -> str:
    """What the file's review is part of, in parentheses: a rename, one file of several (the edit
    is allowed only when every file is accepted); "" for a plain one-file review."""
    notes = [f"rename {review.renamed_from} → {review.file_path}"] if review.renamed_from else []
    if review.renamed_from and review.replaces:
        notes[0] += f", replacing {review.file_path}: its current text is lost"
    if review.part is not None:
        notes.append(f"file {review.part[0]} of {review.part[1]} of one edit: all must be accepted")
    return f" ({'; '.join(notes)})" if notes else ""


def unified_diff(file_path: str, proposal: str, disk: DiskText | None = None) -> str:
    """The proposal against the file on disk (empty when the file is new) as a unified diff, with
    every control character shown as an escape: a proposal must not drive the terminal."""
    from ..core.files import disk_text
    from ..core.write_notes import review_notes

    disk = disk if disk is not None else disk_text.read(file_path)
    label = file_path if disk.exists else f"{file_path} (new file)"
    if disk.not_shown is not None:
        label = f"{file_path} (current text not shown: {disk.not_shown})"
    lines = line_diff.unified_diff(
        disk.text.splitlines(keepends=True),
        proposal.splitlines(keepends=True),
        fromfile=label,
        tofile=f"{os.path.basename(file_path)} (proposed)",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    notes = "".join(f"{note}\n" for note in review_notes(disk, proposal))
    if not text and notes:
        text = f"(no line of {file_path} changes)\n"
    links = disk_text.other_links_note(disk.other_links)
    return visible(notes + (text or f"(no changes to {file_path})\n") + (f"{links}\n" if links else ""))


# C0 and C1 controls except tab and line feed, DEL, and the bidirectional overrides and isolates
# (they reorder what the terminal shows, so a line could read differently from what it does).
# A carriage return is kept only as part of a CRLF line break.
_HIDDEN = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every character that could clear, recolour, hide or reorder terminal output
    (escape sequences, carriage returns, bidi controls) written as a visible escape like `\\x1b`."""
    return _HIDDEN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def one_line(text: str) -> str:
    """`text` for one line of a terminal: controls shown as escapes (`visible`), line breaks too."""
    return visible(text.replace("\r\n", "\n")).replace("\n", "\\n")
