"""Images and folders with the real agents, offline (issue #40): claude-agent-acp 0.101.0 takes
images (its `initialize` offers promptCapabilities.image) and passes our `image` block to its model
(the Messages API stand-in) as the file's own bytes; it takes additionalDirectories and tells its
model of the second folder; Gemini CLI 0.61.0 offers no additionalDirectories, so a window of two
folders gets the one notice."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.prompt.images import Image, read_image, rules_for
from companion.acp.session import ChatSession
from tests.acp.conftest import AgentSetup, AsyncEditor, RecordingView
from tests.acp.test_images_and_folders import PNG

pytestmark = pytest.mark.anyio


def _model_images(setup: AgentSetup) -> list[dict[str, Any]]:
    assert setup.model is not None
    found = []
    for request in setup.model.requests:
        for message in request.get("messages", []):
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                found += [b for b in content if isinstance(b, dict) and b.get("type") == "image"]
    return found


async def test_claude_passes_the_image_to_its_model_with_the_files_bytes(claude_factory: Any, workspace: str) -> None:
    setup = claude_factory("NoToolOfThisName", {})  # the model only answers "Done."
    with open(os.path.join(workspace, "shot.png"), "wb") as handle:
        handle.write(PNG)
    session = ChatSession(custom_agent(setup.command), [workspace], AsyncEditor(), RecordingView(), env=setup.env)
    try:
        await session.start()
        assert session.takes_images
        image = await read_image("shot.png", rules_for(session))
        assert isinstance(image, Image), image
        assert await session.prompt("What is in this image?", images=[image]) == "end_turn"
    finally:
        await session.close()
    (block, *_) = _model_images(setup)
    assert block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == PNG


async def test_gemini_sees_only_the_first_folder_and_the_user_is_told_once(gemini: AgentSetup, tmp_path: Any) -> None:
    gemini.record_turns([{"text": "unused"}])
    first, second = str(tmp_path / "app"), str(tmp_path / "lib")
    os.makedirs(first)
    os.makedirs(second)
    view = RecordingView()
    session = ChatSession(custom_agent(gemini.command), [first, second], AsyncEditor(), view, env=gemini.env)
    try:
        await session.start()
        assert session.takes_images and not session.takes_folders
    finally:
        await session.close()
    assert len([n for n in view.notices if "sees only the first folder" in n and "lib" in n]) == 1


async def test_claude_tells_its_model_the_second_folder_we_gave_it(claude_factory: Any, tmp_path: Any) -> None:
    first, second = str(tmp_path / "app"), str(tmp_path / "lib")
    os.makedirs(first)
    os.makedirs(second)
    setup = claude_factory("NoToolOfThisName", {})
    view = RecordingView()
    session = ChatSession(custom_agent(setup.command), [first, second], AsyncEditor(), view, env=setup.env)
    try:
        await session.start()
        assert session.takes_folders
        assert await session.prompt("hello") == "end_turn"
    finally:
        await session.close()
    assert not [n for n in view.notices if "first folder" in n]
    assert setup.model is not None
    told = json.dumps(setup.model.requests)
    assert f"Additional working directories:\\n  - {second}" in told  # its environment note, as JSON
