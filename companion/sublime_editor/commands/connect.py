"""Gemini Companion: Connect Another Agent — ready-to-paste configuration for Claude Desktop and Claude Code.

The view is read-only scratch text the user copies from. It shows the real paths: the Python that
runs the stdio bridge (setting `bridge_python`, else `python3`/`python` on PATH), the folder or
`.sublime-package` file this package runs from (put on PYTHONPATH so `-m companion` imports; Python
imports it from the zip too), the window's folder, and for Claude Code's HTTP transport the
window's URL. The token is never in the view's text: Sublime's hot exit saves a scratch view's
text into the session (a project's `.sublime-workspace`, often inside the repository), and a
fixed `auth_token` stays valid. The line shows it masked, and a link below it copies the whole
command to the clipboard; the token lives only in that link's callback. A background thread checks
that the Python can import the bridge and the view is updated with the answer; the views are
closed when the package unloads, and views a restart brought back are closed when the window's
server starts (`review_ui.WindowReviews.close_leftovers`): their port and token are stale.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field

import sublime

from ...core.system.user_paths import expand_path
from ...gemini_ide.discovery import node_tmpdir
from .. import direct_access, settings
from ..connect_views import copy_links
from ..review_ui import CONNECT_SETTING
from ..windows import CompanionWindowCommand, state_of

VIEW_SETTING = CONNECT_SETTING
COPY_LINKS = "gemini_companion.connect.copy"
TOKEN_MASK = "<token: see Copy below>"
VIEW_NAME = "Gemini Companion: Connect Another Agent"
CHECK_TIMEOUT_SECONDS = 30.0


def _package_root() -> str:
    """The folder holding `companion/` (what PYTHONPATH needs), however deep this module sits in it."""
    parts = __name__.split(".")
    folder = os.path.abspath(__file__)
    for _ in range(len(parts) - parts.index("companion")):
        folder = os.path.dirname(folder)
    return folder


PACKAGE_ROOT = _package_root()
CHECKING = "checking that it can run the bridge…"


@dataclass
class ConnectInfo:
    platform: str  # sublime.platform(): "osx", "linux" or "windows"
    python: str | None
    python_source: str  # "setting bridge_python" or "found on PATH"
    package_root: str
    folders: list[str]
    url: str | None = None  # None: the window's server is not running
    token: str | None = None
    port_fixed: bool = False
    token_fixed: bool = False
    env: dict[str, str] = field(default_factory=dict)  # besides PYTHONPATH (TMPDIR where Sublime sets it)
    check: str = CHECKING
    mcp_requirement: str = "mcp==2.3.0"

    @property
    def server_name(self) -> str:
        base = os.path.basename(self.folders[0].rstrip("/\\")) if self.folders else ""
        slug = re.sub(r"[^a-z0-9_-]+", "-", base.lower()).strip("-")
        return f"sublime-{slug}" if slug else "sublime-text"

    def bridge_args(self) -> list[str]:
        args = ["-m", "companion", "bridge"]
        return [*args, "--workspace", self.folders[0]] if self.folders else args

    def bridge_env(self) -> dict[str, str]:
        return {"PYTHONPATH": self.package_root, **self.env}

    def join(self, argv: list[str]) -> str:
        return subprocess.list2cmdline(argv) if self.platform == "windows" else shlex.join(argv)

    def http_command(self, token: str) -> str:
        """Claude Code's `mcp add` over HTTP with `token` in its header (the real one only goes to the clipboard)."""
        return self.join([
            "claude", "mcp", "add", "--transport", "http", self.server_name, str(self.url),
            "--header", f"Authorization: Bearer {token}",
        ])  # fmt: skip


def find_python() -> tuple[str | None, str]:
    configured = expand_path(settings.get("bridge_python", "").strip())
    if configured:
        return configured, "setting bridge_python"
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found:
            return found, "found on PATH"
    return None, "found on PATH"


