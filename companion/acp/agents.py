"""Which agent a chat runs: presets, the command line, its environment. No SDK import here."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..user_paths import expand_program


@dataclass(frozen=True)
class AgentSpec:
    """An ACP agent as a command line, and how to bring a new session to a reviewing mode."""

    name: str
    command: tuple[str, ...]
    install_hint: str = ""  # what to run when the program is missing
    login_hint: str = "log in with the agent itself, or set its API key"  # when it answers "auth required"
    review_mode: str | None = None  # set_mode to this when the session starts in another mode
    session_meta: Mapping[str, Any] = field(default_factory=dict)  # session/new `_meta`


# The modes are the agents' own ids (reference acp.md §2, §3). Claude starts in `auto`, where edits
# run without any permission request; `default` ("Manual") asks. Without bypassPermissions allowed,
# session/new also works as root (its `bypass_root` check).
PRESETS: dict[str, AgentSpec] = {
    "gemini": AgentSpec(
        "Gemini CLI",
        ("gemini", "--acp"),
        "npm install -g @google/gemini-cli",
        "run `gemini` once in a terminal to log in, or set GEMINI_API_KEY",
        review_mode="default",
    ),
    "claude": AgentSpec(
        "Claude",
        ("claude-agent-acp",),
        "npm install -g @agentclientprotocol/claude-agent-acp",
        "run `claude` once in a terminal to log in, or set ANTHROPIC_API_KEY",
        review_mode="default",
        session_meta={"claudeCode": {"options": {"allowDangerouslySkipPermissions": False}}},
    ),
}


class AgentNotFound(Exception):
    """The agent's program cannot be started; the message says how to install it."""


def custom_agent(command: Sequence[str]) -> AgentSpec:
    """Any ACP agent by command line. A preset's own program (`claude-agent-acp`, `gemini`) given
    by path keeps the preset's reviewing mode and session options, with the user's command line."""
    if not command:
        raise ValueError("give the agent's command after `--`, or --agent gemini|claude")
    program = os.path.basename(command[0])
    stem = os.path.splitext(program)[0] if program.lower().endswith((".cmd", ".exe", ".bat")) else program
    for preset in PRESETS.values():
        if preset.command[0] == stem:
            return replace(preset, command=tuple(command))
    return AgentSpec(program or command[0], tuple(command))


def resolve_command(spec: AgentSpec, env: Mapping[str, str]) -> list[str]:
    """The argv to start: the program found on the agent's PATH (no shell: arguments stay literal)."""
    argv = expand_program(spec.command)
    found = shutil.which(argv[0], path=env.get("PATH"))
    if found is None:
        if spec.install_hint:
            raise AgentNotFound(
                f"{spec.name} ({argv[0]!r}) was not found on PATH. Install it (`{spec.install_hint}`) "
                "or give the full path of its program."
            )
        raise AgentNotFound(
            f"{argv[0]!r} was not found on PATH; check the command, or give the full path of its program."
        )
    return [found, *argv[1:]]


def agent_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The user's environment without `GEMINI_CLI_IDE_*`: an ACP Gemini that also found the IDE
    companion would open a second review of the same edit (reference acp.md §2, "Double review")."""
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if not k.upper().startswith("GEMINI_CLI_IDE_")}
