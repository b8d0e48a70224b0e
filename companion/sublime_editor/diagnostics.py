"""What Sublime Text can honestly report as diagnostics, and selecting text for `openFile`.

Two sources, both read through Sublime's public API from output panels the user can see:
- the errors of the last build: the `exec` panel's results, which Sublime parses with the build
  system's `file_regex`/`line_regex` (`View.find_all_results_with_text`);
- the LSP package's diagnostics while its Diagnostics panel shows ("LSP: Toggle Diagnostics
  Panel"): LSP rewrites that panel only while it is open, so a hidden one may be stale and is not
  read. Its lines are `<file>:` then `<line>:<col><kind> <message> \u200b<source>` (sublimelsp/LSP
  `plugin/core/panels.py` PanelName.Diagnostics, `types.py` PANEL_FILE_REGEX, `views.py`
  format_diagnostic_for_panel). LSP's own objects have no documented API and are never touched.
Nothing else is invented: no source, no diagnostics. Main thread only.
"""

from __future__ import annotations

import os
import re
from typing import Any

import sublime

BUILD_PANEL = "exec"
ERROR = 1  # LSP DiagnosticSeverity.Error: a build result line is an error or warning we cannot tell apart
LSP_PANEL = "diagnostics"
LSP_FILE = re.compile(r"^(\S.*):$")
# format_diagnostic_for_panel writes " {:>4}:{:<4}{:<8}{}" (line, column, kind, message): the column
# is padded to four characters with nothing after it, so from column 1000 the kind follows at once.
LSP_LINE = re.compile(r"^\s+(\d+):(\d+)\s*(error|warning|info|hint)\s+(.*?)(?:\s\u200b(.*))?$")
LSP_SEVERITY = {"error": 1, "warning": 2, "info": 3, "hint": 4}


def diagnostics(window: sublime.Window, path: str | None) -> dict[str, list[dict[str, Any]]]:
    """Every honest source, merged by file, optionally only `path`'s."""
    found = build_errors(window, path)
    for file_path, items in lsp_diagnostics(window, path).items():
        found.setdefault(file_path, []).extend(items)
    return found


def lsp_diagnostics(window: sublime.Window, path: str | None) -> dict[str, list[dict[str, Any]]]:
    """The LSP package's Diagnostics panel, when it is the panel showing (else it may be stale)."""
    if not window.is_valid() or window.active_panel() != f"output.{LSP_PANEL}":
        return {}
    panel = window.find_output_panel(LSP_PANEL)
    if panel is None:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    current: str | None = None
    for text in panel.substr(sublime.Region(0, panel.size())).split("\n"):
        if (file_match := LSP_FILE.match(text)) is not None:
            current = os.path.normpath(file_match.group(1))
            continue
        line_match = LSP_LINE.match(text)
        if current is None or line_match is None or not _wanted(current, path):
            continue
        line, column, kind, message, source = line_match.groups()
        item = _diagnostic(message, LSP_SEVERITY[kind], source or "LSP", int(line), int(column))
        found.setdefault(current, []).append(item)
    return found


def _wanted(file_path: str, path: str | None) -> bool:
    return path is None or os.path.normcase(file_path) == os.path.normcase(path)


def build_errors(window: sublime.Window, path: str | None) -> dict[str, list[dict[str, Any]]]:
    """The last build's results, by file, optionally only `path`'s."""
    panel = window.find_output_panel(BUILD_PANEL) if window.is_valid() else None
    if panel is None:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    for file_name, line, column, text in panel.find_all_results_with_text():
        file_path = os.path.normpath(file_name)
        if not _wanted(file_path, path):
            continue
        found.setdefault(file_path, []).append(_diagnostic(text, ERROR, "build", line, column))
    return found


def _diagnostic(message: str, severity: int, source: str, line: int, column: int) -> dict[str, Any]:
    """One diagnostic in LSP shape at a point (1-based `line` and `column` in, 0-based out)."""
    position = {"line": max(line - 1, 0), "character": max(column - 1, 0)}
    return {"message": message, "severity": severity, "source": source, "range": {"start": position, "end": position}}


def select_text(view: sublime.View, start_text: str, end_text: str, tries: int = 50) -> None:
    """Select from the first occurrence of `start_text` to the end of the next `end_text` once the
    view has loaded (a file opens asynchronously)."""
    if view.is_loading():
        if tries > 0 and view.is_valid():
            sublime.set_timeout(lambda: select_text(view, start_text, end_text, tries - 1), 20)
        return
    # A miss is Region(-1, -1) in build 4's API and was None in build 3's: both are falsy (the
    # region is empty), and a match of a non-empty text never is.
    start = view.find(start_text, 0, sublime.FindFlags.LITERAL)
    if not start:
        return
    end = view.find(end_text, start.b, sublime.FindFlags.LITERAL) if end_text else start
    region = sublime.Region(start.a, end.b if end else start.b)
    view.sel().clear()
    view.sel().add(region)
    view.show_at_center(region)
