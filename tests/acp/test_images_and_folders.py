"""Images and every folder for the chat's agent (issue #40), with a scripted agent on the SDK's agent
side (tests/acp/capable_agent.py, a real subprocess) that records what it receives: an `image` block
whose base64 is the file's exact bytes with the type its bytes say, only for an agent that takes
images (another gets nothing, and the user one line); refusals for a file too big or not an image;
`additionalDirectories` = the window's other folders for an agent that takes them, one notice
naming the first folder for one that does not."""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSpec
from companion.acp.prompt.images import (
    IMAGE_LIMIT_BYTES,
    Image,
    ImageRefused,
    ImageRules,
    image_block,
    mime_type,
    named_like_image,
    read_image,
    rules_for,
)
from companion.acp.session import ChatSession
from tests.acp.conftest import AsyncEditor, RecordingView

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "capable_agent.py")
# The smallest real files of each kind: their first bytes are what the type is read from.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _records(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _session(folders: list[str], record: str, *capabilities: str) -> tuple[ChatSession, RecordingView]:
    view = RecordingView()
    spec = AgentSpec("Capable", (sys.executable, AGENT, *capabilities))
    env = {**os.environ, "CAPABLE_AGENT_RECORD": record}
    return ChatSession(spec, folders, AsyncEditor(), view, env=env), view


# -- images --


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("shot.png", PNG, "image/png"),
        ("photo.jpg", JPEG, "image/jpeg"),
        ("a.gif", GIF, "image/gif"),
        ("b.webp", WEBP, "image/webp"),
    ],
    ids=["png", "jpeg", "gif", "webp"],
)
async def test_an_image_reaches_the_agent_as_an_image_block_with_the_files_exact_bytes(
    workspace: str, tmp_path: Any, name: str, data: bytes, kind: str
) -> None:
    record = str(tmp_path / "record.jsonl")
    path = _write(os.path.join(workspace, name), data)
    session, _view = _session([workspace], record, "image")
    try:
        await session.start()
        image = await read_image(name, rules_for(session))
        assert isinstance(image, Image), image
        assert await session.prompt("what is this?", images=[image]) == "end_turn"
    finally:
        await session.close()
    (prompt,) = [r["params"]["prompt"] for r in _records(record) if r["method"] == "session/prompt"]
    assert prompt[0] == {"type": "text", "text": "what is this?"}
    (block,) = [b for b in prompt if b["type"] == "image"]
    assert base64.b64decode(block["data"]) == data
    assert block["mimeType"] == kind
    assert block["uri"] == f"file://{path}"


async def test_an_agent_without_image_support_gets_nothing_and_the_user_one_line(workspace: str, tmp_path: Any) -> None:
    record = str(tmp_path / "record.jsonl")
    _write(os.path.join(workspace, "shot.png"), PNG)
    session, _view = _session([workspace], record)  # no `image` capability
    try:
        await session.start()
        assert session.takes_images is False
        refused = await read_image("shot.png", rules_for(session))
        assert isinstance(refused, ImageRefused)
        assert str(refused) == (
            "Capable takes no images (its initialize does not offer promptCapabilities.image): nothing was sent; "
            "describe the image in words, or chat with an agent that takes images."
        )
        assert "\n" not in str(refused)
        # The session itself refuses an image for it too: the prompt does not leave.
        forged = Image(base64.b64encode(PNG).decode(), "image/png", "/x.png", "file:///x.png", "x.png", len(PNG))
        with pytest.raises(ImageRefused, match="takes no images"):
            await session.prompt("look", images=[forged])
    finally:
        await session.close()
    assert [r for r in _records(record) if r["method"] == "session/prompt"] == []


async def test_an_image_over_the_limit_is_refused_with_its_size_the_limit_and_what_to_do(workspace: str) -> None:
    path = _write(os.path.join(workspace, "big.png"), PNG + b"\0" * (6 * 1024 * 1024 - len(PNG)))
    refused = image_block(path, ImageRules("Capable", True, [workspace]))
    assert isinstance(refused, ImageRefused)
    assert str(refused) == (
        "The image big.png is 6 MB, over the 5 MB limit for images sent to an agent: nothing was sent; "
        "crop or scale it down (or save it as JPEG or WebP) and send it again."
    )
    assert IMAGE_LIMIT_BYTES == 5 * 1024 * 1024


