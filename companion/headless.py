"""A headless editor: the same server outside Sublime, for demos, tests and the stdio bridge.

Diff policy: `accept` and `reject` decide every review at once (as the user would, without
edits); `prompt` prints a unified diff and asks on the terminal. Outcomes never depend on the
proposed content: a model writes that content, so it must not be able to decide its own review.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from .diffs import Review

POLICIES = ("prompt", "accept", "reject")


class HeadlessEditor:
    """The Editor port without a UI."""

    def __init__(
        self,
        policy: str = "prompt",
        out: TextIO | None = None,
        ask: Callable[[str], str] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown diff policy {policy!r}; use one of {', '.join(POLICIES)}")
        self.policy = policy
        self.out = out or sys.stdout
        self.ask = ask or input
        self.shown: list[Review] = []
        self.closed: list[Review] = []
        self._prompt_lock = threading.Lock()

    async def show_review(self, review: Review) -> None:
        self.shown.append(review)
        if self.policy == "accept":
            review.accept(review.proposal)
        elif self.policy == "reject":
            review.reject()
        else:
            # input() blocks: ask on a plain thread so the loop keeps serving meanwhile.
            threading.Thread(target=self._prompt, args=(review,), name="companion-prompt", daemon=True).start()
        await asyncio.sleep(0)

    async def close_review(self, review: Review) -> str:
        self.closed.append(review)
        if self.policy == "prompt":
            self._say(f"\nThe client closed the review of {review.file_path}; no answer is needed.\n")
        return review.proposal

    async def unsaved_text(self, path: str) -> str | None:
        return None  # no buffers: the disk is the truth

    async def write_through_buffer(self, path: str, text: str) -> bool:
        return False

    async def keep_unwritten(self, path: str, text: str, reason: str) -> bool:
        # Nothing was typed here (accept or reject only): the client still holds the same text.
        self._say(f"\nThe accepted change to {path} could not be written: {reason}\n")
        return False

    def _prompt(self, review: Review) -> None:
        with self._prompt_lock:
            if not review.is_open:
                return
            self._say(unified_diff(review.file_path, review.proposal))
            while review.is_open:
                try:
                    answer = self.ask(f"Apply this change to {review.file_path}? [y]es / [n]o: ").strip().lower()
                except EOFError:
                    answer = "n"
                if not review.is_open:
                    return
                if answer in ("y", "yes"):
                    review.accept(review.proposal)
                    return
                if answer in ("n", "no"):
                    review.reject()
                    return

    def _say(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()


def unified_diff(file_path: str, proposal: str) -> str:
    """The proposal against the file on disk (empty when the file is new) as a unified diff."""
    try:
        with open(file_path, encoding="utf-8", errors="replace", newline="") as handle:
            current = handle.read()
        label = file_path
    except OSError:
        current, label = "", f"{file_path} (new file)"
    lines = difflib.unified_diff(
        current.splitlines(keepends=True),
        proposal.splitlines(keepends=True),
        fromfile=label,
        tofile=f"{os.path.basename(file_path)} (proposed)",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text or f"(no changes to {file_path})\n"
