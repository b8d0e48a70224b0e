"""Project changes that the workspace tools must see (their exclude patterns live in the project)."""

from __future__ import annotations

import sublime
import sublime_plugin

from ..windows import registry


class GeminiCompanionWorkspaceListener(sublime_plugin.EventListener):
    def on_post_save_project_async(self, window: sublime.Window) -> None:
        reg = registry()
        if reg is not None:
            reg.sync_folders(window)  # folders and the tools' settings snapshot
