"""Typed access to `Gemini Companion.sublime-settings`, and where the package keeps its files."""

from __future__ import annotations

import os
from typing import TypeVar

import sublime

SETTINGS_FILE = "Gemini Companion.sublime-settings"
T = TypeVar("T", bool, int, float, str, list, dict)


def cache_folder() -> str:
    """The package's folder in Sublime's cache (what it keeps between runs; never synced)."""
    return os.path.join(sublime.cache_path(), "Gemini Companion")


def syntax_path() -> str:
    """The chat syntax in this package (its folder name is the top-level package's name)."""
    return f"Packages/{__name__.split('.')[0]}/Gemini Companion Chat.sublime-syntax"


def settings() -> sublime.Settings:
    return sublime.load_settings(SETTINGS_FILE)


def get(key: str, default: T) -> T:
    value = settings().get(key, default)
    return value if isinstance(value, type(default)) else default


def diff_layout() -> str:
    layout = get("diff_layout", "split")
    return layout if layout in ("split", "inline") else "split"


def serves_gemini() -> bool:
    """The Gemini CLI integration is on (its discovery file is written)."""
    return get("gemini_cli", True)


def serves_claude() -> bool:
    """Claude Code's /ide integration is on (its lock file is written, its WebSocket served)."""
    return get("claude_code", True)
