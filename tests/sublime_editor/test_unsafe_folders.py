"""A discovery or lock folder of another user, in Sublime (issue #24, 5): the window still serves
the other agent, the status bar says which agent is refused, the doctor says why and what to do, and
nothing token-bearing lands in that folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.sublime_editor.conftest import Companion, write
from tests.sublime_fake import control, sublime
from tests.workflow.test_status_doctor import doctor_text

NOBODY = 65534
pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() != 0, reason="needs POSIX owners and chown to another user (root)"
)


def theirs(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o777)
    return path


def status_after_start(companion: Companion, workspace: str) -> tuple[sublime.Window, str]:
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)
    view = control.open_file(window, write(workspace, "a.py", "x\n"))
    control.settle()
    return window, view.get_status("gemini_companion")


def test_a_refused_lock_folder_shows_on_claude_and_gemini_keeps_its_window(
    companion: Companion, workspace: str, tmp_path: Path
) -> None:
    locks = theirs(tmp_path / "claude" / "ide")
    window, status = status_after_start(companion, workspace)
    assert status == "Gemini ○ · Claude ✕ unsafe folder"
    assert os.listdir(locks) == []
    assert len(companion.discovery_files()) == 1  # Gemini CLI still finds the window
    _view, text = doctor_text(window)
    assert f"Refused to write Claude Code's lock file in {locks}: it belongs to nobody (uid 65534)" in text
    assert "CLAUDE_CONFIG_DIR" in text and "Remove that folder" in text


def test_a_refused_discovery_folder_shows_on_gemini_and_claude_keeps_its_window(
    companion: Companion, workspace: str, tmp_path: Path
) -> None:
    gemini = theirs(tmp_path / "tmp" / "gemini")
    window, status = status_after_start(companion, workspace)
    assert status == "Gemini ✕ unsafe folder · Claude ○"
    assert list(gemini.rglob("*")) == []
    assert len(os.listdir(tmp_path / "claude" / "ide")) == 1  # Claude Code still finds the window
    _view, text = doctor_text(window)
    assert f"Refused to write the discovery file in {gemini / 'ide'}: {gemini} above it belongs to nobody" in text
    assert "TMPDIR" in text and "The discovery file is missing" not in text
