"""The per-user cache folder of the headless commands (`chat`, `changes`): what they keep between
runs, never synced, never inside a workspace. Inside Sublime the package's cache folder is
`sublime_editor/settings.cache_folder()` instead; both hold the same layout.

`GEMINI_COMPANION_CACHE` overrides it (tests, and users who keep caches elsewhere)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

ENV_NAME = "GEMINI_COMPANION_CACHE"


def user_cache_folder(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> str:
    """Where this user's caches go on this OS (the folder may not exist yet)."""
    env = os.environ if env is None else env
    if env.get(ENV_NAME):
        return os.path.abspath(env[ENV_NAME])
    home = os.path.expanduser("~")
    if platform == "win32":
        return os.path.join(env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local"), "Gemini Companion")
    if platform == "darwin":
        return os.path.join(home, "Library", "Caches", "Gemini Companion")
    return os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "gemini-companion")
