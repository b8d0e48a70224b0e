"""Running Gemini CLI's own IdeClient (Node, from tests/conformance/node_modules) in a benchmark."""

from __future__ import annotations

import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISSING = "needs node and tests/conformance/node_modules (run the test command once)"


def node() -> str | None:
    """The node executable, when it and the installed client are both there."""
    found = shutil.which("node")
    return found if found and os.path.isdir(os.path.join(ROOT, "tests", "conformance", "node_modules")) else None


def client_env(editor_pid: int, tmpdir: str | None = None) -> dict[str, str]:
    """The environment of a Gemini CLI started in Terminus beside the editor with PID `editor_pid`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env.update(
        GEMINI_CLI_IDE_PID=str(editor_pid),
        TERM_PROGRAM="Terminus-Sublime",
        SSH_CONNECTION=env.get("SSH_CONNECTION") or "bench 0 127.0.0.1 0",  # see gemini-cli-contract.md
    )
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir  # Node's os.tmpdir(): the client looks for discovery files in <TMPDIR>/gemini/ide
    return env
