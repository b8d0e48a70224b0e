"""Answers no SDK agent would send (raw JSON-RPC lines, tests/acp/raw_agent.py): a malformed
`initialize` or `session/prompt` answer, a protocol version we do not speak, the agent's own error,
and agent strings built to drive the terminal. Each ends in one clear line naming the agent."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatFailed, ChatSession
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.raw_agent import AGENT_ERROR, REPLY
from tests.acp.test_bad_agents import error_line

RAW_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "raw_agent.py")
# What must never reach the terminal raw: ESC, BEL, a lone CR and RLO (OSC 0 and 52 start with ESC).
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\u202e")


def raw_chat(workspace: str, behaviour: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`chat` with the raw agent: one turn (`--prompt Hello`), or the prompts on `stdin`."""
    turn = ["--prompt", "Hello"] if stdin is None else []
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, *turn, *args]
    argv += ["--", sys.executable, RAW_AGENT, behaviour]
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(argv, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=CEILING)


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("init-version-huge", "answered initialize with something that is not ACP (protocolVersion: Input should be"),
        ("init-empty", "answered initialize with something that is not ACP (protocolVersion: Field required)"),
        ("init-null", "answered initialize with something that is not ACP (the answer: Input should be a valid"),
        ("prompt-empty", "answered the prompt with something that is not ACP (stopReason: Field required)"),
        ("prompt-unknown-stop", "answered the prompt with something that is not ACP (stopReason: Input should be"),
        ("prompt-null", "answered the prompt with something that is not ACP (the answer: Input should be a valid"),
    ],
)
def test_a_malformed_answer_ends_in_one_line_naming_the_agent_and_the_field(
    workspace: str, behaviour: str, reason: str
) -> None:
    result = raw_chat(workspace, behaviour)
    assert result.returncode == 1
    assert error_line(result).startswith(f"error: python {reason}"), result.stderr
    assert error_line(result).endswith("update the agent, or report it to its authors.")
    assert "Traceback" not in result.stderr and "pydantic" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.anyio
async def test_a_protocol_version_we_do_not_speak_ends_the_chat_with_that_reason(workspace: str) -> None:
    spec = custom_agent([sys.executable, RAW_AGENT, "init-version-2"])
    session = ChatSession(spec, [workspace], AsyncEditor(), RecordingView())
    try:
        with pytest.raises(ChatFailed) as failure:
            await session.start()
    finally:
        await session.close()
    assert str(failure.value) == (
        "python speaks ACP version 2, and this client speaks version 1; use a version of the agent that speaks ACP 1."
    )
    assert not session.session_id  # no session was opened with it


def test_the_agents_internal_error_is_shown_as_the_agents_error(workspace: str) -> None:
    result = raw_chat(workspace, "prompt-internal")
    assert result.returncode == 1
    assert error_line(result) == (
        f"error: python reported an error during the prompt: {AGENT_ERROR} (error -32603); "
        "try again, and if it keeps failing, see the agent's own logs."
    )


@pytest.mark.parametrize("behaviour", ["hostile-error", "hostile-login", "hostile-crash"])
def test_the_agents_words_in_the_error_line_cannot_drive_the_terminal(workspace: str, behaviour: str) -> None:
    result = raw_chat(workspace, behaviour)
    assert result.returncode == 1
    line = error_line(result)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in line and "\\u202eevil" in line, line  # shown, as escapes
    assert not any(c in result.stderr + result.stdout for c in RAW_CONTROLS), repr(result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_agents_mode_id_in_the_banner_cannot_drive_the_terminal(workspace: str) -> None:
    result = raw_chat(workspace, "hostile-mode", stdin="Hello\n")
    assert result.returncode == 0, result.stderr
    banner = next(line for line in result.stdout.splitlines() if line.startswith("Chat with "))
    assert "(mode: ask\\x1b[2J\\x1b]0;pwned title\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\rfake\\u202eevil)" in banner, banner
    assert not any(c in result.stdout for c in RAW_CONTROLS), repr(result.stdout)
    assert REPLY in result.stdout
