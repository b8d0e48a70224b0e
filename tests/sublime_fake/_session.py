"""Hot exit: what Sublime keeps of the open windows when it quits, and brings back at the next start.

With `hot_exit` on (the default), Sublime saves "open files, unsaved changes and layout" and
restores them when it starts again (sublimehq/sublime_text#6115, a maintainer's answer); unsaved
files and the state of windows go to the session file, a project window's to its
`.sublime-workspace` (sublimehq/sublime_text#5510). A scratch buffer is never dirty, yet it
comes back too, with its settings and its text: Terminus relies on it to bring a terminal back
(`event_listeners.py` L37–53 of randy3k/Terminus @ 403d10e re-runs `terminus_view.args` in the
restored view). So the fake writes every view's settings, and the text of every buffer that is
scratch, untitled or has unsaved changes, in the shape Sublime uses (JSON, `windows` → `buffers`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import _state

SESSION = os.path.join("Local", "Session.sublime_session")


def _buffer(host: _state.Host, view: _state.ViewData) -> dict[str, Any]:
    buffer = host.buffers[view.buffer_id]
    settings = host.settings[view.settings_id].values if view.settings_id in host.settings else {}
    saved: dict[str, Any] = {"file": buffer.file_name, "settings": dict(settings), "name": buffer.name}
    saved["scratch"] = buffer.scratch
    if buffer.scratch or buffer.file_name is None or buffer.change_count != buffer.saved_change_count:
        saved["contents"] = buffer.text
    return saved


def _window(host: _state.Host, window: _state.WindowData) -> dict[str, Any]:
    views = [
        host.views[sheet.view_id]
        for group in window.groups
        for sheet in (host.sheets[s] for s in group if s in host.sheets)
        if sheet.view_id is not None and sheet.view_id in host.views
    ]
    folders = [f.get("path") for f in (window.project_data or {}).get("folders", [])]
    return {"folders": folders, "buffers": [_buffer(host, v) for v in views if v.valid]}


def write(host: _state.Host) -> list[str]:
    """Save every window as hot exit does; returns the files written."""
    written: list[str] = []
    session: dict[str, Any] = {"windows": []}
    for window in (w for w in host.windows.values() if w.valid):
        saved = _window(host, window)
        if window.project_file:
            workspace = os.path.splitext(window.project_file)[0] + ".sublime-workspace"
            written.append(_dump(workspace, saved))
            session["windows"].append({"project": window.project_file})
        else:
            session["windows"].append(saved)
    if host.data_dir:
        written.append(_dump(os.path.join(host.data_dir, SESSION), session))
    return written


def _dump(path: str, data: dict[str, Any]) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    return path


def saved_buffers(path: str) -> list[dict[str, Any]]:
    """The buffers a session or workspace file holds (what the next start brings back)."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    windows = data.get("windows", [data])
    return [b for w in windows for b in w.get("buffers", [])]
