"""Typed access to `Gemini Companion.sublime-settings`."""

from __future__ import annotations

from typing import TypeVar

import sublime

SETTINGS_FILE = "Gemini Companion.sublime-settings"
T = TypeVar("T", bool, int, float, str, list, dict)


def settings() -> sublime.Settings:
    return sublime.load_settings(SETTINGS_FILE)


def get(key: str, default: T) -> T:
    value = settings().get(key, default)
    return value if isinstance(value, type(default)) else default


def diff_layout() -> str:
    layout = get("diff_layout", "split")
    return layout if layout in ("split", "inline") else "split"
