"""Every test run keeps Claude Code's lock files out of the user's real `~/.claude/ide`: the
companion (in process, or a `serve` child inheriting the environment) writes them under a
folder of this session instead; so does the chat's checkpoint store (the per-user cache folder).
Tests that need a particular folder pass it explicitly."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# The real runtime with one window server and the editor a test drives (`runtime`, `window`,
# `editor`, `workspace`, ...), for every folder; a folder's conftest.py may override one.
pytest_plugins = ("tests.window_fixtures",)


def _private_folder(factory: pytest.TempPathFactory, variable: str) -> Iterator[str]:
    """A folder of this session in the environment variable `variable`, for as long as the session."""
    folder = str(factory.mktemp(variable.lower()))
    before = os.environ.get(variable)
    os.environ[variable] = folder
    yield folder
    if before is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = before


@pytest.fixture(scope="session", autouse=True)
def private_claude_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _private_folder(tmp_path_factory, "CLAUDE_CONFIG_DIR")


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`chat` keeps its checkpoints in the per-user cache folder (core/system/user_cache.py)."""
    yield from _private_folder(tmp_path_factory, "GEMINI_COMPANION_CACHE")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
