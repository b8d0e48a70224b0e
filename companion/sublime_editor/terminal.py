"""Gemini CLI in a Terminus terminal of the window, and @-mentions sent to it.

Terminus forces `TERM_PROGRAM=Terminus-Sublime`, so the CLI recognises Sublime by the discovery
file's `ideInfo`; the environment below also pins it to this window's server (port tie-break,
PID, workspace and token fallbacks). The command runs through the user's login shell so PATH is
the one their terminal has (on macOS, Sublime started from the Dock has a minimal PATH).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import sublime

from ..runtime import WindowHandle
from . import settings

PANEL_NAME = "Gemini CLI"


def terminus_installed() -> bool:
    return bool(sublime.find_resources("Terminus.sublime-settings"))


def tag_for(window: sublime.Window) -> str:
    return f"gemini-companion-{window.id()}"


def terminal_env(handle: WindowHandle, editor_pid: int) -> dict[str, str]:
    return {
        "GEMINI_CLI_IDE_PID": str(editor_pid),
        "GEMINI_CLI_IDE_SERVER_PORT": str(handle.port),
        "GEMINI_CLI_IDE_WORKSPACE_PATH": os.pathsep.join(handle.folders),
        "GEMINI_CLI_IDE_AUTH_TOKEN": handle.token,
    }


def shell_command(gemini_command: Sequence[str], platform: str = sys.platform) -> list[str]:
    """`gemini_command` run through the user's login shell (cmd.exe on Windows)."""
    if platform == "win32":
        return ["cmd.exe", "/c", *gemini_command]
    shell = os.environ.get("SHELL") or "/bin/bash"
    # Interactive login shell: reads the profile and rc files where nvm/volta/homebrew set PATH.
    # No `exec`: the shell stays the CLI's parent, which is what Gemini CLI's PID walk expects.
    return [shell, "-l", "-i", "-c", shlex.join(gemini_command)]


def open_args(window: sublime.Window, handle: WindowHandle, folder: str, editor_pid: int) -> dict[str, Any]:
    """The exact `terminus_open` arguments for this window's Gemini CLI."""
    command = settings.get("gemini_command", ["gemini"])
    args: dict[str, Any] = {
        "cmd": shell_command([str(part) for part in command]),
        "cwd": folder,
        "title": PANEL_NAME,
        "tag": tag_for(window),
        "auto_close": False,  # Terminus' code default is True: keep the CLI's last words visible
        "focus": True,
        "env": terminal_env(handle, editor_pid),
    }
    if settings.get("terminal_location", "panel") == "panel":
        args["panel_name"] = PANEL_NAME
    return args


def find_terminal(window: sublime.Window) -> sublime.View | None:
    tag = tag_for(window)
    panel = window.find_output_panel(PANEL_NAME)
    if panel is not None and panel.settings().get("terminus_view.tag") == tag:
        return panel
    for view in window.views():
        if view.settings().get("terminus_view.tag") == tag:
            return view
    return None


def focus_terminal(window: sublime.Window, view: sublime.View) -> None:
    if view.sheet() is None:  # a panel
        window.run_command("show_panel", {"panel": f"output.{PANEL_NAME}"})
    window.focus_view(view)


def mention(path: str, folder: str | None, lines: tuple[int, int] | None = None) -> str:
    """`@relative/path#L12-40` (no range for a whole file), relative to the terminal's folder."""
    target = path
    if folder:
        relative = os.path.relpath(path, folder)
        if not relative.startswith(os.pardir):
            target = relative
    target = target.replace(os.sep, "/") if os.sep != "/" else target
    text = "@" + target.replace(" ", "\\ ")
    if lines is not None:
        first, last = lines
        text += f"#L{first}" if first == last else f"#L{first}-{last}"
    return text
