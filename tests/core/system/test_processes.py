"""Which process is the editor: the PID in the discovery file's name, which Gemini CLI matches
against its own process tree (GEMINI_CLI_IDE_PID in a Terminus terminal, else its ancestors)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import psutil
import pytest

from companion.core.system.processes import editor_pid, pid_alive

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_without_the_editors_path_the_parent_is_the_editor() -> None:
    # Sublime starts each plugin host as a child of sublime_text.
    assert editor_pid(None) == os.getppid()
    assert editor_pid("") == os.getppid()


def test_the_parent_is_the_editor_when_its_executable_matches() -> None:
    assert editor_pid(psutil.Process(os.getppid()).exe()) == os.getppid()


def test_a_path_that_matches_no_ancestor_falls_back_to_the_parent(tmp_path: str) -> None:
    assert editor_pid(os.path.join(str(tmp_path), "not-sublime_text")) == os.getppid()


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell between two processes")
def test_the_walk_goes_up_to_the_ancestor_running_the_editors_executable() -> None:
    """A plugin host started through a wrapper (a shell here) still finds the editor above it."""
    code = f"from companion.core.system.processes import editor_pid; print(editor_pid({sys.executable!r}))"
    # `; true` keeps the shell alive as the middle process (no exec of the last command).
    out = subprocess.run(
        ["sh", "-c", f"'{sys.executable}' -c \"{code}\"; true"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == os.getpid()  # the shell's parent: this Python, whose executable was named


def test_a_dead_pid_is_not_alive_and_ours_is() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)
    assert pid_alive(os.getpid())
