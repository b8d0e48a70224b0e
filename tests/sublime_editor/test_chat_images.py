"""Images and every folder in the chat inside Sublime (issue #40), driven by the user's gestures in
the fake Sublime, with the scripted agent tests/acp/capable_agent.py (a real subprocess on the SDK's
agent side) recording what reaches it: Send Image File… (a typed path, or the image tab in front),
a prompt that is only an image's path, an agent that takes no images, and a window of two folders."""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
from typing import Any

import pytest

from tests.acp.test_images_and_folders import PNG
from tests.sublime_editor.conftest import Companion, pkg
from tests.sublime_editor.test_chat import chat_of, chat_views, text, wait_turn
from tests.sublime_fake import control, sublime

AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "capable_agent.py")
CEILING = 60  # seconds: a ceiling on events, never a synchronisation by sleeping
COMMAND = "gemini_companion_send_image_file"


def _records(path: str, method: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [r["params"] for r in map(json.loads, handle) if r["method"] == method]


def _open_chat(companion: Companion, folders: list[str], record: str, *capabilities: str) -> sublime.View:
    agent = {"name": "Capable", "command": sys.executable, "args": [AGENT, *capabilities]}
    agent["env"] = {"CAPABLE_AGENT_RECORD": record}
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [agent]})
    window = control.new_window(folders)
    companion.load()
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Capable"})
    (view,) = chat_views(window)
    control.pump_until(lambda: "is ready" in text(view) or "⚠" in text(view), CEILING, "the chat to start")
    assert "is ready" in text(view), text(view)
    return view


def _image(folder: str, name: str = "shot.png", data: bytes = PNG) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _sent_images(record: str) -> list[dict[str, Any]]:
    return [b for p in _records(record, "session/prompt") for b in p["prompt"] if b["type"] == "image"]


