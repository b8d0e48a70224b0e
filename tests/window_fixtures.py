"""Fixtures shared by the core and hostile suites: a real runtime with one window server, and an
editor the test drives. Imported into each suite's namespace (pytest finds fixtures there)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from companion.runtime import Runtime, WindowHandle
from tests.scripted_editor import ScriptedEditor


@pytest.fixture
def discovery_dir(tmp_path: str) -> str:
    return os.path.join(str(tmp_path), "discovery")


@pytest.fixture
def workspace(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "workspace")
    os.makedirs(path)
    return path


@pytest.fixture
def editor() -> ScriptedEditor:
    return ScriptedEditor()


@pytest.fixture
def runtime(discovery_dir: str) -> Iterator[Runtime]:
    rt = Runtime(discovery_directory=discovery_dir)
    yield rt
    rt.stop()


@pytest.fixture
def window(runtime: Runtime, editor: ScriptedEditor, workspace: str) -> WindowHandle:
    handle = runtime.open_window(editor, [workspace])
    handle.ready.result(30)
    return handle


@pytest.fixture
def lock_dir(tmp_path: str) -> str:
    """Claude Code's lock folder for the test (`<CLAUDE_CONFIG_DIR>/ide`)."""
    return os.path.join(str(tmp_path), "claude-config", "ide")


@pytest.fixture
def claude_runtime(discovery_dir: str, lock_dir: str) -> Iterator[Runtime]:
    rt = Runtime(discovery_directory=discovery_dir, lock_directory=lock_dir)
    yield rt
    rt.stop()


@pytest.fixture
def claude_window(claude_runtime: Runtime, editor: ScriptedEditor, workspace: str) -> WindowHandle:
    """A window serving Gemini CLI and Claude Code."""
    handle = claude_runtime.open_window(editor, [workspace], claude=True)
    handle.ready.result(30)
    return handle
