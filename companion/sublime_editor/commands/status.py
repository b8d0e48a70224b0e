"""Commands: Status and Troubleshooting, and pausing context sharing."""

from __future__ import annotations

import logging
import sys
import threading

import sublime

from ... import doctor
from ...gemini_ide.discovery import node_tmpdir, workspace_path
from .. import status
from .. import terminus as terminal
from ..windows import CompanionWindowCommand, WindowState, library_problem, registry, upgraded

log = logging.getLogger("gemini_companion")

DOCTOR_VIEW_SETTING = "gemini_companion.doctor"


def gather_facts(window: sublime.Window, state: WindowState | None) -> doctor.Facts:
    """What the main thread knows; `doctor.with_disk_facts` adds what must be read from disk."""
    python = sys.version.split()[0]
    common = {
        "build": sublime.version(),
        "platform": f"{sublime.platform()} {sublime.arch()}",
        "python": python,
        "libraries": {},
        "terminus_installed": terminal.terminus_installed(),
        "tmpdir": node_tmpdir(),
        "restart_needed": bool((problem := library_problem()) and problem.restart_needed),
        "upgraded": upgraded(),
        "gemini_command": terminal.agent_command(terminal.GEMINI),
        "claude_command": terminal.agent_command(terminal.CLAUDE),
    }
    if state is None:
        return doctor.Facts(
            server_state="stopped",
            url="",
            discovery=doctor.DiscoveryCheck(""),
            workspace_path="",
            clients=[],
            paused=False,
            last_context=[],
            **common,  # type: ignore[arg-type]
        )
    handle = state.handle
    if not handle.ready.done():
        server_state = "starting"
    elif handle.ready.exception() is not None:
        server_state = f"failed: {handle.ready.exception()}"
    else:
        server_state = "listening"
    reg = registry()
    others = [other.handle.folders for other in reg.all() if other is not state] if reg is not None else []
    return doctor.Facts(
        shared_folders=doctor.shared_folders(list(handle.folders), others),
        editor_pid=handle.runtime.editor_pid,
        server_state=server_state,
        url=handle.url,
        discovery=doctor.DiscoveryCheck(handle.discovery_path),
        workspace_path=workspace_path(handle.folders),
        clients=list(handle.connected_clients),
        paused=handle.context.paused,
        last_context=list(handle.last_context_paths),
        serves_gemini=handle.serves_gemini,
        serves_claude=handle.serves_claude,
        lock=doctor.DiscoveryCheck(handle.lock_path),
        lock_problem=handle.lock_problem,
        discovery_problem=handle.discovery_problem,
        claude_clients=list(handle.claude_clients),
        **common,  # type: ignore[arg-type]
    )


class GeminiCompanionStatusCommand(CompanionWindowCommand):
    """Gemini Companion: Status and Troubleshooting (a read-only report, never the token)."""

    def run(self) -> None:
        window, facts = self.window, gather_facts(self.window, self.state())

        def read_disk() -> None:  # library metadata and the discovery file: ~20 ms, never on the main thread
            text = doctor.report(doctor.with_disk_facts(facts))
            sublime.set_timeout(lambda: show_report(window, text))

        threading.Thread(target=read_disk, name="gemini-companion-doctor", daemon=True).start()


def show_report(window: sublime.Window, text: str) -> None:
    """The report in the window's doctor view (one per window, refreshed in place), focused."""
    if not window.is_valid():
        return
    view = next((v for v in window.views() if v.settings().get(DOCTOR_VIEW_SETTING)), None)
    if view is None:
        view = window.new_file()
        view.set_scratch(True)
        view.set_name("Gemini Companion: Status")
        view.settings().set(DOCTOR_VIEW_SETTING, True)
        view.assign_syntax("Packages/Markdown/Markdown.sublime-syntax")
    view.set_read_only(False)
    view.run_command("gemini_companion_replace_text", {"text": text})
    view.set_read_only(True)
    window.focus_view(view)


class GeminiCompanionToggleSharingCommand(CompanionWindowCommand):
    """Pause or resume sharing this window's open files and selection with Gemini CLI."""

    needs_server = True

    def run(self) -> None:
        state = self.state()
        if state is None:
            return
        context = state.handle.context
        context.set_paused(not context.paused)
        log.debug("context sharing %s for window %s", "paused" if context.paused else "resumed", self.window.id())
        status.show(state)
        word = "paused: Gemini CLI sees no open files" if context.paused else "resumed"
        sublime.status_message(f"Gemini Companion: context sharing {word}.")

    def description(self) -> str:
        state = self.state()
        paused = state is not None and state.handle.context.paused
        return "Gemini Companion: Resume Context Sharing" if paused else "Gemini Companion: Pause Context Sharing"
