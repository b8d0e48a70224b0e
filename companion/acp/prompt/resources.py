"""Workspace files attached to a prompt: checked with the workspace path policy (nothing outside
the window's folders, no symlink escapes), their text read when the agent takes embedded context.
No SDK import here: session.py turns an Attachment into the protocol's content block."""

from __future__ import annotations

import os
import pathlib
from dataclasses import dataclass

from ..review.files import AgentFiles, FsRefused


class ResourceRefused(ValueError):
    """A file given with a prompt is not inside the workspace (or cannot be read); nothing was sent."""


@dataclass(frozen=True)
class Resource:
    """A workspace file given with a prompt. `text`: what the user sees (an unsaved buffer, or the
    selected text when `lines` is set); None reads the file (its unsaved buffer first). `lines`:
    the selected lines, 1-based and inclusive."""

    path: str
    text: str | None = None
    lines: tuple[int, int] | None = None


@dataclass(frozen=True)
class Attachment:
    uri: str  # file URI of the real path
    name: str  # the file's name
    text: str | None  # the text to embed; None for a link
    note: str | None  # says which lines a selection is, for the agent


async def attach(files: AgentFiles, resource: Resource, embed: bool) -> Attachment:
    """`resource` checked and, with `embed`, read; ResourceRefused says why and what to do."""
    try:
        target = await files.resolve(resource.path)
    except FsRefused as exc:
        raise ResourceRefused(f"{resource.path} was not sent: {exc}") from None
    if not target.exists:
        raise ResourceRefused(f"{resource.path} was not sent: it does not exist; save it first, or pick another file.")
    text = resource.text
    first, last = resource.lines or (None, None)
    if embed and text is None:
        limit = None if first is None or last is None else max(last - first + 1, 0)
        try:
            text = await files.read(target.path, first, limit)
        except FsRefused as exc:
            raise ResourceRefused(f"{resource.path} was not sent: {exc}") from None
    note = f"[Lines {first}-{last} of {target.requested}:]" if first is not None else None
    return Attachment(pathlib.Path(target.path).as_uri(), os.path.basename(target.path), text if embed else None, note)
