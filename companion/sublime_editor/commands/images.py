"""Gemini Companion: Send Image File… — an image into the window's chat (the focused one, else the
newest), with the next prompt.

Which image: the `path` argument (a key binding or a menu may give one); else the image shown in the
active tab (Sublime opens an image, also one dropped on the window, in an image tab, an ImageSheet
with its file name); else the path typed in an input panel. What happens to it: chat/images.py.
"""

from __future__ import annotations

import os

import sublime
import sublime_plugin

from ...acp.prompt.images import named_like_image
from ..chat import sessions as chat_sessions
from ..chat.attach import images as chat_images

CAPTION = "Image to send to the chat (PNG, JPEG, GIF or WebP, in the window's folders):"


class GeminiCompanionSendImageFileCommand(sublime_plugin.WindowCommand):
    def run(self, path: str | None = None) -> None:
        chat = chat_sessions.target(self.window)
        if chat is None:
            sublime.status_message("Gemini Companion: no chat is open; start one with Gemini Companion: New Chat.")
            return
        chosen = path or _active_image(self.window)
        if chosen:
            chat_images.send_image(chat, chosen)
            return
        folders = self.window.folders()
        initial = folders[0] + os.sep if folders else ""

        def done(typed: str) -> None:
            if typed.strip() and chat.panel.is_valid():
                chat_images.send_image(chat, typed.strip())

        self.window.show_input_panel(CAPTION, initial, done, None, None)

    def is_enabled(self, path: str | None = None) -> bool:
        return chat_sessions.target(self.window) is not None  # a chat to send into


def _active_image(window: sublime.Window) -> str | None:
    """The file of the active tab when its name is an image's (its bytes are checked later)."""
    sheet = window.active_sheet()
    name = sheet.file_name() if sheet is not None else None
    return name if name and named_like_image(name) else None