def desktop_config_path(platform: str) -> str:
    if platform == "osx":
        return "~/Library/Application Support/Claude/claude_desktop_config.json"
    if platform == "windows":
        return r"%APPDATA%\Claude\claude_desktop_config.json"
    return "~/.config/Claude/claude_desktop_config.json (Claude Desktop has no official Linux build)"


def connect_text(info: ConnectInfo) -> str:
    python = info.python or "python3"
    lines = [
        VIEW_NAME,
        "=" * len(VIEW_NAME),
        "",
        "Window folders: " + (", ".join(info.folders) if info.folders else "(none: open a folder first)"),
        f"Python for the bridge: {info.python or '(none found)'} ({info.python_source}) — {info.check}",
        f"This package (PYTHONPATH): {info.package_root}",
        "",
    ]
    if not info.folders:
        lines += [
            "This window has no folder, so the tools have nothing to list or read. Open a folder",
            "(File › Open Folder…), then run this command again.",
            "",
        ]
    if info.python is None:
        lines += [
            "No Python was found. The bridge needs Python 3.10 or newer with the mcp library: install",
            'one, then set "bridge_python" in the Gemini Companion settings to its full path.',
            "",
        ]
    desktop = {
        "mcpServers": {info.server_name: {"command": python, "args": info.bridge_args(), "env": info.bridge_env()}}
    }
    lines += [
        "1. Claude Desktop (through the stdio bridge)",
        "--------------------------------------------",
        f"Merge this into {desktop_config_path(info.platform)}",
        "(Claude Desktop › Settings › Developer › Edit Config), then restart Claude Desktop:",
        "",
        json.dumps(desktop, indent=2, ensure_ascii=False),
        "",
        "The bridge finds this window through its discovery file (by the folder), so it needs no port",
        "or token and keeps working when Sublime Text restarts; while Sublime Text or the window is",
        "closed its tools answer with an error saying so.",
        "",
        "2. Claude Code",
        "--------------",
        "a) Through the bridge (keeps working across restarts):",
        "",
    ]
    env_options: list[str] = []
    for key, value in info.bridge_env().items():
        env_options += ["-e", f"{key}={value}"]
    bridge_command = ["claude", "mcp", "add", info.server_name, *env_options, "--", python, *info.bridge_args()]
    lines += ["   " + info.join(bridge_command)]
    lines += ["", "b) Directly over HTTP (no Python needed):", ""]
    if info.url is None or info.token is None:
        lines += ["   This window's server is not running; see Gemini Companion: Status and Troubleshooting."]
    else:
        lines += ["   " + info.http_command(TOKEN_MASK), ""]
        if not (info.port_fixed and info.token_fixed):
            parts = (("the port (server_port)", info.port_fixed), ("the token (auth_token)", info.token_fixed))
            changing = " and ".join(what for what, fixed in parts if not fixed)
            lines += [
                f"   Warning: {changing} change every time Sublime Text starts, so this entry stops working",
                "   then. Set server_port and auth_token in the Gemini Companion settings to keep them, or use",
                "   the bridge.",
            ]
        lines += [
            "",
            "   Copy puts the command with this window's secret token in the clipboard: whoever has the token",
            "   can read these folders and propose changes while Sublime Text runs. Do not share it.",
        ]
    lines += [
        "",
        "Every write_file opens a review in Sublime Text that names the asking client; nothing is written",
        "until you accept it. The tools can be turned off one by one (setting workspace_tools).",
    ]
    if info.python is not None:
        lines += [
            "",
            "If the check above fails, install the library into that Python, e.g.",
            "   " + info.join([python, "-m", "pip", "install", info.mcp_requirement]),
            'or set "bridge_python" to a Python (a virtual environment, say) that has it.',
        ]
    return "\n".join(lines) + "\n"


def mcp_requirement() -> str:
    try:
        from importlib.metadata import version

        return f"mcp=={version('mcp')}"
    except Exception:
        return "mcp==2.3.0"


