"""Line comments on the agent's changes, for the agent to read (issue #41): the user comments on a
line (or lines) of a file in a review or the Changes tab, and "Send Comments to Chat" (headless:
`changes --comment`) puts each one at the head of the chat's next prompt, as an editor note with
the file, the lines, their text now and the comment. A comment whose lines changed since it was
made is outdated: it is never sent with text that is no longer there; the user is told which.

Editor-agnostic: the Sublime adapter keeps its comments per window and reads the lines from its
views; the headless `changes --comment` keeps them in the per-user cache (`CommentFile`) until the
next `chat` prompt in that workspace takes them."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from .system.token_files import atomic_write_private

COMMENT_CHARS = 4000  # a comment is a remark, not a file
LINES_CHARS = 8000  # the lines quoted with it


@dataclass(frozen=True)
class Comment:
    """A comment on lines `first`..`last` (1-based) of `path`, and what they held when it was made."""

    path: str
    first: int
    last: int
    text: str  # the lines when the comment was made ("\n" between them)
    comment: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.first}" if self.first == self.last else f"{self.path}:{self.first}-{self.last}"


def lines_of(text: str, first: int, last: int) -> str | None:
    """Lines `first`..`last` (1-based) of `text`, None when the text has fewer lines."""
    found = text.splitlines()
    if first < 1 or last < first or last > len(found):
        return None
    return "\n".join(found[first - 1 : last])


def sort_out(comments: Sequence[Comment], now: Callable[[Comment], str | None]) -> tuple[list[Comment], list[Comment]]:
    """(the comments whose lines still read as they did, the outdated ones); `now`: the lines'
    text now (None: the file or the lines are gone)."""
    current, outdated = [], []
    for comment in comments:
        (current if now(comment) == comment.text else outdated).append(comment)
    return current, outdated


def comments_note(comments: Sequence[Comment], shown: Callable[[str], str] = lambda path: path) -> str:
    """The note that leads the next prompt: each comment's file and lines, their text, the comment.
    `shown`: a path as the agent should read it (relative to the workspace)."""
    parts = ["[Note from the editor: the user commented on these lines:]"]
    for c in comments:
        where = f"{shown(c.path)}:{c.first}" + (f"-{c.last}" if c.last != c.first else "")
        quoted = "\n".join(f"> {line}" for line in c.text[:LINES_CHARS].split("\n"))
        parts.append(f"{where}\n{quoted}\n{c.comment.strip()[:COMMENT_CHARS]}")
    return "\n\n".join(parts)


def outdated_message(outdated: Sequence[Comment], shown: Callable[[str], str] = lambda path: path) -> str:
    """One line naming the comments left out because their lines changed."""
    where = ", ".join(f"{shown(c.path)}:{c.first}" + (f"-{c.last}" if c.last != c.first else "") for c in outdated)
    return (
        f"Not sent: the comment(s) on {where}, whose lines changed since you commented; "
        "comment on the lines as they are now."
    )


class CommentFile:
    """The headless comments of one workspace, in the per-user cache (never in the workspace): one
    JSON file, written atomically and private (0600)."""

    def __init__(self, cache_folder: str, workspace: str) -> None:
        key = hashlib.sha256(os.path.realpath(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.path = os.path.join(cache_folder, "comments", f"{key}.json")

    def load(self) -> list[Comment]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                return [Comment(**entry) for entry in json.load(handle)]
        except FileNotFoundError:
            return []
        except (ValueError, TypeError):  # a damaged file holds nothing to send
            return []

    def add(self, comment: Comment) -> None:
        self._save([*self.load(), comment])

    def take(self) -> list[Comment]:
        """Every comment, once: the file is emptied."""
        found = self.load()
        if found:
            os.remove(self.path)
        return found

    def _save(self, comments: list[Comment]) -> None:
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        atomic_write_private(self.path, json.dumps([asdict(c) for c in comments]).encode("utf-8"))
