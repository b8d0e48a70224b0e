"""Line comments in Sublime (issue #41): "Comment on Line/Selection" in a review (or any file of the
window) asks for the comment in an input panel and marks its lines (an underline and a bookmark
icon that follow the text as it is edited); "Send Comments to Chat" puts every comment of the
window at the head of its chat's next prompt (core/comments.py: path, lines, their text now, the
comment). A comment whose marked text changed since is outdated: not sent, and the user is told
which. Kept per window, in memory (main thread only)."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

import sublime

from ...core.comments import Comment, comments_note, lines_of, outdated_message, sort_out

MARK_KEY = "gemini_companion.comment."
MARK_FLAGS = sublime.DRAW_NO_FILL | sublime.DRAW_NO_OUTLINE | sublime.DRAW_SOLID_UNDERLINE
_numbers = itertools.count(1)
_by_window: dict[int, list[Marked]] = {}


@dataclass(frozen=True)
class Marked:
    """A comment and its marker: the region `key` of `view`."""

    comment: Comment
    view: sublime.View
    key: str

    def text_now(self, window: sublime.Window) -> str | None:
        """The marked lines as they read now; when their view closed (a review decided), the same
        lines of the file's open view; None when neither is there."""
        regions = self.view.get_regions(self.key) if self.view.is_valid() else []
        if regions:  # whole lines: text typed at the marker's end does not grow the region
            marked = regions[0]
            return self.view.substr(
                sublime.Region(self.view.line(marked.begin()).begin(), self.view.line(marked.end()).end())
            )
        opened = window.find_open_file(self.comment.path)
        if opened is None:
            return None
        return lines_of(opened.substr(sublime.Region(0, opened.size())), self.comment.first, self.comment.last)


def comment_on(view: sublime.View, path: str, text: str) -> Comment:
    """Mark the lines of the view's first selection and keep the comment for the view's window."""
    selection = view.sel()[0]
    lines = sublime.Region(view.line(selection.begin()).begin(), view.line(selection.end()).end())
    first, last = view.rowcol(lines.begin())[0] + 1, view.rowcol(lines.end())[0] + 1
    comment = Comment(path, first, last, view.substr(lines), text.strip())
    key = f"{MARK_KEY}{next(_numbers)}"
    view.add_regions(key, [lines], "region.orangish", "bookmark", MARK_FLAGS)
    window = view.window()
    if window is not None:
        _by_window.setdefault(window.id(), []).append(Marked(comment, view, key))
    return comment


def count(window: sublime.Window) -> int:
    return len(_by_window.get(window.id(), []))


def take(window: sublime.Window, folder: str) -> tuple[str | None, str | None]:
    """Every comment of the window, once, its markers removed: (the note for the next prompt, or
    None when none is current; the message naming the outdated ones, or None)."""
    marked = _by_window.pop(window.id(), [])
    now = {m.comment: m.text_now(window) for m in marked}
    for m in marked:
        if m.view.is_valid():
            m.view.erase_regions(m.key)
    current, outdated = sort_out([m.comment for m in marked], now.get)

    def shown(path: str) -> str:
        inside = path.startswith(folder.rstrip(os.sep) + os.sep)
        return os.path.relpath(path, folder) if inside else path

    note = comments_note(current, shown) if current else None
    return note, outdated_message(outdated, shown) if outdated else None


def forget(window: sublime.Window) -> None:
    """The window closed: its comments go with it."""
    _by_window.pop(window.id(), None)
