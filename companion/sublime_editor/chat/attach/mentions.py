"""`@` in a chat's prompt: completions of the window's files and folders, its open files and the
symbols of Sublime's index; and, when the prompt is sent, the files its `@path` mentions attach.

Every rule of the other sharing paths holds: only files inside the chat's folders, never one that
`context_exclude`, the folder/file exclude patterns or `.gitignore` leave out (the `list_files`
walk and `core.mentions`), and nothing at all while context sharing is paused. The main thread only
reads settings and asks Sublime's index; the folders are walked on a thread of our own (the
listing is kept FRESH_SECONDS), and the CompletionList is filled from there (`set_completions` is
thread-safe since build 4184; the package needs 4205)."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sublime

from ....acp.prompt.images import Image
from ....acp.prompt.resources import Resource, ResourceRefused
from ....core.context import DEFAULT_EXCLUDES, SharingPolicy
from ....core.files.listing import Listing, ListOptions, list_files
from ....core.files.paths import PathPolicy, Resolved, WorkspaceError
from ....core.files.reading import read_text
from ....core.mentions import MentionRules, attachments, escape, excluded, symbol_lines
from ... import mcp_tools as workspace_tools
from ... import settings

if TYPE_CHECKING:
    from ....acp.session import ChatSession

log = logging.getLogger("gemini_companion")
FLAGS = sublime.INHIBIT_WORD_COMPLETIONS | sublime.INHIBIT_EXPLICIT_COMPLETIONS | sublime.DYNAMIC_COMPLETIONS
FRESH_SECONDS = 10.0  # a listing older than this is walked again
MAX_ITEMS = 5000  # files and folders offered at once (narrowed by what follows the `@`)
SYMBOL_READ_LIMIT = 2 * 1024 * 1024  # a symbol's file is read to find its lines, up to this size
_TOKEN = re.compile(r"(?:^|(?<=[\s(\[{\"'`]))@(\S*)$")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")  # what is looked up in the symbol index


@dataclass(frozen=True)
class _Query:
    token: str  # what follows the `@`
    stem: str  # the part of it the completion keeps (Sublime replaces only the word before the caret)
    rules: MentionRules
    open_files: tuple[str, ...]
    symbols: tuple[sublime.SymbolLocation, ...]


def rules(window: sublime.Window, folders: Sequence[str]) -> MentionRules:
    """The sharing rules of `window` now (main thread: settings and project data)."""
    tools = workspace_tools.read_settings(window)
    raw = settings.settings().get("context_exclude", list(DEFAULT_EXCLUDES))
    context_exclude = tuple(p for p in raw if isinstance(p, str)) if isinstance(raw, list) else DEFAULT_EXCLUDES
    options = ListOptions(
        limit=tools.list_limit,
        folder_excludes=tuple(tools.folder_exclude_patterns),
        file_excludes=(*tools.file_exclude_patterns, *context_exclude),
        use_gitignore=tools.use_gitignore,
    )
    return MentionRules(tuple(folders), options, SharingPolicy(exclude=context_exclude))


def complete(
    window: sublime.Window, folders: Sequence[str], paused: bool, prefix: str, before: str
) -> sublime.CompletionList | None:
    """The completions for the prompt text `before` the caret (main thread), or None when it does
    not end in an `@` mention."""
    match = _TOKEN.search(before)
    if match is None:
        return None
    if paused:
        sublime.status_message("Gemini Companion: context sharing is paused; @ offers nothing until it resumes")
        return sublime.CompletionList([], FLAGS)
    token = match.group(1)
    stem = token[: len(token) - len(prefix)] if prefix and token.endswith(prefix) else token
    symbols: tuple[sublime.SymbolLocation, ...] = ()
    if _NAME.fullmatch(token):
        symbols = tuple(window.symbol_locations(token, sublime.SYMBOL_SOURCE_ANY, sublime.SYMBOL_TYPE_DEFINITION))
    open_files = tuple(name for name in (v.file_name() for v in window.views()) if name)
    query = _Query(token, stem, rules(window, folders), open_files, symbols)
    completions = sublime.CompletionList(None, FLAGS)
    threading.Thread(target=_fill, args=(completions, query), name="gemini-companion-mentions", daemon=True).start()
    return completions


def _fill(completions: sublime.CompletionList, query: _Query) -> None:
    """On our own thread: walk (or reuse the walk), then hand Sublime the items."""
    try:
        items = _items(query)
    except Exception as exc:  # a completion that fails shows nothing; the prompt is the user's still
        log.warning("@ completions failed: %r", exc)
        items = []
    completions.set_completions(items, FLAGS)


def _items(query: _Query) -> list[sublime.CompletionValue]:
    policy = PathPolicy(query.rules.folders)
    items: list[sublime.CompletionValue] = []
    seen: set[str] = set()

    def offer(path: str, annotation: str, kind: sublime.Kind) -> None:
        text = escape(path)
        if path in seen or not text.startswith(query.stem):
            return
        seen.add(path)
        items.append(sublime.CompletionItem("@" + text, annotation, text[len(query.stem) :], kind=kind))

    for name in query.open_files:
        target = _shared(policy, query.rules, name)
        if target is not None:
            offer(_label(policy, target), "open", sublime.KIND_NAVIGATION)
    for location in query.symbols:
        item = _symbol(policy, query, location)
        if item is not None:
            items.append(item)
    listing = _listing(query.rules)
    for entry in listing.entries:
        for folder in _parents(entry):
            offer(folder, "folder", sublime.KIND_NAMESPACE)
        offer(entry, "file", sublime.KIND_AMBIGUOUS)
        if len(items) >= MAX_ITEMS:
            break
    return items


def _symbol(policy: PathPolicy, query: _Query, location: sublime.SymbolLocation) -> sublime.CompletionItem | None:
    """`Foo — src/app.py:3`, which writes `@src/app.py#L3-9` (the definition's lines)."""
    target = _shared(policy, query.rules, location.path)
    if target is None:
        return None
    try:
        text = read_text(target, None, SYMBOL_READ_LIMIT, location.path).text
    except (WorkspaceError, OSError):
        return None
    first, last = symbol_lines(text, location.row)
    label = _label(policy, target)
    mention = f"{escape(label)}#L{first}-{last}"
    if not mention.startswith(query.stem):
        return None
    trigger = f"{query.token} — {label}:{location.row}"
    return sublime.CompletionItem(trigger, "symbol", mention[len(query.stem) :], kind=location.kind)


def _shared(policy: PathPolicy, rules: MentionRules, path: str) -> Resolved | None:
    """`path` when it is a file of the folders that no rule leaves out."""
    try:
        target = policy.resolve(path, kind="file")
    except WorkspaceError:
        return None
    return None if excluded(rules, target) else target


def _label(policy: PathPolicy, target: Resolved) -> str:
    """The path as `list_files` prints it: folder-relative, after the folder's name when there are several."""
    if len(policy.folders) == 1:
        return target.relative
    index = policy.real_folders.index(target.folder)
    return f"{policy.labels[index]}/{target.relative}"


def _parents(entry: str) -> list[str]:
    parts = entry.split("/")[:-1]
    return ["/".join(parts[: n + 1]) + "/" for n in range(len(parts))]


_walks: dict[tuple[tuple[str, ...], ListOptions], tuple[float, Listing]] = {}
_walk_lock = threading.Lock()


def _listing(rules: MentionRules) -> Listing:
    """The folders' listing (what `list_files` lists), walked at most every FRESH_SECONDS."""
    key = (rules.folders, rules.options)
    with _walk_lock:
        found = _walks.get(key)
        if found is not None and time.monotonic() - found[0] < FRESH_SECONDS:
            return found[1]
        listing = list_files(PathPolicy(rules.folders), rules.options)
        if len(_walks) >= 8:
            _walks.clear()
        _walks[key] = (time.monotonic(), listing)
        return listing


async def prompt(
    session: ChatSession,
    text: str,
    resources: Sequence[Resource],
    mentioned: Sequence[Resource],
    warn: Callable[[str], None],
    images: Sequence[Image] = (),
) -> str:
    """`session.prompt` with the mentioned files (and the images: chat/images.py); when one of the
    files cannot go (a binary file for an agent that takes files' text, one deleted meanwhile), the
    reason is one warning and the prompt goes without them: a mention is never a reason to lose the
    prompt or the chat."""
    try:
        return await session.prompt(text, [*resources, *mentioned], images)
    except ResourceRefused as exc:
        if not mentioned:
            raise
        warn(f"{exc} The prompt went without the files its @ mentions name.")
        return await session.prompt(text, resources, images)


async def attached(
    rules: MentionRules | None, text: str, skip: Sequence[str], warn: Callable[[str], None]
) -> list[Resource]:
    """The files the prompt `text` mentions (loop thread; None `rules`: sharing is paused, nothing
    goes). Each refused mention is one warning in the chat."""
    if rules is None or "@" not in text:
        return []
    found, refused = await asyncio.to_thread(attachments, rules, text, skip)
    for reason in refused:
        warn(reason)
    return [Resource(m.path, lines=m.lines) for m in found]
