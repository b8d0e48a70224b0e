"""Line comments the agent reads (issue #41), headless: `changes --comment PATH:LINE TEXT` keeps a
comment in the per-user cache; the next `chat` prompt in that workspace carries it to the agent
(`edit_agent.py`, the SDK's agent side, records the prompt) with the path, the lines and their text
now, once. A comment whose line changed meanwhile is not sent (its text would be wrong) and the
user is told which; a comment on an excluded file (.env) is refused and nothing is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tests.acp.conftest import CEILING, ROOT
from tests.acp.test_any_agent_edits import AGENT, file_with, records, script


def companion(tmp_path: Any, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": ROOT,
        "GEMINI_COMPANION_CACHE": os.path.join(str(tmp_path), "cache"),
        "EDIT_AGENT_RECORD": os.path.join(str(tmp_path), "record.jsonl"),
        "EDIT_AGENT_PROMPTS": "1",
    }
    argv = (sys.executable, "-m", "companion", *argv)
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING)


def chat(tmp_path: Any, workspace: str, prompt: str) -> subprocess.CompletedProcess[str]:
    agent = (sys.executable, AGENT, script(tmp_path, []))
    result = companion(tmp_path, "chat", "--workspace", workspace, "--prompt", prompt, "--", *agent)
    assert result.returncode == 0, result.stderr
    return result


def sent(tmp_path: Any) -> list[list[str]]:
    return [entry["prompt"] for entry in records(tmp_path) if "prompt" in entry]


def test_a_comment_reaches_the_next_prompt_with_path_lines_and_current_text_once(workspace: str, tmp_path: Any) -> None:
    file_with(workspace, b"def area(r):\n    return 3 * r * r\n", "geometry.py")
    kept = companion(tmp_path, "changes", "--workspace", workspace, "--comment", "geometry.py:2", "use math.pi")
    assert kept.returncode == 0, kept.stderr
    chat(tmp_path, workspace, "fix what I said")
    chat(tmp_path, workspace, "anything else?")
    note = "[Note from the editor: the user commented on these lines:]\n\n"
    note += "geometry.py:2\n>     return 3 * r * r\nuse math.pi"
    assert sent(tmp_path) == [[note, "fix what I said"], ["anything else?"]]


def test_a_comment_whose_line_changed_is_not_sent_and_the_user_is_told(workspace: str, tmp_path: Any) -> None:
    path = file_with(workspace, b"a = 1\nb = 2\n", "values.py")
    companion(tmp_path, "changes", "--workspace", workspace, "--comment", "values.py:1", "why one?")
    companion(tmp_path, "changes", "--workspace", workspace, "--comment", "values.py:2", "b is fine")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("a = 10\nb = 2\n")  # line 1 changed after the comment
    result = chat(tmp_path, workspace, "go")
    (prompt,) = sent(tmp_path)
    assert "why one?" not in "".join(prompt) and "a = 1" not in "".join(prompt)
    assert "values.py:2\n> b = 2\nb is fine" in prompt[0]
    assert "Not sent: the comment(s) on values.py:1, whose lines changed" in result.stderr


def test_a_comment_on_an_excluded_file_or_a_missing_line_is_refused_and_nothing_is_kept(
    workspace: str, tmp_path: Any
) -> None:
    file_with(workspace, b"TOKEN=secret\n", ".env")
    file_with(workspace, b"one\n", "short.txt")
    refused = companion(tmp_path, "changes", "--workspace", workspace, "--comment", ".env:1", "rotate it")
    assert refused.returncode == 1 and "excluded" in refused.stderr
    missing = companion(tmp_path, "changes", "--workspace", workspace, "--comment", "short.txt:5", "here")
    assert missing.returncode == 1 and "no line(s) 5" in missing.stderr
    chat(tmp_path, workspace, "go")
    assert sent(tmp_path) == [["go"]]
