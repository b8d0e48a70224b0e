"""`@shot.png` in the headless chat's prompt (issue #40): the image reaches an agent that takes images
as an `image` block with the file's exact bytes; for one that does not, nothing is sent and the user
gets one line. The scripted agent tests/acp/capable_agent.py (SDK agent side) records what it gets."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from typing import Any

from tests.acp.capable_agent import REPLY
from tests.acp.conftest import CEILING, ROOT
from tests.acp.test_images_and_folders import PNG

AGENT = os.path.join(ROOT, "tests", "acp", "capable_agent.py")


def _chat(workspace: str, record: str, *capabilities: str, prompt: str | None = None, stdin: str | None = None) -> Any:
    turn = ["--prompt", prompt] if prompt is not None else []
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, *turn]
    argv += ["--", sys.executable, AGENT, *capabilities]
    env = {**os.environ, "PYTHONPATH": ROOT, "CAPABLE_AGENT_RECORD": record}
    return subprocess.run(argv, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=CEILING)


def _prompts(record: str) -> list[list[dict[str, Any]]]:
    if not os.path.exists(record):
        return []
    with open(record, encoding="utf-8") as handle:
        return [r["params"]["prompt"] for r in map(json.loads, handle) if r["method"] == "session/prompt"]


def _workspace(tmp_path: Any) -> str:
    workspace = str(tmp_path / "workspace")
    os.makedirs(os.path.join(workspace, "ui"))
    with open(os.path.join(workspace, "ui", "shot.png"), "wb") as handle:
        handle.write(PNG)
    return workspace


def test_an_image_mention_sends_the_image_with_the_prompt(tmp_path: Any) -> None:
    workspace, record = _workspace(tmp_path), str(tmp_path / "record.jsonl")
    result = _chat(workspace, record, "image", prompt="what is wrong in @ui/shot.png?")
    assert result.returncode == 0, result.stderr
    assert REPLY in result.stdout
    (prompt,) = _prompts(record)
    assert prompt[0] == {"type": "text", "text": "what is wrong in @ui/shot.png?"}
    (image,) = [b for b in prompt if b["type"] == "image"]
    assert base64.b64decode(image["data"]) == PNG and image["mimeType"] == "image/png"


def test_an_agent_without_images_gets_nothing_and_the_user_one_line(tmp_path: Any) -> None:
    workspace, record = _workspace(tmp_path), str(tmp_path / "record.jsonl")
    result = _chat(workspace, record, prompt="look at @ui/shot.png")
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "takes no images" in line, result.stderr
    assert _prompts(record) == []
    # Interactive: the one line, and the chat goes on with the next prompt.
    result = _chat(workspace, record, stdin="look at @ui/shot.png\nhello\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("takes no images") == 1
    assert _prompts(record) == [[{"type": "text", "text": "hello"}]]


def test_a_mention_of_no_file_is_text_and_a_fake_png_is_refused(tmp_path: Any) -> None:
    workspace, record = _workspace(tmp_path), str(tmp_path / "record.jsonl")
    with open(os.path.join(workspace, "fake.png"), "w", encoding="utf-8") as handle:
        handle.write("not an image\n")
    result = _chat(workspace, record, "image", prompt="about @missing.png")
    assert result.returncode == 0, result.stderr
    assert _prompts(record) == [[{"type": "text", "text": "about @missing.png"}]]
    result = _chat(workspace, record, "image", prompt="about @fake.png")
    assert result.returncode == 1
    assert "fake.png is not a PNG, JPEG, GIF or WebP image" in result.stderr
    assert len(_prompts(record)) == 1


def test_an_image_and_a_file_mentioned_together_go_as_an_image_and_a_file(tmp_path: Any) -> None:
    workspace, record = _workspace(tmp_path), str(tmp_path / "record.jsonl")
    with open(os.path.join(workspace, "notes.txt"), "w", encoding="utf-8") as handle:
        handle.write("notes\n")
    result = _chat(workspace, record, "image", prompt="compare @ui/shot.png with @notes.txt")
    assert result.returncode == 0, result.stderr
    (prompt,) = _prompts(record)
    assert [b["type"] for b in prompt] == ["text", "resource_link", "image"]
    assert prompt[1]["name"] == "notes.txt"
