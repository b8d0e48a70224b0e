"""An image file given with a prompt: checked, read and typed before anything is sent.

Sent only to an agent whose `initialize` advertises `promptCapabilities.image`; only a file inside
the window's folders (the workspace path policy: no `..`, no symlink out, a regular file), never
one the sharing exclusions hide (`context_exclude`: `.env`, keys); at most IMAGE_LIMIT_BYTES; its
type from its first bytes (PNG, JPEG, GIF, WebP), never from its name. Each refusal is one line
that says what to do. No SDK import here: session.py turns an Image into the protocol's `image`
content block. The reads block: callers run `image_block` off Sublime's main thread
(`read_image` does, on the asyncio loop's default executor).
"""

from __future__ import annotations

import asyncio
import base64
import os
import pathlib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ...core.context import DEFAULT_EXCLUDES, SharingPolicy
from ...core.files.fdpath import open_file
from ...core.files.paths import PathPolicy, Resolved, WorkspaceError, path_from_argument
from ...core.files.reading import read_at_most
from ..agents.agents import AgentSpec

IMAGE_LIMIT_BYTES = 5 * 1024 * 1024  # Claude's API refuses images over 5 MB; larger ones cost a turn for nothing
# The names that are worth a look when a prompt is only a path (a pasted or dropped file): the type
# itself is decided by the bytes.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_KINDS = "PNG, JPEG, GIF or WebP"
_BINARY = getattr(os, "O_BINARY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check must not hang the read
_MENTION = re.compile(r"(?<!\S)@((?:\\ |\S)+)")  # `@path`, spaces escaped with a backslash


class ImageRefused(ValueError):
    """An image that is not sent; the message is one line saying why and what to do."""


@dataclass(frozen=True)
class Image:
    """An image ready to go: the protocol's `image` block holds `data` and `mime_type` (and `uri`)."""

    data: str  # base64 of the file's bytes
    mime_type: str
    path: str  # the real path
    uri: str  # its file URI
    name: str  # the file's name, for the user's messages
    size: int  # bytes


@dataclass(frozen=True)
class ImageRules:
    """What decides whether an image may go: the agent's capability and the workspace's rules."""

    agent: str  # the agent's name, for the refusals
    takes_images: bool  # its `initialize` answer's `promptCapabilities.image`
    folders: Sequence[str]  # the window's folders: nothing outside them is read
    exclude: Sequence[str] = field(default=DEFAULT_EXCLUDES)  # the `context_exclude` setting
    limit: int = IMAGE_LIMIT_BYTES


class ImageAgent(Protocol):
    """What `rules_for` reads from a chat session (acp/session.py ChatSession), once it has started."""

    spec: AgentSpec
    folders: list[str]
    takes_images: bool


def rules_for(session: ImageAgent, exclude: Sequence[str] = DEFAULT_EXCLUDES) -> ImageRules:
    """The rules of a started chat: its agent's capability, its folders, the user's exclusions."""
    return ImageRules(session.spec.name, session.takes_images, list(session.folders), tuple(exclude))


def mime_type(data: bytes) -> str | None:
    """The image type the bytes begin with (their magic numbers), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def named_like_image(text: str) -> bool:
    """Whether `text` (a whole prompt) is one path or file URI with an image's suffix: a string test,
    no disk access, so Sublime's main thread may ask it."""
    path = _unquoted(text)
    return bool(path) and "\n" not in path and path.lower().endswith(IMAGE_SUFFIXES)


def image_mentions(text: str) -> list[str]:
    """The `@path` tokens of a prompt that name images by their suffix (`@shot.png`, `@ui/a\\ b.jpg`:
    a space escaped as Send File writes it), as paths."""
    found = (m.group(1).replace("\\ ", " ").rstrip(".,;:!?)") for m in _MENTION.finditer(text))
    return [path for path in found if path.lower().endswith(IMAGE_SUFFIXES)]


def names_a_file(text: str, folders: Sequence[str]) -> bool:
    """Whether a prompt that is only a path names an existing file (absolute, a file URI, or relative
    to one of `folders`): if not, it is a prompt like any other. Reads the disk."""
    try:
        path = path_from_argument(_unquoted(text))
    except WorkspaceError:
        return False
    if os.path.isabs(path):
        return os.path.isfile(path)
    return any(os.path.isfile(os.path.join(folder, path)) for folder in folders)


def no_images(agent: str) -> str:
    """The one line an agent without image support gets the user."""
    return (
        f"{agent} takes no images (its initialize does not offer promptCapabilities.image): nothing was sent; "
        "describe the image in words, or chat with an agent that takes images."
    )


def image_block(path: str, rules: ImageRules) -> Image | ImageRefused:
    """The image at `path` ready to send, or why it is not sent (returned, not raised: the callers
    show it as a line and keep the prompt). Reads the disk: never on Sublime's main thread."""
    if not rules.takes_images:
        return ImageRefused(no_images(rules.agent))
    wanted = _unquoted(path)
    shown = os.path.basename(wanted) or wanted
    try:
        target = PathPolicy(rules.folders).resolve(path_from_argument(wanted), kind="file")
    except WorkspaceError as exc:
        return ImageRefused(f"The image {shown} was not sent: {exc}")
    sharing = SharingPolicy(tuple(rules.exclude))
    if sharing.excludes(target.path) or sharing.excludes(target.requested):
        return ImageRefused(
            f"The image {shown} was not sent: it matches the setting context_exclude, which keeps it from every agent."
        )
    try:
        data = _read(target, shown, rules.limit)
    except (WorkspaceError, OSError) as exc:
        return ImageRefused(f"The image {shown} was not sent: {exc}")
    except ImageRefused as exc:
        return exc
    kind = mime_type(data)
    if kind is None:
        return ImageRefused(
            f"{shown} is not a {_KINDS} image (its first bytes are not an image's, whatever its name says): "
            f"nothing was sent; send a {_KINDS} file."
        )
    uri = pathlib.Path(target.path).as_uri()
    return Image(base64.b64encode(data).decode("ascii"), kind, target.path, uri, shown, len(data))


async def read_image(path: str, rules: ImageRules) -> Image | ImageRefused:
    """`image_block` on a worker thread (the chat's loop never waits on the disk)."""
    return await asyncio.to_thread(image_block, path, rules)


async def mentioned_images(
    session: ImageAgent, text: str, exclude: Sequence[str] = DEFAULT_EXCLUDES, skip: Collection[str] = ()
) -> tuple[list[Image], list[ImageRefused]]:
    """The images the `@path` mentions of `text` name (an image's suffix, a file that exists: `@x.png`
    naming no file stays text), read and checked, and the reason for each one refused. `skip`: the
    mention tokens already attached (Send Image File's)."""
    images: list[Image] = []
    refused: list[ImageRefused] = []
    for path in image_mentions(text):
        if "@" + path.replace(" ", "\\ ") in skip:
            continue
        if not (os.path.isabs(path) or await asyncio.to_thread(names_a_file, path, session.folders)):
            continue  # an absolute path is checked whatever it names: outside the folders, it is said why
        found = await read_image(path, rules_for(session, exclude))
        if isinstance(found, ImageRefused):
            refused.append(found)
        else:
            images.append(found)
    return images, refused


def _read(target: Resolved, shown: str, limit: int) -> bytes:
    """The file's bytes through a descriptor of the checked file itself (a link swapped in after the
    check is refused), at most `limit` of them."""
    fd = open_file(target, os.O_RDONLY | _NONBLOCK | _BINARY, shown)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise ImageRefused(_too_big(shown, size, limit))
        data = read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        raise ImageRefused(_too_big(shown, len(data), limit))
    return data


def _too_big(shown: str, size: int, limit: int) -> str:
    return (
        f"The image {shown} is {_megabytes(size)}, over the {_megabytes(limit)} limit for images sent to an agent: "
        "nothing was sent; crop or scale it down (or save it as JPEG or WebP) and send it again."
    )


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB".replace(".0 MB", " MB")


def _unquoted(text: str) -> str:
    """A pasted path as file managers give it: trimmed, without the quotes a shell copy adds."""
    path = text.strip()
    if len(path) >= 2 and path[0] == path[-1] and path[0] in "'\"":
        path = path[1:-1]
    return path
