"""`@relative/path` in a headless chat's prompt: the file goes with the prompt, as Send File does in
Sublime (embedded or as a link, by the agent's capability), under the same rules: inside the
workspace only, never a file the default `context_exclude` patterns or `.gitignore` leave out.
A refused mention costs one line on stderr; the prompt's text goes unchanged."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..acp.prompt.images import Image
from ..acp.prompt.resources import Resource, ResourceRefused
from ..core.context import DEFAULT_EXCLUDES, SharingPolicy
from ..core.files.listing import ListOptions
from ..core.mentions import MentionRules, attachments
from .editor import visible

if TYPE_CHECKING:
    from ..acp.session import ChatSession

RULES = ListOptions(file_excludes=DEFAULT_EXCLUDES, use_gitignore=True)


async def attached(folders: Sequence[str], text: str) -> list[Resource]:
    """The workspace files `text` mentions; each refused one is said on stderr."""
    if "@" not in text:
        return []
    rules = MentionRules(tuple(folders), RULES, SharingPolicy())
    found, refused = await asyncio.to_thread(attachments, rules, text)
    for reason in refused:
        _warn(reason)
    return [Resource(m.path, lines=m.lines) for m in found]


async def prompt(session: ChatSession, text: str, mentioned: Sequence[Resource], images: Sequence[Image] = ()) -> str:
    """`session.prompt` with the mentioned files (and images: headless/images.py); a file that cannot
    go (a binary file for an agent that takes files' text) is one warning, and the prompt goes without
    the files."""
    try:
        return await session.prompt(text, mentioned, images)
    except ResourceRefused as exc:
        if not mentioned:
            raise
        _warn(f"{exc} The prompt went without the files its @ mentions name.")
        return await session.prompt(text, images=images)


def _warn(reason: str) -> None:
    try:
        print(f"warning: {visible(reason)}", file=sys.stderr, flush=True)
    except OSError:  # the terminal is gone (SIGHUP)
        pass
