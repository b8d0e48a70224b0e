"""What the workspace tools may do, as the user configured it (standard library only).

The Sublime adapter fills `WorkspaceToolSettings` from the package settings (and Sublime's own
`folder_exclude_patterns` / `file_exclude_patterns`); the headless runner from its command line.
`factory.tool_factory(settings)` is what `Runtime.open_window(..., tool_factory=...)` takes. `settings`
may be a callable returning the current settings: handlers read it on every call, so limits and
switches changed while a window is open apply at once (a tool disabled later answers with an error;
a tool enabled later appears when the window's server restarts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

LIST_FILES = "list_files"
READ_FILE = "read_file"
WRITE_FILE = "write_file"
ASK_GEMINI = "ask_gemini"
GET_DIAGNOSTICS = "get_diagnostics"
TOOL_NAMES = (LIST_FILES, READ_FILE, WRITE_FILE, ASK_GEMINI, GET_DIAGNOSTICS)


@dataclass(frozen=True)
class WorkspaceToolSettings:
    enabled_tools: frozenset[str] = frozenset(TOOL_NAMES)
    list_limit: int = 10_000  # entries listed before the "truncated" marker
    read_limit_bytes: int = 100 * 1024
    write_timeout_seconds: float = 600.0  # no decision by then counts as rejected
    ask_timeout_seconds: float = 300.0
    ask_model: str = ""  # passed as `-m` when set
    gemini_command: tuple[str, ...] = ("gemini",)  # program (and leading arguments) of the Gemini CLI
    folder_exclude_patterns: tuple[str, ...] = ()
    file_exclude_patterns: tuple[str, ...] = ()
    use_gitignore: bool = True  # inside git repositories, leave out what .gitignore ignores

    def enabled(self, name: str) -> bool:
        return name in self.enabled_tools

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> WorkspaceToolSettings:
        """Build from settings-like values; wrong types fall back to the defaults.

        Keys: the field names, plus `disabled_tools` (a list) as the inverse of `enabled_tools`,
        and `gemini_command` as a string or a list of strings.
        """
        defaults = cls()
        kwargs: dict[str, Any] = {}
        enabled = _names(values.get("enabled_tools"), defaults.enabled_tools)
        disabled = _names(values.get("disabled_tools"), frozenset())
        kwargs["enabled_tools"] = frozenset(enabled - disabled)
        for name in ("list_limit", "read_limit_bytes"):
            value = values.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                kwargs[name] = value
        for name in ("write_timeout_seconds", "ask_timeout_seconds"):
            value = values.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                kwargs[name] = float(value)
        model = values.get("ask_model")
        if isinstance(model, str):
            kwargs["ask_model"] = model.strip()
        command = values.get("gemini_command")
        if isinstance(command, str) and command.strip():
            kwargs["gemini_command"] = (command.strip(),)
        elif isinstance(command, (list, tuple)) and command and all(isinstance(c, str) and c for c in command):
            kwargs["gemini_command"] = tuple(command)
        for name in ("folder_exclude_patterns", "file_exclude_patterns"):
            patterns = values.get(name)
            if isinstance(patterns, (list, tuple)):
                kwargs[name] = tuple(p for p in patterns if isinstance(p, str) and p)
        if isinstance(values.get("use_gitignore"), bool):
            kwargs["use_gitignore"] = values["use_gitignore"]
        return cls(**kwargs)


SettingsSource = WorkspaceToolSettings | Callable[[], WorkspaceToolSettings]


def current(source: SettingsSource) -> WorkspaceToolSettings:
    return source() if callable(source) else source


def _names(value: Any, default: frozenset[str]) -> frozenset[str]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return frozenset(v for v in value if isinstance(v, str) and v in TOOL_NAMES)
    return default


def describe_enabled(names: Iterable[str]) -> str:
    listed = [n for n in TOOL_NAMES if n in set(names)]
    return ", ".join(listed) if listed else "none"
