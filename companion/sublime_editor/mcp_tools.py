"""The workspace tools (list_files, read_file, write_file, ask_gemini, get_diagnostics) of each window's server.

The tools run on the server loop, which must never call the `sublime` API. So every window keeps a
`WorkspaceSnapshot`: the package settings and the window's exclude patterns, read on Sublime's
side (main thread or async worker) whenever they may have changed — at open, when the package
settings or Preferences change, when folders or the project change — and handed to the loop as one
immutable `WorkspaceToolSettings`. The tool handlers call the snapshot on every request, so a
changed limit or a tool turned off applies to the next call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sublime

from ..mcp_tools.settings import TOOL_NAMES, WorkspaceToolSettings
from . import settings

PREFERENCES = "Preferences.sublime-settings"
EXCLUDE_KEYS = ("folder_exclude_patterns", "file_exclude_patterns")


class WorkspaceSnapshot:
    """A window's current tool settings; the loop calls it, Sublime's side refreshes it.

    Replacing `value` is a single assignment, so the loop always sees a whole snapshot.
    """

    def __init__(self, value: WorkspaceToolSettings | None = None) -> None:
        self.value = value or WorkspaceToolSettings()

    def __call__(self) -> WorkspaceToolSettings:
        return self.value

    def refresh(self, window: sublime.Window) -> bool:
        """Read the settings again (on Sublime's side); True when the set of enabled tools changed."""
        before = self.value.enabled_tools
        self.value = read_settings(window)
        return self.value.enabled_tools != before


def enabled_tools(value: object) -> frozenset[str]:
    """`workspace_tools`: a map {"write_file": false, …} (missing tools stay on) or a list of enabled tools."""
    if isinstance(value, Mapping):
        return frozenset(name for name in TOOL_NAMES if value.get(name, True) is not False)
    if isinstance(value, (list, tuple)):
        return frozenset(name for name in TOOL_NAMES if name in value)
    return frozenset(TOOL_NAMES)


def _number(key: str) -> float | None:
    value = settings.settings().get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return value
    return None


def read_limit_bytes(key: str = "read_file_limit_kb") -> int | None:
    """A `…_limit_kb` setting in bytes (None when unset or invalid): read_file's limit by default,
    `chat_read_file_limit_kb` for a chat's agent."""
    read_kb = _number(key)
    return None if read_kb is None else max(1, int(read_kb * 1024))


def package_values() -> dict[str, Any]:
    """The package settings in `WorkspaceToolSettings.from_mapping` terms."""
    package = settings.settings()
    values: dict[str, Any] = {"enabled_tools": sorted(enabled_tools(package.get("workspace_tools")))}
    limit = _number("list_files_limit")
    if limit is not None:
        values["list_limit"] = int(limit)
    read_limit = read_limit_bytes()
    if read_limit is not None:
        values["read_limit_bytes"] = read_limit
    for key, field in (
        ("write_file_timeout_seconds", "write_timeout_seconds"),
        ("ask_gemini_timeout_seconds", "ask_timeout_seconds"),
    ):
        seconds = _number(key)
        if seconds is not None:
            values[field] = seconds
    values["ask_model"] = package.get("ask_model", "")
    values["gemini_command"] = package.get("gemini_command")
    values["use_gitignore"] = package.get("list_files_use_gitignore", True)
    return values


def exclude_patterns(window: sublime.Window) -> dict[str, list[str]]:
    """The window's `folder_exclude_patterns` / `file_exclude_patterns`, as its side bar applies them.

    The project's "settings" override Preferences (as for every setting), and the patterns of each
    project folder entry come on top (Sublime adds them for that folder; the tools have one list per
    window, so they apply to every folder of the window).
    """
    preferences = sublime.load_settings(PREFERENCES)
    project = window.project_data() or {}
    project_settings = project.get("settings") if isinstance(project, dict) else None
    folders = project.get("folders") if isinstance(project, dict) else None
    result: dict[str, list[str]] = {}
    for key in EXCLUDE_KEYS:
        if isinstance(project_settings, dict) and key in project_settings:
            base = project_settings.get(key)
        else:
            base = preferences.get(key, [])
        patterns = [p for p in base if isinstance(p, str)] if isinstance(base, list) else []
        for entry in folders if isinstance(folders, list) else []:
            extra = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(extra, list):
                patterns += [p for p in extra if isinstance(p, str) and p not in patterns]
        result[key] = patterns
    return result


def read_settings(window: sublime.Window) -> WorkspaceToolSettings:
    """Everything the tools need, read now (never on the server loop)."""
    values = package_values()
    if window.is_valid():
        values.update(exclude_patterns(window))
    return WorkspaceToolSettings.from_mapping(values)
