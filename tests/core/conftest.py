"""Fixtures for the core: a real runtime with one window server, and an editor the test drives."""

from __future__ import annotations

import pytest

from tests.window_fixtures import discovery_dir, editor, runtime, window, workspace

__all__ = ["discovery_dir", "editor", "runtime", "window", "workspace"]  # fixtures, found by pytest here


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
