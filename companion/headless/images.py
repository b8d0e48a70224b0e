"""`@shot.png` in a headless chat's prompt: the image goes with the prompt as an ACP `image` block
(acp/images.py: inside the workspace, never a file the default `context_exclude` patterns leave
out, at most 5 MB, PNG/JPEG/GIF/WebP by its bytes), for an agent that takes images. A mention of a
file that does not exist stays plain text. A refused image raises ImageRefused: the chat says its
one line and the prompt is not sent (`--prompt`: exit 1)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from ..acp.images import Image, ImageAgent, ImageRefused, image_mentions, names_a_file, read_image, rules_for


async def attached(session: ImageAgent, text: str) -> list[Image]:
    """The images `text` mentions (`@path` with an image's suffix), read and checked; the first
    refused one raises ImageRefused."""
    images: list[Image] = []
    for path in image_mentions(text):
        if not await _exists(path, session.folders):
            continue
        found = await read_image(path, rules_for(session))
        if isinstance(found, ImageRefused):
            raise found
        images.append(found)
    return images


async def _exists(path: str, folders: Sequence[str]) -> bool:
    """An absolute path is checked whatever it names (outside the workspace: refused, said why)."""
    return os.path.isabs(path) or await asyncio.to_thread(names_a_file, path, folders)
