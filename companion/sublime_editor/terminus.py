"""The agents' terminals (Gemini CLI, Claude Code) in Terminus, and @-mentions typed into them.

Terminus forces `TERM_PROGRAM=Terminus-Sublime`, so Gemini CLI recognises Sublime by the discovery
file's `ideInfo`; the environment below also pins each agent to this window's server (Gemini: port
tie-break, PID and workspace fallback; Claude Code: `CLAUDE_CODE_SSE_PORT`, which makes it connect
at start to the lock file with that port). Never the token: the agents read it from their files.
The command runs through the user's login shell so PATH is the one their terminal has (on macOS,
Sublime started from the Dock has a minimal PATH).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sublime

from ..claude_ide.protocol import PORT_ENV
from ..core.system.user_paths import expand_program
from ..runtime import WindowHandle
from . import settings


@dataclass(frozen=True)
class Agent:
    """An agent the window serves and can open a terminal for."""

    key: str  # "gemini" or "claude": remembered as the window's last used agent
    title: str  # the terminal's panel and tab name
    command_setting: str
    default_command: tuple[str, ...]
    tag_prefix: str


GEMINI = Agent("gemini", "Gemini CLI", "gemini_command", ("gemini",), "gemini-companion")
CLAUDE = Agent("claude", "Claude Code", "claude_command", ("claude",), "gemini-companion-claude")
AGENTS = (GEMINI, CLAUDE)
PANEL_NAME = GEMINI.title


def agent_command(agent: Agent) -> list[str]:
    """The program (with `~` expanded) and arguments the user set for `agent`."""
    return expand_program(settings.get(agent.command_setting, list(agent.default_command)))


def agent_named(key: str | None) -> Agent | None:
    return next((agent for agent in AGENTS if agent.key == key), None)


def terminus_installed() -> bool:
    return bool(sublime.find_resources("Terminus.sublime-settings"))


def tag_for(window: sublime.Window, agent: Agent = GEMINI) -> str:
    return f"{agent.tag_prefix}-{window.id()}"


# The agent terminal each window focused last, in the order the main thread saw focus move (window
# id -> view id; a file focused since removes it). An `_async` activation runs later, on the shared
# worker, possibly after the user has opened the other agent: it must not undo that choice.
_focused: dict[int, int] = {}


def note_focus(view: sublime.View, window: sublime.Window) -> Agent | None:
    """Main thread, as `view` gets the focus: the agent whose terminal it is, remembered as the
    window's focused one (None for any other view)."""
    tag = view.settings().get("terminus_view.tag")
    agent = next((agent for agent in AGENTS if tag == tag_for(window, agent)), None)
    if agent is not None:
        _focused[window.id()] = view.id()
    else:
        _focused.pop(window.id(), None)
    return agent


def agent_of_terminal(view: sublime.View, window: sublime.Window) -> Agent | None:
    """The agent whose terminal of `window` this view is (any run), while it is still the terminal
    the window focused last; else None."""
    if _focused.get(window.id()) != view.id():
        return None
    tag = view.settings().get("terminus_view.tag")
    return next((agent for agent in AGENTS if tag == tag_for(window, agent)), None)


# Which run of Sublime Text started a terminal (its editor PID). Terminus restores a terminal tab
# after a restart, with the arguments it was opened with; one from an earlier run is not ours to use.
RUN_SETTING = "gemini_companion.editor_pid"


def terminal_env(handle: WindowHandle, editor_pid: int, agent: Agent = GEMINI) -> dict[str, str]:
    """What pins the agent to this window's server. No token: Terminus keeps these variables in the
    view's settings (`terminus_view.args`), which Sublime writes to the session file; the agent
    reads the token from the discovery or lock file it finds through them."""
    if agent is CLAUDE:
        return {PORT_ENV: str(handle.port)}
    return {
        "GEMINI_CLI_IDE_PID": str(editor_pid),
        "GEMINI_CLI_IDE_SERVER_PORT": str(handle.port),
        "GEMINI_CLI_IDE_WORKSPACE_PATH": os.pathsep.join(handle.folders),
    }


def shell_command(gemini_command: Sequence[str], platform: str = sys.platform) -> list[str]:
    """`gemini_command` run through the user's login shell (cmd.exe on Windows)."""
    if platform == "win32":
        return ["cmd.exe", "/c", *gemini_command]
    shell = os.environ.get("SHELL") or _account_shell() or "/bin/sh"
    # Interactive login shell: reads the profile and rc files where nvm/volta/homebrew set PATH.
    # No `exec`: the shell stays the CLI's parent, which is what Gemini CLI's PID walk expects.
    return [shell, "-l", "-i", "-c", shlex.join(gemini_command)]