def gather(window: sublime.Window) -> ConnectInfo:
    python, source = find_python()
    env = {"TMPDIR": node_tmpdir()} if sublime.platform() != "windows" and os.environ.get("TMPDIR") else {}
    info = ConnectInfo(
        platform=sublime.platform(),
        python=python,
        python_source=source,
        package_root=PACKAGE_ROOT,
        folders=list(window.folders()),
        env=env,
        mcp_requirement=mcp_requirement(),
    )
    state = state_of(window)
    handle = state.handle if state is not None else None
    if handle is not None and handle.ready.done() and handle.ready.exception() is None and not handle.closed:
        info.url, info.token = handle.url, handle.token
        port, _ = direct_access.requested_port()
        info.port_fixed = bool(port) and handle.port == port
        info.token_fixed = direct_access.requested_token()[0] is not None
    return info


def check_python(python: str, package_root: str) -> str:
    """Can `python` import the bridge from `package_root`? (Blocking: runs on its own thread.)"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    env["PYTHONPATH"] = package_root
    code = "import sys, companion.bridge; print('%d.%d' % sys.version_info[:2])"
    try:
        done = subprocess.run(
            [python, "-c", code],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_SECONDS,
            creationflags=0x08000000 if sys.platform == "win32" else 0,  # CREATE_NO_WINDOW
        )
    except subprocess.TimeoutExpired:
        return f"✗ it did not answer within {CHECK_TIMEOUT_SECONDS:g} s"
    except OSError as exc:
        return f"✗ it could not be started: {exc.strerror or exc}"
    if done.returncode == 0:
        return f"✓ Python {done.stdout.strip()} runs the bridge"
    last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    return f"✗ it cannot run the bridge: {last}"


def show(window: sublime.Window) -> sublime.View:
    """Open the view (main thread) and start the Python check."""
    info = gather(window)
    view = window.new_file()
    view.set_scratch(True)
    view.set_name(VIEW_NAME)
    view.settings().set(VIEW_SETTING, True)
    view.settings().set("word_wrap", False)
    view.run_command("append", {"characters": connect_text(info), "force": True, "scroll_to_end": False})
    view.set_read_only(True)
    view.sel().clear()
    view.sel().add(sublime.Region(0, 0))
    copy_links[view.id()] = sublime.PhantomSet(view, COPY_LINKS)
    _render_copy_link(view, info)
    if info.python is not None:
        python = info.python

        def run_check() -> None:
            info.check = check_python(python, info.package_root)
            sublime.set_timeout(lambda: _update(view, info))

        threading.Thread(target=run_check, name="gemini-companion-python-check", daemon=True).start()
    else:
        info.check = "✗ no Python"
        _update(view, info)
    return view


def _update(view: sublime.View, info: ConnectInfo) -> None:
    if not view.is_valid():
        return
    view.set_read_only(False)
    view.run_command("gemini_companion_replace_text", {"text": connect_text(info)})
    view.set_read_only(True)
    view.set_scratch(True)
    _render_copy_link(view, info)


def _render_copy_link(view: sublime.View, info: ConnectInfo) -> None:
    """The Copy link under the masked command; its HTML holds no token, only its callback does."""
    phantoms = copy_links.get(view.id())
    token = info.token
    masked = view.find(TOKEN_MASK, 0, sublime.FindFlags.LITERAL)
    if phantoms is None:
        return
    if token is None or not masked:  # a miss: Region(-1, -1), or None in build 3's API
        phantoms.update([])
        return

    def copy(href: str) -> None:
        sublime.set_clipboard(info.http_command(token))
        sublime.status_message("Gemini Companion: the command with the token is in the clipboard")

    content = '<body id="gemini-companion-connect"><a href="copy">Copy this command with the token</a></body>'
    region = sublime.Region(view.line(masked).b)
    phantoms.update([sublime.Phantom(region, content, sublime.PhantomLayout.BLOCK, on_navigate=copy)])


class GeminiCompanionConnectAgentCommand(CompanionWindowCommand):
    """Show how to connect Claude Desktop or Claude Code to this window's tools."""

    needs_server = True

    def run(self) -> None:
        show(self.window)
