"""Which agent a chat runs: presets, the command line, its environment. No SDK import here."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.system.user_paths import expand_program, find_program


@dataclass(frozen=True)
class AgentSpec:
    """An ACP agent as a command line, and how to bring a new session to a reviewing mode."""

    name: str
    command: tuple[str, ...]
    install_hint: str = ""  # what to run when the program is missing
    login_hint: str = "log in with the agent itself, or set its API key"  # when it answers "auth required"
    review_mode: str | None = None  # set_mode to this when the session starts in another mode
    mode: str | None = None  # the user's choice (`mode` in the setting, `--mode`): wins over the rest
    session_meta: Mapping[str, Any] = field(default_factory=dict)  # session/new `_meta`
    env: Mapping[str, str] = field(default_factory=dict)  # added to the user's environment

    @classmethod
    def from_setting(cls, entry: object) -> AgentSpec:
        """An agent of the settings: `{"name": str, "command": [program, ...] | program,
        "args": [str, ...], "env": {str: str}, "mode": str}`. AgentSetting says what is wrong with a
        bad entry."""
        if not isinstance(entry, dict):
            raise AgentSetting(f"an agent must be an object like {_EXAMPLE}, not {entry!r}")
        unknown = sorted(set(entry) - {"name", "command", "args", "env", "mode"})
        if unknown:
            raise AgentSetting(
                f"unknown key(s) {unknown} in agent {entry.get('name')!r}; use name, command, args, env, mode"
            )
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise AgentSetting(f'an agent needs a "name" (a non-empty string), as in {_EXAMPLE}')
        command = entry.get("command")
        command = [command] if isinstance(command, str) else command
        args = entry.get("args", [])
        if not _strings(command) or not command or not command[0].strip():
            raise AgentSetting(f'agent {name!r} needs a "command": its program, or a list of program and arguments')
        if not _strings(args):
            raise AgentSetting(f'"args" of agent {name!r} must be a list of strings')
        env = entry.get("env", {})
        if not isinstance(env, dict) or not _strings(list(env)) or not _strings(list(env.values())):
            raise AgentSetting(f'"env" of agent {name!r} must map names to strings, as in {{"KEY": "value"}}')
        mode = entry.get("mode")
        if mode is not None and (not isinstance(mode, str) or not mode.strip()):
            raise AgentSetting(f'"mode" of agent {name!r} must be the id of one of its modes, as in "ask"')
        spec = custom_agent([*command, *args])
        return replace(spec, name=name.strip(), env=dict(env), mode=mode.strip() if mode else None)


_EXAMPLE = '{"name": "Codex", "command": ["codex-acp"], "args": [], "env": {}}'


class AgentSetting(ValueError):
    """An agent entry of the settings is malformed; the message says what to write instead."""


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


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


def demo_agent(python: str) -> AgentSpec:
    """The built-in offline agent (acp/agents/demo_agent.py), run by `python`: the headless chat's only, since
    the plugin host's executable is Sublime Text, not a Python."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_agent.py")
    return AgentSpec("Demo agent", (python, script), login_hint="the demo agent needs no login")


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
    found = find_program(argv[0], path=env.get("PATH"))  # not the current folder (Windows' rule)
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


TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")  # what Node's os.tmpdir() reads, POSIX and Windows


def with_private_temp(env: Mapping[str, str], folder: str) -> dict[str, str]:
    """`env` with the temporary folder moved to the chat's own `folder`.

    Dropping GEMINI_CLI_IDE_* is not enough: with `ide.enabled` in the user's settings, Gemini CLI
    still finds the window's discovery file in `os.tmpdir()/gemini/ide` by its workspace path
    (getConnectionConfigFromFile in @google/gemini-cli-core 0.61.0), connects as an IDE client and
    opens a second review of every edit it already asks about over ACP. In a folder of its own it
    finds none; the chat's review is the one review."""
    return {**env, **{name: folder for name in TEMP_VARIABLES}}
