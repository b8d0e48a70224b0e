"""Privacy controls, as the real Gemini CLI client sees them.

The user opens Gemini CLI from the palette; the command line Terminus would spawn (login shell,
folder, environment) runs the real `IdeClient`. Then: pausing sharing sends an empty context and
the status bar says so; `context_exclude` keeps files out, applied as soon as the settings change;
`share_selection: false` shares cursors but no selected text. What the client received on the wire
never contains an excluded file or its text.
"""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from tests.conformance.harness import active_file, open_paths
from tests.sublime_editor.conftest import Companion, pkg, write
from tests.sublime_fake import control, sublime
from tests.workflow.conftest import SETTINGS, cli_command, open_cli, run_in_terminal, status_of

pytestmark = pytest.mark.conformance


def test_pause_exclude_and_selection_sharing_reach_the_real_client(
    companion: Companion, terminus: types.ModuleType, workspace: str, container_env: None
) -> None:
    control.user_settings(SETTINGS, {"gemini_command": cli_command()})
    window = control.new_window([workspace])
    app = write(workspace, "app.py", "def main():\n    return 42\n")
    log = write(workspace, "build.log", "compiled\n")
    secret = write(workspace, ".env", "API_KEY=do-not-share-1234\n")
    key = write(workspace, "deploy/id_ed25519", "PRIVATE KEY MATERIAL\n")
    companion.load()
    companion.ready(window)
    app_view = control.open_file(window, app)
    cli = run_in_terminal(open_cli(window, terminus))
    try:
        cli.wait_connected()
        control.pump_until(
            lambda: status_of(app_view) == "Gemini ● · Claude ○", 30, "the status bar to show the client"
        )
        cli.wait_context(lambda c: open_paths(c) == [app])

        # Excluded by default: never listed, their selection never shared, even while focused.
        secret_view = control.open_file(window, secret)
        control.select(secret_view, sublime.Region(0, 7))
        key_view = control.open_file(window, key)
        control.select(key_view, sublime.Region(0, 7))
        log_view = control.open_file(window, log)
        context = cli.wait_context(lambda c: open_paths(c) == [log, app])
        assert (active_file(context) or {}).get("path") == log

        # Paused: an empty context, the status bar says so; nothing moves while paused.
        assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
        cli.wait_context(lambda c: open_paths(c) == [])
        assert status_of(log_view) == "Gemini · Claude ⏸ paused"
        control.select(app_view, sublime.Region(0, 3))
        control.settle()
        assert open_paths(cli.contexts()[-1]) == []
        assert control.run_from_palette(window, "gemini_companion_toggle_sharing")
        context = cli.wait_context(lambda c: open_paths(c) == [app, log])
        assert (active_file(context) or {}).get("selectedText") == "def"
        control.pump_until(lambda: status_of(app_view) == "Gemini ● · Claude ○")

        # context_exclude is applied the moment the settings change.
        defaults = list(pkg("core.context").DEFAULT_EXCLUDES)
        control.user_settings(SETTINGS, {"context_exclude": [*defaults, "*.log"]})
        cli.wait_context(lambda c: open_paths(c) == [app])
        control.user_settings(SETTINGS, {"context_exclude": defaults})
        cli.wait_context(lambda c: open_paths(c) == [app, log])

        # share_selection off: the cursor still goes, the selected text does not.
        control.user_settings(SETTINGS, {"share_selection": False})
        control.select(app_view, sublime.Region(4, 8))
        context = cli.wait_context(lambda c: (active_file(c) or {}).get("cursor") == {"line": 1, "character": 9})
        assert "selectedText" not in (active_file(context) or {})
        control.user_settings(SETTINGS, {"share_selection": True})
        cli.wait_context(lambda c: (active_file(c) or {}).get("selectedText") == "main")
    finally:
        cli.stop()
    raw = [n["params"]["workspaceState"]["openFiles"] for n in cli.notifications("ide/contextUpdate")]
    assert [] in raw and any(f["path"] == log for files in raw for f in files)  # the wire check sees real traffic
    wire = json.dumps(cli.notifications())
    for leaked in (secret, key, "do-not-share", "API_KEY", "PRIVATE KEY"):
        assert leaked not in wire
    selections: list[Any] = [f.get("selectedText") for c in cli.contexts() for f in c["workspaceState"]["openFiles"]]
    assert "def" in selections and "main" in selections and "API_KEY" not in selections
