"""`@relative/path` in a headless chat's prompt (issue #40): the file reaches the agent as a
resource, as Send File's do in Sublime; a mention of an excluded file or of one outside the
workspace is refused with one line on stderr, and the prompt's text goes unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.acp.conftest import CEILING, ROOT

AGENT = os.path.join(ROOT, "tests", "acp", "scripted_agent.py")


def chat(workspace: str, record: str, prompt: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", prompt]
    env = {**os.environ, "PYTHONPATH": ROOT, "SCRIPTED_AGENT_RECORD": record}
    return subprocess.run(
        [*argv, "--", sys.executable, AGENT, "embed"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING,
    )


def blocks_sent(record: str) -> list[dict[str, Any]]:
    with open(record, encoding="utf-8") as handle:
        (blocks,) = [json.loads(line) for line in handle]
    return blocks


def write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_a_mentioned_file_reaches_the_agent_as_a_resource(tmp_path: Any) -> None:
    workspace = os.path.realpath(str(tmp_path / "workspace"))
    notes = write(os.path.join(workspace, "notes.txt"), "one\ntwo\nthree\n")
    app = write(os.path.join(workspace, "src", "app.py"), "a = 1\nclass Foo:\n    pass\n")
    record = str(tmp_path / "prompts.jsonl")
    result = chat(workspace, record, "explain @notes.txt and @src/app.py#L2-3, ask @bob")
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr
    blocks = blocks_sent(record)
    assert blocks[0] == {"type": "text", "text": "explain @notes.txt and @src/app.py#L2-3, ask @bob"}
    assert blocks[1:] == [
        {"type": "resource", "resource": {"uri": f"file://{notes}", "text": "one\ntwo\nthree\n"}},
        {"type": "text", "text": f"[Lines 2-3 of {app}:]"},
        {"type": "resource", "resource": {"uri": f"file://{app}", "text": "class Foo:\n    pass\n"}},
    ]  # `@bob` names no file: plain text, no warning


def test_an_excluded_file_and_one_outside_are_refused_with_a_line_each(tmp_path: Any) -> None:
    workspace = os.path.realpath(str(tmp_path / "workspace"))
    write(os.path.join(workspace, ".env"), "TOKEN=secret-value\n")
    write(os.path.join(workspace, "build", "out.txt"), "built\n")
    write(os.path.join(workspace, ".gitignore"), "build/\n")
    os.makedirs(os.path.join(workspace, ".git"))
    write(str(tmp_path / "outside"), "outside-secret\n")
    record = str(tmp_path / "prompts.jsonl")
    prompt = "read @.env and @../outside and @build/out.txt"
    result = chat(workspace, record, prompt)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 3, result.stderr
    assert warnings[0].startswith("warning: @.env was not attached: it matches an exclusion"), warnings
    assert warnings[1].startswith("warning: @../outside was not attached: Refused '../outside'"), warnings
    assert "outside the workspace" in warnings[1]
    assert warnings[2].startswith("warning: @build/out.txt was not attached: it matches an exclusion"), warnings
    assert blocks_sent(record) == [{"type": "text", "text": prompt}]  # the text only, unchanged
    assert "secret-value" not in result.stdout + result.stderr


def test_a_mentioned_binary_file_costs_a_warning_and_the_prompt_goes_without_it(tmp_path: Any) -> None:
    """The agent takes files' text (embedded context): a binary file cannot go; the prompt still does."""
    workspace = os.path.realpath(str(tmp_path / "workspace"))
    os.makedirs(workspace)
    with open(os.path.join(workspace, "logo.bin"), "wb") as handle:
        handle.write(b"\x00\xff\xfe\x00binary")
    record = str(tmp_path / "prompts.jsonl")
    result = chat(workspace, record, "what is @logo.bin")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert "logo.bin is a binary file" in warning and "the prompt went without" in warning.lower(), warning
    assert blocks_sent(record) == [{"type": "text", "text": "what is @logo.bin"}]
