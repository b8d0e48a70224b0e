"""The `agents` setting: the presets by name (`{"name": "gemini"}`), and any ACP agent by
`{name, command, args, env, mode}` (AgentSpec.from_setting)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import sublime

from ...acp.agents import registry
from ...acp.agents.agents import PRESETS, AgentSetting, AgentSpec, agent_environment, custom_agent
from ...acp.agents.registry import RegistryAgent
from .. import settings

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


# -- the ACP registry's agents (New Chat) --


Listed = list[tuple[RegistryAgent, bool]]  # an agent, and whether its program is on PATH


def registry_agents(then: Callable[[Listed, str], None]) -> None:
    """The registry's agents, refreshed when due and allowed (`acp_registry_fetch`), and whether
    each is installed: on a thread of its own (file and network I/O; PATH lookups stat files);
    `then` gets them on the main thread, with one line when they are the shipped snapshot (why)."""
    allow = settings.settings().get("acp_registry_fetch", True) is not False
    folder = settings.cache_folder()

    def work() -> None:
        note = ""
        try:
            path = agent_environment().get("PATH")
            agents, note = registry.listing(folder, allow)
            found = [(agent, agent.installed(path)) for agent in agents]
        except Exception as exc:  # even the snapshot failed: New Chat still offers the setting's agents
            print(f"Gemini Companion: the ACP registry's agents are not listed: {exc}")
            found = []
        if note:
            print(f"Gemini Companion: the ACP registry's agents are {note}")
        sublime.set_timeout(lambda: then(found, note))

    threading.Thread(target=work, name="gemini-companion-acp-registry", daemon=True).start()


def not_configured(found: Listed, agents: list[ChatAgent]) -> Listed:
    """The registry's agents whose program no entry of the `agents` setting already runs."""
    programs = {os.path.splitext(os.path.basename(a.spec.command[0]))[0] for a in agents}
    return [(r, installed) for r, installed in found if r.program not in programs]


def registry_chat_agent(agent: RegistryAgent) -> ChatAgent:
    """An installed registry agent as New Chat starts it (a preset's program keeps the preset's
    reviewing mode, as a command line of the setting would)."""
    spec = replace(custom_agent([agent.program, *agent.args]), name=agent.name, env=dict(agent.env))
    return ChatAgent(f"registry:{agent.id}", replace(spec, install_hint=spec.install_hint or agent.install_command))
