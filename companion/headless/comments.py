"""`changes --comment PATH:LINE TEXT` (issue #41): a comment on a line (or `PATH:FIRST-LAST`) of a
workspace file, kept in the per-user cache until the next `chat` prompt in that workspace carries
it to the agent with the lines' text then (core/comments.py). A comment whose lines changed
meanwhile is not sent: one line says which. The same rules as `@` mentions: inside the workspace,
never a file the default exclusions (.env …) or .gitignore leave out."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from ..core.comments import Comment, CommentFile, comments_note, lines_of, outdated_message, sort_out
from ..core.context import SharingPolicy
from ..core.files.paths import PathPolicy, WorkspaceError
from ..core.files.textfile import decode
from ..core.mentions import MentionRules, excluded
from ..core.system.user_cache import user_cache_folder
from .editor import one_line
from .mentions import RULES


class CommentRefused(Exception):
    """The comment cannot be kept; the message says why and what to do."""


def add_comment(workspace: str, where: str, text: str, cache: str | None = None) -> Comment:
    """Keep the comment for the next prompt; CommentRefused (nothing kept) for a bad place or text."""
    path, _, lines = where.rpartition(":")
    first, _, last = lines.partition("-")
    if not path or not first.isdigit() or (last and not last.isdigit()):
        raise CommentRefused(f"{where!r} is not PATH:LINE (or PATH:FIRST-LAST); for example src/app.py:42.")
    if not text.strip():
        raise CommentRefused("the comment is empty; give its text after PATH:LINE.")
    folder = os.path.realpath(workspace)
    try:
        target = PathPolicy([folder]).resolve(path if os.path.isabs(path) else os.path.join(folder, path))
    except WorkspaceError as exc:
        raise CommentRefused(str(exc)) from None
    if excluded(MentionRules((folder,), RULES, SharingPolicy()), target):
        raise CommentRefused(f"{path} is excluded from what agents see (.env-style patterns or .gitignore).")
    quoted = lines_of(_text(target.path) or "", int(first), int(last or first))
    if quoted is None:
        raise CommentRefused(f"{path} has no line(s) {lines}; give lines the file has.")
    comment = Comment(target.path, int(first), int(last or first), quoted, text.strip())
    CommentFile(cache or user_cache_folder(), folder).add(comment)
    return comment


async def take_notes(folders: Sequence[str], cache: str | None = None) -> list[str]:
    """The comments kept for this workspace, once, as the note leading the next prompt; each
    outdated one is said on stderr and dropped (its text would be wrong)."""
    folder = os.path.realpath(folders[0])
    comments = await asyncio.to_thread(CommentFile(cache or user_cache_folder(), folder).take)
    if not comments:
        return []

    def now(comment: Comment) -> str | None:
        return lines_of(_text(comment.path) or "", comment.first, comment.last)

    current, outdated = await asyncio.to_thread(sort_out, comments, now)

    def shown(path: str) -> str:
        return os.path.relpath(path, folder)

    if outdated:
        print(f"warning: {outdated_message(outdated, shown)}", file=sys.stderr, flush=True)
    return [comments_note(current, shown)] if current else []


def run_comment(workspace: str, where: str, text: str) -> int:
    """The `changes --comment` command: 0 kept, 1 refused (one `error:` line), 2 not a folder."""
    if not workspace or not os.path.isdir(workspace):
        print(f"error: {workspace!r} is not a folder; pass --workspace with the chat's folder.", file=sys.stderr)
        return 2
    try:
        add_comment(workspace, where, text)
    except (CommentRefused, OSError) as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 1
    print(f"Kept your comment on {where}: the next chat prompt in {workspace} carries it.")
    return 0


def _text(path: str) -> str | None:
    """The file's text now; None when it is gone or not text."""
    try:
        with open(path, "rb") as handle:
            return decode(handle.read(), path)[0]
    except (OSError, WorkspaceError):  # gone, or not text (BinaryFile)
        return None
