"""Every test run keeps Claude Code's lock files out of the user's real `~/.claude/ide`: the
companion (in process, or a `serve` child inheriting the environment) writes them under a
folder of this session instead. Tests that need a particular folder pass it explicitly."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_claude_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = str(tmp_path_factory.mktemp("claude-config"))
    before = os.environ.get("CLAUDE_CONFIG_DIR")
    os.environ["CLAUDE_CONFIG_DIR"] = folder
    yield folder
    if before is None:
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
    else:
        os.environ["CLAUDE_CONFIG_DIR"] = before
