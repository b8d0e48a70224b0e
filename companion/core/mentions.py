"""`@path` mentions in a chat prompt: which of them attach a workspace file.

A mention is `@` at the start of a word, then a path relative to the workspace (a space in it
escaped as `\\ `, as Send File writes it), optionally `#L3` or `#L3-9` for lines. It attaches its
file only when the file is inside the workspace's folders and left out by none of the rules every
other sharing path applies: the `context_exclude` patterns, the folder/file exclude patterns and
`.gitignore` (as `list_files` applies them). A mention of something that does not exist (`@bob`),
or of a folder, stays plain text; one that leaves the workspace or names an excluded file is
refused with a one-line reason. The prompt's text is never changed. Nothing here runs on an
editor's UI thread: `attachments` reads the disk.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass

from .context import SharingPolicy
from .files.listed import left_out
from .files.listing import ListOptions
from .files.paths import PathPolicy, Resolved, WorkspaceError

_MENTION = re.compile(r"(?<![^\s(\[{\"'`])@((?:\\ |[^\s])+)")
_LINES = re.compile(r"#L([1-9][0-9]*)(?:-([1-9][0-9]*))?$")
_TRAILING = ".,;:!?)]}\"'`"  # punctuation after a mention ("see @notes.txt.") is not part of it


@dataclass(frozen=True)
class Mention:
    token: str  # as typed, `@` included
    path: str  # the path, unescaped (absolute once `attachments` found the file)
    lines: tuple[int, int] | None  # `#L3-9`: 1-based, inclusive


@dataclass(frozen=True)
class MentionRules:
    """What a mention may attach: files of `folders` that neither `sharing` (context_exclude) nor
    the listing's exclusions (`options`) leave out."""

    folders: tuple[str, ...]
    options: ListOptions
    sharing: SharingPolicy


def escape(path: str) -> str:
    """A folder-relative path as a mention writes it (after the `@`)."""
    return path.replace(os.sep, "/").replace(" ", "\\ ")


def find(text: str) -> list[Mention]:
    """The mentions in `text`, in order, each once."""
    found: dict[str, Mention] = {}
    for match in _MENTION.finditer(text):
        token = "@" + match.group(1).rstrip(_TRAILING)
        body = token[1:]
        lines = None
        numbers = _LINES.search(body)
        if numbers is not None:
            first = int(numbers.group(1))
            last = int(numbers.group(2) or first)
            lines = (first, max(first, last))
            body = body[: numbers.start()]
        if body:
            found.setdefault(token, Mention(token, body.replace("\\ ", " "), lines))
    return list(found.values())


def excluded(rules: MentionRules, target: Resolved) -> bool:
    """Whether a sharing rule leaves `target` out (by its own name, or the link's that named it)."""
    if rules.sharing.excludes(target.path) or rules.sharing.excludes(target.requested):
        return True
    if target.relative and rules.sharing.excludes(target.relative):
        return True
    return left_out(rules.options, target.folder, target.path)


def attachments(rules: MentionRules, text: str, skip: Collection[str] = ()) -> tuple[list[Mention], list[str]]:
    """The files `text` mentions, each with its absolute path (as named, before links are
    resolved: the chat's Resource checks it again), and a one-line reason for each
    mention refused (outside the workspace, or excluded). `skip`: mentions already attached (Send
    File's). Reads the disk: never on an editor's UI thread."""
    if not rules.folders:
        return [], []
    policy = PathPolicy(rules.folders)
    resources: list[Mention] = []
    refused: list[str] = []
    for mention in find(text):
        if mention.token in skip:
            continue
        try:
            target = policy.resolve(mention.path, kind="any", must_exist=False)
        except WorkspaceError as exc:
            refused.append(f"{mention.token} was not attached: {exc}")
            continue
        if not target.exists or os.path.isdir(target.path):
            continue  # not a file of the workspace: plain text
        if excluded(rules, target):
            refused.append(
                f"{mention.token} was not attached: it matches an exclusion (context_exclude, the folder/file "
                "exclude patterns or .gitignore), so it is never shared; the agent gets only its name as text."
            )
            continue
        resources.append(Mention(mention.token, target.requested, mention.lines))
    return resources, refused


MAX_SYMBOL_LINES = 200  # a symbol's lines sent with it, at most


def symbol_lines(text: str, row: int) -> tuple[int, int]:
    """The lines (1-based, inclusive) of the definition that starts on `row`: down to the line
    before the next one indented no deeper (a closing `}`, `)`, `]` or `end` at its indent is
    included), at most MAX_SYMBOL_LINES. A guess from indentation: the index gives only the row."""
    lines = text.splitlines()
    if not 1 <= row <= len(lines):
        return row, row
    indent = _indent(lines[row - 1])
    last = row
    for number in range(row + 1, min(len(lines), row + MAX_SYMBOL_LINES - 1) + 1):
        line = lines[number - 1]
        if not line.strip():
            continue
        if _indent(line) <= indent:
            if line.strip().startswith(("}", ")", "]", "end")):
                last = number
            break
        last = number
    return row, last


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())
