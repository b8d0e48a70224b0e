"""Images into a chat (issue #40): "Send Image File…" (commands/images.py), and a prompt that is only
an image's path (pasted, or copied from a tab or the side bar) sent with Enter.

The file is read and checked on the companion's loop thread (acp/prompt/images.py: inside the window's
folders, `context_exclude` honoured, at most 5 MB, PNG/JPEG/GIF/WebP by its bytes, and only for an
agent that takes images), never on Sublime's main thread. An image either waits for the next prompt
(its `@name` mention put in the prompt, like Send File) or, from Enter, goes at once with its mention
as the prompt's text. A refusal is one line in the chat, and what the user typed goes back into the
prompt. Every function here runs on the main thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence

import sublime

from ....acp.prompt.images import Image, ImageRefused, names_a_file, read_image, rules_for
from ....core.context import DEFAULT_EXCLUDES
from ....core.files.paths import is_inside
from ....runtime import RuntimeStopped
from ... import settings
from ... import terminus as terminal
from ..sessions import Chat

PAUSED = "Context sharing is paused: no image was sent (Gemini Companion: Pause/Resume Context Sharing)."
Read = Image | ImageRefused | None  # None: the path names no file (the prompt is text after all)


def send_image(chat: Chat, path: str) -> None:
    """Send Image File…: the image goes with the next prompt, its mention put in the prompt."""
    _read(chat, path, typed="", at_once=False)


def send_typed_path(chat: Chat, typed: str) -> None:
    """Enter on a prompt that is only an image's path (`named_like_image`): the image goes at once;
    a path that names no file is sent as the text it is. The prompt was taken; a refusal puts it back."""
    _read(chat, typed.strip(), typed=typed, at_once=True)


def _read(chat: Chat, path: str, typed: str, at_once: bool) -> None:
    if chat.state.handle.context.paused:
        _refused(chat, PAUSED, typed)
        return
    if chat.ended or not chat.ready:
        why = "has stopped in this chat: start a new chat" if chat.ended else "is still starting"
        sublime.status_message(f"{chat.spec.name} {why}; the image was not sent.")
        _put_back(chat, typed)
        return
    exclude = tuple(str(p) for p in settings.get("context_exclude", list(DEFAULT_EXCLUDES)))  # main thread

    async def read() -> Read:  # on the loop thread, where the session lives
        session = chat.session
        if session is None:
            return ImageRefused("The chat has not started: the image was not sent.")
        if at_once and not await _names_a_file(path, session.folders):
            return None
        return await read_image(path, rules_for(session, exclude))

    try:
        future = chat.state.handle.runtime.submit(read)
    except RuntimeStopped:
        _refused(chat, "Gemini Companion has stopped: the image was not sent; start a new chat.", typed)
        return

    def done(f: concurrent.futures.Future[Read]) -> None:  # on the loop thread
        if chat.silent:
            return
        error = f.exception()
        result: Read = ImageRefused(f"The image was not sent: {error!r}") if error is not None else f.result()
        sublime.set_timeout(lambda: _arrived(chat, result, typed, at_once) if chat.panel.is_valid() else None)

    future.add_done_callback(done)


async def _names_a_file(path: str, folders: Sequence[str]) -> bool:
    return await asyncio.to_thread(names_a_file, path, folders)


def _arrived(chat: Chat, result: Read, typed: str, at_once: bool) -> None:
    if result is None:  # not a file: the prompt is text
        if not chat.send(typed.strip()):
            _put_back(chat, typed)
        return
    if isinstance(result, ImageRefused):
        _refused(chat, str(result), typed)
        return
    folder = next((f for f in chat.folders if is_inside(result.path, f)), chat.folders[0] if chat.folders else None)
    mention = terminal.mention(result.path, folder)
    chat.images[mention] = result
    if at_once:
        if not chat.send(mention):  # a turn began meanwhile: the image waits in the prompt
            _put_back(chat, mention + " ")
        return
    chat.panel.add_to_prompt(mention + " ")
    chat.panel.focus_prompt()


def _refused(chat: Chat, line: str, typed: str) -> None:
    chat.panel.notice(line, "warning")
    _put_back(chat, typed)


def _put_back(chat: Chat, typed: str) -> None:
    """What the user typed is never lost: back into an empty prompt."""
    if typed and not chat.panel.prompt_text().strip():
        chat.panel.set_prompt(typed)
