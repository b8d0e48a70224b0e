"""The `agents` setting: the presets by name (`{"name": "gemini"}`), and any ACP agent by
`{name, command, args, env, mode}` (AgentSpec.from_setting)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..acp.agents import PRESETS, AgentSetting, AgentSpec
from . import settings

DEFAULT_AGENTS: list[Any] = [{"name": "gemini"}, {"name": "claude"}]


@dataclass(frozen=True)
class ChatAgent:
    key: str  # the entry's name: what Continue Last Chat remembers sessions by
    spec: AgentSpec


def parse(entries: object) -> tuple[list[ChatAgent], list[str]]:
    """The agents of the setting, and one line per entry that is not usable (with what to fix)."""
    if not isinstance(entries, list):
        return _presets(), ['the setting "agents" must be a list of {"name", "command", "args", "env", "mode"} objects']
    agents: list[ChatAgent] = []
    problems: list[str] = []
    for index, entry in enumerate(entries):
        try:
            agents.append(_one(entry))
        except AgentSetting as exc:
            problems.append(f'"agents" entry {index + 1} is ignored: {exc}')
    return agents, problems


def _one(entry: object) -> ChatAgent:
    """A preset by its name (its `args` added to its command line, its `env` to the environment,
    its `mode` instead of its reviewing mode), else an agent by its command line."""
    if isinstance(entry, dict) and "command" not in entry and entry.get("name") in PRESETS:
        preset = PRESETS[entry["name"]]
        spec = AgentSpec.from_setting({**entry, "command": list(preset.command)})
        return ChatAgent(entry["name"], replace(preset, command=spec.command, env=spec.env, mode=spec.mode))
    spec = AgentSpec.from_setting(entry)
    return ChatAgent(spec.name, spec)


def _presets() -> list[ChatAgent]:
    return [ChatAgent(key, PRESETS[key]) for key in ("gemini", "claude")]


def configured() -> tuple[list[ChatAgent], list[str]]:
    """From the settings (main thread: Sublime's settings API, no file I/O of ours)."""
    return parse(settings.settings().get("agents", DEFAULT_AGENTS))
