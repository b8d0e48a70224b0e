"""`gemini` started in any terminal (not Terminus) inside a window's folder connects to that window.

A plain terminal has none of the GEMINI_CLI_IDE_* variables and its own TERM_PROGRAM: the real
client finds the window by the discovery files' workspacePath (whatever PID its process-tree walk
finds only orders the candidates), and recognises Sublime by the file's ideInfo.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.conformance.harness import IdeClientProcess, open_paths
from tests.sublime_editor.conftest import Companion, write
from tests.sublime_fake import control

pytestmark = pytest.mark.conformance


def test_gemini_in_an_external_terminal_connects_to_the_window_of_its_folder(
    companion: Companion, workspace: str, tmp_path: Any, container_env: None
) -> None:
    other = os.path.join(str(tmp_path), "other")
    nested = os.path.join(other, "pkg", "deep")
    os.makedirs(nested)
    first = control.new_window([workspace])
    second = control.new_window([other])
    control.new_window()  # a window without a folder: its workspacePath is "" and never matches
    companion.load()
    first_handle, second_handle = companion.ready(first), companion.ready(second)
    theirs = control.open_file(second, write(other, "pkg/mod.py", "x = 1\n"))
    control.click(theirs, 0)
    control.open_file(first, write(workspace, "mine.py", "y = 2\n"))
    assert len(companion.discovery_files()) == 3

    plain_terminal = {"TMPDIR": os.environ["TMPDIR"], "TERM_PROGRAM": "Apple_Terminal"}
    cli = IdeClientProcess(nested, plain_terminal, pump=lambda: control.pump(0.005)).start()
    try:
        assert not [k for k in cli.env if k.startswith("GEMINI_CLI_IDE_")]
        connected = cli.wait_connected()
        assert connected["ide"]["name"] == "sublimetext"
        assert connected["url"] == second_handle.url != first_handle.url
        cli.wait_context(lambda c: open_paths(c) == [theirs.file_name()])
    finally:
        cli.stop()
