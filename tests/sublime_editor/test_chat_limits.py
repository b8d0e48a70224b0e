"""The chat in Sublime reads files under the `chat_read_file_limit_kb` setting its refusals name."""

from __future__ import annotations

from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import chat_of, scripted, start_chat
from tests.sublime_fake import control


def test_the_chat_read_file_limit_kb_setting_is_the_chats_file_limit(companion: Companion, workspace: str) -> None:
    limits = {"chat_read_file_limit_kb": 3, "read_file_limit_kb": 5}
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [scripted()], **limits})
    window = control.new_window([workspace])
    companion.load()
    view = start_chat(companion, window)
    assert chat_of(view).session.files.read_limit == 3 * 1024
