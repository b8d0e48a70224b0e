"""The `agents` setting: the presets by name, and any ACP agent by `{name, command, args, env}`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..acp.agents import PRESETS, AgentSpec, custom_agent
from . import settings

DEFAULT_AGENTS: list[Any] = [{"name": "gemini"}, {"name": "claude"}]


@dataclass(frozen=True)
class ChatAgent:
    key: str  # the entry's name: what Continue Last Chat remembers sessions by
    spec: AgentSpec
    env: dict[str, str]


def parse(entries: object) -> tuple[list[ChatAgent], list[str]]:
    """The agents of the setting, and one line per entry that is not usable (with what to fix)."""
    if not isinstance(entries, list):
        return _presets(), ['the setting "agents" must be a list of {"name", "command", "args", "env"} objects']
    agents: list[ChatAgent] = []
    problems: list[str] = []
    for index, entry in enumerate(entries):
        agent = _one(entry) if isinstance(entry, dict) else None
        if isinstance(agent, ChatAgent):
            agents.append(agent)
        else:
            problems.append(f'"agents" entry {index + 1} is ignored: {agent or "it is not an object"}')
    return agents, problems


def _one(entry: dict[str, Any]) -> ChatAgent | str:
    name = entry.get("name")
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env", {})
    if not isinstance(name, str) or not name:
        return 'give it a "name" (gemini, claude, or your own with a "command")'
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return f'{name}: "args" must be a list of strings'
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return f'{name}: "env" must map names to string values'
    if command is None:
        preset = PRESETS.get(name)
        if preset is None:
            return f'{name}: not a preset (gemini, claude); give its "command"'
        return ChatAgent(name, replace(preset, command=(*preset.command, *args)), dict(env))
    if not isinstance(command, str) or not command:
        return f'{name}: "command" must be the program to run, as a string'
    spec = custom_agent([command, *args])
    return ChatAgent(name, replace(spec, name=PRESETS[name].name if name in PRESETS else name), dict(env))


def _presets() -> list[ChatAgent]:
    return [ChatAgent(key, PRESETS[key], {}) for key in ("gemini", "claude")]


def configured() -> tuple[list[ChatAgent], list[str]]:
    """From the settings (main thread: Sublime's settings API, no file I/O of ours)."""
    return parse(settings.settings().get("agents", DEFAULT_AGENTS))