def test_send_image_file_asks_for_a_path_and_the_image_goes_with_the_next_prompt(
    companion: Companion, workspace: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = str(tmp_path / "record.jsonl")
    path = _image(workspace)
    view = _open_chat(companion, [workspace], record, "image")
    images = pkg("acp.prompt.images")
    read_on: list[int] = []  # the threads that read the file
    real = images.image_block
    monkeypatch.setattr(images, "image_block", lambda *a: read_on.append(threading.get_ident()) or real(*a))
    window = view.window()
    assert window is not None
    assert control.run_from_palette(window, COMMAND)
    (panel,) = control.input_panels()
    assert panel["initial_text"] == workspace + os.sep
    control.answer_input_panel(path)
    chat = chat_of(view)
    control.pump_until(lambda: "@shot.png" in chat.panel.prompt_text(), CEILING, "the image's mention in the prompt")
    control.type_text(view, "what is on it?")
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    wait_turn(view)
    (block,) = _sent_images(record)
    assert base64.b64decode(block["data"]) == PNG and block["mimeType"] == "image/png"
    (prompt,) = _records(record, "session/prompt")
    assert prompt["prompt"][0] == {"type": "text", "text": "@shot.png what is on it?"}
    assert read_on and control.host().main_ident not in read_on  # the file was read off Sublime's main thread


def test_send_image_file_takes_the_image_tab_in_front(companion: Companion, workspace: str, tmp_path: Any) -> None:
    record = str(tmp_path / "record.jsonl")
    path = _image(workspace, "ui.png")
    view = _open_chat(companion, [workspace], record, "image")
    window = view.window()
    assert window is not None
    control.open_image(window, path)  # opened or dropped on the window: an image tab
    assert control.run_from_palette(window, COMMAND)
    assert control.input_panels() == []
    chat = chat_of(view)
    control.pump_until(lambda: "@ui.png" in chat.panel.prompt_text(), CEILING, "the image's mention in the prompt")


def test_a_prompt_that_is_only_an_images_path_sends_the_image(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    path = _image(workspace)
    view = _open_chat(companion, [workspace], record, "image")
    control.type_text(view, path)  # pasted
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    control.pump_until(lambda: _records(record, "session/prompt"), CEILING, "the prompt to reach the agent")
    wait_turn(view)
    (block,) = _sent_images(record)
    assert base64.b64decode(block["data"]) == PNG
    # A path that names no file is a prompt like any other.
    control.type_text(view, "missing.png")
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    control.pump_until(lambda: len(_records(record, "session/prompt")) == 2, CEILING, "the second prompt")
    wait_turn(view)
    assert _records(record, "session/prompt")[1]["prompt"] == [{"type": "text", "text": "missing.png"}]


def test_an_agent_without_image_support_gets_nothing_and_the_user_one_line(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    path = _image(workspace)
    view = _open_chat(companion, [workspace], record)  # no `image` capability
    window = view.window()
    assert window is not None
    assert control.run_from_palette(window, COMMAND, {"path": path})
    control.pump_until(lambda: "takes no images" in text(view), CEILING, "the refusal")
    control.type_text(view, path)  # and pasted as a prompt: refused the same way, the text kept
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    control.pump_until(lambda: text(view).count("takes no images") == 2, CEILING, "the second refusal")
    control.settle()
    chat = chat_of(view)
    assert chat.panel.prompt_text() == path  # what the user typed is not lost
    assert chat.images == {}
    assert _records(record, "session/prompt") == []  # nothing was sent
    notices = [line for line in text(view).splitlines() if "takes no images" in line]
    assert len(notices) == 2 and all(line.startswith("> ⚠ Capable takes no images") for line in notices)


def test_a_text_file_named_png_and_a_large_image_are_refused_in_the_chat(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    fake = _image(workspace, "fake.png", b"plain text\n")
    big = _image(workspace, "big.png", PNG + b"\0" * (6 * 1024 * 1024))
    view = _open_chat(companion, [workspace], record, "image")
    window = view.window()
    assert window is not None
    assert control.run_from_palette(window, COMMAND, {"path": fake})
    control.pump_until(lambda: "is not a PNG, JPEG, GIF or WebP image" in text(view), CEILING, "the refusal")
    assert control.run_from_palette(window, COMMAND, {"path": big})
    control.pump_until(lambda: "over the 5 MB limit" in text(view), CEILING, "the refusal")
    assert chat_of(view).images == {} and _records(record, "session/prompt") == []


def test_a_two_folder_window_sends_the_second_as_additional_directory_or_says_it_is_unseen(
    companion: Companion, tmp_path: Any
) -> None:
    first, second = str(tmp_path / "app"), str(tmp_path / "lib")
    os.makedirs(first)
    os.makedirs(second)
    record = str(tmp_path / "record.jsonl")
    view = _open_chat(companion, [first, second], record, "folders")
    (opened,) = _records(record, "session/new")
    assert opened["cwd"] == first and opened["additionalDirectories"] == [second]
    assert "first folder" not in text(view)


def test_an_agent_without_additional_directories_gets_one_notice(companion: Companion, tmp_path: Any) -> None:
    first, second = str(tmp_path / "app"), str(tmp_path / "lib")
    os.makedirs(first)
    os.makedirs(second)
    record = str(tmp_path / "record.jsonl")
    view = _open_chat(companion, [first, second], record)
    (opened,) = _records(record, "session/new")
    assert opened["cwd"] == first and "additionalDirectories" not in opened
    assert text(view).count("sees only the first folder") == 1
    assert "it cannot reach lib" in text(view).replace("\n> ", " ")


def test_nothing_is_read_or_sent_while_context_sharing_is_paused(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    path = _image(workspace)
    view = _open_chat(companion, [workspace], record, "image")
    window = view.window()
    assert window is not None
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
    assert control.run_from_palette(window, COMMAND, {"path": path})
    control.pump_until(lambda: "Context sharing is paused" in text(view), CEILING, "the refusal")
    assert chat_of(view).images == {} and "@shot.png" not in chat_of(view).panel.prompt_text()
    assert control.run_from_palette(window, "gemini_companion_toggle_sharing")  # resumed: it goes
    assert control.run_from_palette(window, COMMAND, {"path": path})
    control.pump_until(lambda: "@shot.png" in chat_of(view).panel.prompt_text(), CEILING, "the image's mention")


def test_a_typed_image_mention_goes_as_an_image_and_a_file_mention_as_a_file(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    _image(workspace, "ui.png")
    with open(os.path.join(workspace, "notes.txt"), "w", encoding="utf-8") as handle:
        handle.write("notes\n")
    view = _open_chat(companion, [workspace], record, "image")
    control.type_text(view, "compare @ui.png with @notes.txt")
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    control.pump_until(lambda: _records(record, "session/prompt"), CEILING, "the prompt to reach the agent")
    wait_turn(view)
    (prompt,) = _records(record, "session/prompt")
    kinds = [b["type"] for b in prompt["prompt"]]
    assert kinds.count("image") == 1 and "resource_link" in kinds, kinds  # notes.txt as a link, ui.png an image
    (image,) = [b for b in prompt["prompt"] if b["type"] == "image"]
    assert base64.b64decode(image["data"]) == PNG
    assert not [
        b for b in prompt["prompt"] if "ui.png" in json.dumps(b) and b["type"] != "image" and b["type"] != "text"
    ]


def test_a_typed_image_mention_for_an_agent_without_images_is_one_warning_and_the_text_goes(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = str(tmp_path / "record.jsonl")
    _image(workspace, "ui.png")
    view = _open_chat(companion, [workspace], record)  # no `image` capability
    control.type_text(view, "look at @ui.png")
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"
    control.pump_until(lambda: _records(record, "session/prompt"), CEILING, "the prompt to reach the agent")
    wait_turn(view)
    assert _records(record, "session/prompt")[0]["prompt"] == [{"type": "text", "text": "look at @ui.png"}]
    assert text(view).count("takes no images") == 1