def _account_shell() -> str | None:
    """The account's login shell (Sublime started from the Dock or a launcher may have no SHELL)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_shell or None
    except (ImportError, KeyError, OSError):
        return None


def _literal(text: str) -> str:
    """`text` as Terminus must take it to end up with `text`. It runs `cmd` and `cwd` through
    `sublime.expand_variables` (randy3k/Terminus @ 403d10e, `commands.py` L116, L163), whose snippet
    syntax reads `$VAR` / `${VAR}` as variables, `\\$` as a `$` and `\\\\` as one backslash: a UNC
    folder `\\\\server\\share` would arrive as `\\server\\share` (sublimehq/sublime_text#4826,
    SublimeTextIssues/Core#1878), not a folder, and Terminus would run in the home folder (L171–174)."""
    return text.replace("\\", "\\\\").replace("$", "\\$")


def open_args(
    window: sublime.Window, handle: WindowHandle, folder: str, editor_pid: int, agent: Agent = GEMINI
) -> dict[str, Any]:
    """The exact `terminus_open` arguments for this window's terminal of `agent`."""
    args: dict[str, Any] = {
        **command_args(agent_command(agent), folder, agent.title),
        "tag": tag_for(window, agent),
        "env": terminal_env(handle, editor_pid, agent),
        # Terminus' default re-runs the command when a restored terminal is activated after a
        # restart, with this run's port and PID: the user opens a fresh one from this run instead.
        "reactivable": False,
        "view_settings": {RUN_SETTING: editor_pid},
    }
    if settings.get("terminal_location", "panel") == "panel":
        args["panel_name"] = agent.title
    return args


def find_terminal(window: sublime.Window, editor_pid: int, agent: Agent = GEMINI) -> sublime.View | None:
    """The window's running terminal of `agent`. Not one that finished (the user quit the agent;
    auto_close is off), nor one restored from an earlier run of Sublime Text (its process is gone)."""
    tag = tag_for(window, agent)
    panel = window.find_output_panel(agent.title)
    for view in ([panel] if panel is not None else []) + window.views():
        view_settings = view.settings()
        if (
            view_settings.get("terminus_view.tag") == tag
            and not view_settings.get("terminus_view.finished")
            and view_settings.get(RUN_SETTING) == editor_pid
        ):
            return view
    return None


# Terminus draws a terminal for the first time only after it has registered it and spawned its
# process, and that first render sets this setting (randy3k/Terminus @ 403d10e: render.py L150–154
# runs `terminus_show_cursor`, whose `scroll_to_cursor` sets it, L319–322 and L354–361). The view's
# other settings, its tag included, exist a moment earlier, while Terminus does not know the
# terminal yet (commands.py L540–562: `terminus_initialize_view`, then `Terminal.start`, terminal.py
# L206–233), and `terminus_open` erases this one when it reuses a view (commands.py L468–472).
LIVE_SETTING = "terminus_view.viewport_y"


def live_terminal(window: sublime.Window, editor_pid: int, agent: Agent = GEMINI) -> sublime.View | None:
    """The window's terminal of `agent` once Terminus runs it and can type into it, else None."""
    view = find_terminal(window, editor_pid, agent)
    return view if view is not None and view.settings().has(LIVE_SETTING) else None


def type_into(view: sublime.View, text: str) -> None:
    """Type `text` at the prompt of the terminal shown by `view` (a live terminal).

    `terminus_paste_text` on the terminal's own view, rather than `terminus_send_string` with its
    tag: that one looks tags up in the active window only (`Terminal.from_tag`,
    `current_window_only=True`, terminal.py L53–65) and otherwise types into the calling window's
    most recent terminal (commands.py L974–1061), which may be another agent's. `bracketed` false
    is what `terminus_send_string` passes by default (commands.py L1093, L1110–1111)."""
    view.run_command("terminus_paste_text", {"text": text, "bracketed": False})


def focus_terminal(window: sublime.Window, view: sublime.View, agent: Agent = GEMINI) -> None:
    if view.sheet() is None:  # a panel
        window.run_command("show_panel", {"panel": f"output.{agent.title}"})
    window.focus_view(view)


def mention(path: str, folder: str | None, lines: tuple[int, int] | None = None) -> str:
    """`@relative/path#L12-40` (no range for a whole file), relative to the terminal's folder."""
    target = path
    if folder:
        try:
            relative = os.path.relpath(path, folder)
        except ValueError:  # Windows: another drive
            relative = os.pardir
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            target = relative
    target = target.replace(os.sep, "/") if os.sep != "/" else target
    text = "@" + target.replace(" ", "\\ ")
    if lines is not None:
        first, last = lines
        text += f"#L{first}" if first == last else f"#L{first}-{last}"
    return text


def command_args(command: Sequence[str], folder: str, title: str) -> dict[str, Any]:
    """`terminus_open` arguments that run `command` once in `folder`, through the login shell (where
    npm and uv are on PATH), and keep the terminal open to show how it went."""
    return {
        "cmd": [_literal(part) for part in shell_command(command)],
        "cwd": _literal(folder),
        "title": title,
        "auto_close": False,  # Terminus' code default is True: keep the command's last words visible
        "focus": True,
    }


# Variables whose names say they hold a secret: Terminus keeps `env` in the view's settings, which
# Sublime writes to the session file, so these never go to it (a login needs none of them: they are
# what a login replaces).
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE")


def login_args(argv: Sequence[str], folder: str, title: str, env: Mapping[str, str]) -> dict[str, Any]:
    """`terminus_open` arguments for an agent's terminal login: its own program (a full path already,
    so no login shell), in a tab that stays open to show how it went; `env` without secrets."""
    return {
        "cmd": [_literal(part) for part in argv],
        "cwd": _literal(folder),
        "title": title,
        "env": {k: v for k, v in env.items() if not any(word in k.upper() for word in _SECRET_WORDS)},
        "auto_close": False,
        "focus": True,
    }
