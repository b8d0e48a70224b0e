"""Tool calls in the terminal chat (issue #41): each location as `path:line`, the end of a call's
output under its line without terminal escapes. The agent is tool_agent.py, a real ACP agent."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.acp.conftest import CEILING, ROOT

TOOL_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool_agent.py")


def tool_chat(workspace: str, prompt: str, *options: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", prompt, *options]
    argv += ["--", sys.executable, TOOL_AGENT]
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING)


def test_the_terminal_chat_prints_locations_as_path_and_line_and_the_outputs_end(workspace: str) -> None:
    result = tool_chat(workspace, "tools")
    assert result.returncode == 0, result.stderr
    a, b, c = (os.path.join(workspace, n) for n in ("a.py", "b.py", os.path.join("sub", "c.py")))
    assert f"[tool execute: Run the tests ({a}:3, {b}:1, {c}) — completed]" in result.stdout, result.stdout
    lines = result.stdout.splitlines()
    at = lines.index(f"[tool execute: Run the tests ({a}:3, {b}:1, {c}) — completed]")
    assert lines[at + 1 : at + 5] == [
        "  │ line 1",
        "  │ <script>alert('x')</script>",
        "  │ red text",
        "  │ <b>bold?</b> & done",
    ]
    assert "\x1b" not in result.stdout and "[31m" not in result.stdout
