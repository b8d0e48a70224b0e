"""`@shot.png` in a headless chat's prompt: the image goes with the prompt as an ACP `image` block
(acp/prompt/images.py: inside the workspace, never a file the default `context_exclude` patterns leave
out, at most 5 MB, PNG/JPEG/GIF/WebP by its bytes), for an agent that takes images. A mention of a
file that does not exist stays plain text. A refused image raises ImageRefused: the chat says its
one line and the prompt is not sent (`--prompt`: exit 1)."""

from __future__ import annotations

from ..acp.prompt.images import Image, ImageAgent, mentioned_images


async def attached(session: ImageAgent, text: str) -> list[Image]:
    """The images `text` mentions, read and checked; the first refused one raises ImageRefused."""
    if "@" not in text:
        return []
    images, refused = await mentioned_images(session, text)
    if refused:
        raise refused[0]
    return images
