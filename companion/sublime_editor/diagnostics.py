"""What Sublime Text can honestly report as diagnostics, and selecting text for `openFile`.

The errors of the last build: the `exec` output panel's result regions, which Sublime parses with
the build system's `file_regex`/`line_regex` (`View.find_all_results_with_text`). Nothing else is
public: the LSP package keeps its diagnostics in its own objects with no documented API, so they
are not read (an empty answer is honest; an invented one is not). Main thread only.
"""

from __future__ import annotations

import os
from typing import Any

import sublime

BUILD_PANEL = "exec"
ERROR = 1  # LSP DiagnosticSeverity.Error: a build result line is an error or warning we cannot tell apart


def build_errors(window: sublime.Window, path: str | None) -> dict[str, list[dict[str, Any]]]:
    """The last build's results, by file, optionally only `path`'s."""
    panel = window.find_output_panel(BUILD_PANEL) if window.is_valid() else None
    if panel is None:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    for file_name, line, column, text in panel.find_all_results_with_text():
        file_path = os.path.normpath(file_name)
        if path is not None and os.path.normcase(file_path) != os.path.normcase(path):
            continue
        position = {"line": max(line - 1, 0), "character": max(column - 1, 0)}
        item = {"message": text, "severity": ERROR, "source": "build", "range": {"start": position, "end": position}}
        found.setdefault(file_path, []).append(item)
    return found


def select_text(view: sublime.View, start_text: str, end_text: str, tries: int = 50) -> None:
    """Select from the first occurrence of `start_text` to the end of the next `end_text` once the
    view has loaded (a file opens asynchronously)."""
    if view.is_loading():
        if tries > 0 and view.is_valid():
            sublime.set_timeout(lambda: select_text(view, start_text, end_text, tries - 1), 20)
        return
    start = view.find(start_text, 0, sublime.FindFlags.LITERAL)
    if start.a < 0:
        return
    end = view.find(end_text, start.b, sublime.FindFlags.LITERAL) if end_text else start
    region = sublime.Region(start.a, end.b if end.a >= 0 else start.b)
    view.sel().clear()
    view.sel().add(region)
    view.show_at_center(region)
