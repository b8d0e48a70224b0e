"""Fixtures for the core: a real runtime with one window server, and an editor the test drives."""

from __future__ import annotations

import pytest

from tests.window_fixtures import (
    claude_runtime,
    claude_window,
    discovery_dir,
    editor,
    lock_dir,
    runtime,
    window,
    workspace,
)

__all__ = [
    "claude_runtime",
    "claude_window",
    "discovery_dir",
    "editor",
    "lock_dir",
    "runtime",
    "window",
    "workspace",
]  # fixtures, found by pytest here


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