async def test_a_png_that_is_really_text_is_refused(workspace: str) -> None:
    _write(os.path.join(workspace, "notes.png"), b"just some text, not a picture\n")
    refused = image_block("notes.png", ImageRules("Capable", True, [workspace]))
    assert isinstance(refused, ImageRefused)
    assert str(refused) == (
        "notes.png is not a PNG, JPEG, GIF or WebP image (its first bytes are not an image's, whatever its "
        "name says): nothing was sent; send a PNG, JPEG, GIF or WebP file."
    )


async def test_an_image_outside_the_folders_or_excluded_is_refused(workspace: str, tmp_path: Any) -> None:
    outside = _write(str(tmp_path / "outside.png"), PNG)
    rules = ImageRules("Capable", True, [workspace])
    refused = image_block(outside, rules)
    assert isinstance(refused, ImageRefused) and "outside the window's folders" in str(refused)
    os.symlink(outside, os.path.join(workspace, "link.png"))
    refused = image_block("link.png", rules)
    assert isinstance(refused, ImageRefused) and "symbolic link" in str(refused)
    _write(os.path.join(workspace, "secret.png"), PNG)
    refused = image_block("secret.png", ImageRules("Capable", True, [workspace], exclude=("secret.*",)))
    assert isinstance(refused, ImageRefused) and "context_exclude" in str(refused)
    refused = image_block("missing.png", rules)
    assert isinstance(refused, ImageRefused) and "does not exist" in str(refused)


def test_the_type_comes_from_the_bytes_and_a_pasted_path_is_told_by_its_name() -> None:
    assert [mime_type(d) for d in (PNG, JPEG, GIF, WEBP)] == ["image/png", "image/jpeg", "image/gif", "image/webp"]
    assert mime_type(b"RIFF\0\0\0\0WAVEfmt ") is None  # a RIFF that is not WebP
    assert mime_type(b"%PDF-1.7") is None
    assert named_like_image("/home/me/shot.PNG") and named_like_image(" '/tmp/a b.jpg' \n")
    assert named_like_image("file:///tmp/x.webp")
    assert not named_like_image("what is in shot.png?\nplease") and not named_like_image("notes.txt")


# -- every folder --


async def test_the_other_folders_go_as_additional_directories_to_an_agent_that_takes_them(tmp_path: Any) -> None:
    first, second = str(tmp_path / "app"), str(tmp_path / "lib")
    os.makedirs(first)
    os.makedirs(second)
    record = str(tmp_path / "record.jsonl")
    session, view = _session([first, second], record, "folders")
    try:
        await session.start()
    finally:
        await session.close()
    again, view_again = _session([first, second], record, "folders")
    try:
        await again.load("s1")
    finally:
        await again.close()
    new, load = [r for r in _records(record) if r["method"] in ("session/new", "session/load")]
    assert new["params"]["cwd"] == first and new["params"]["additionalDirectories"] == [second]
    assert load["params"]["cwd"] == first and load["params"]["additionalDirectories"] == [second]
    assert not [n for n in view.notices + view_again.notices if "first folder" in n]


async def test_an_agent_without_additional_directories_gets_the_first_folder_and_the_user_one_notice(
    tmp_path: Any,
) -> None:
    first, second = str(tmp_path / "app"), str(tmp_path / "lib")
    os.makedirs(first)
    os.makedirs(second)
    record = str(tmp_path / "record.jsonl")
    session, view = _session([first, second], record)
    try:
        await session.start()
        await session.prompt("hello")
    finally:
        await session.close()
    (new,) = [r for r in _records(record) if r["method"] == "session/new"]
    assert new["params"]["cwd"] == first and "additionalDirectories" not in new["params"]
    (notice,) = [n for n in view.notices if "first folder" in n]
    assert notice == (
        f"Capable sees only the first folder, {first} (it does not offer additionalDirectories): "
        "it cannot reach lib; open a chat in a window of that folder to work there."
    )


async def test_one_folder_sends_no_additional_directories_and_no_notice(workspace: str, tmp_path: Any) -> None:
    record = str(tmp_path / "record.jsonl")
    for capabilities in ((), ("folders",)):
        session, view = _session([workspace], record, *capabilities)
        try:
            await session.start()
        finally:
            await session.close()
        assert not [n for n in view.notices if "first folder" in n]
    opened = [r["params"] for r in _records(record)]
    assert [p["cwd"] for p in opened] == [workspace, workspace]
    assert not [p for p in opened if "additionalDirectories" in p]
