"""`python -m companion chat --checkpoints` checkpoints the workspace before each prompt and prints the turn's
change set; `changes --workspace DIR` lists, reverts and restores the last turn (issue 30). The
scripted agent writes one file through a reviewed permission and one by itself with no tool call."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.acp.conftest import CEILING, ROOT
from tests.acp.test_chat_features import AGENT


@pytest.fixture
def cache(tmp_path: object) -> str:
    return os.path.join(str(tmp_path), "cache")


def companion(cache: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ROOT, "GEMINI_COMPANION_CACHE": cache}
    argv = [sys.executable, "-m", "companion", *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CEILING)


def chat_turn(cache: str, workspace: str, *options: str) -> subprocess.CompletedProcess[str]:
    for name in ("reviewed.txt", "outside.txt"):
        with open(os.path.join(workspace, name), "w", encoding="utf-8") as handle:
            handle.write("before\n")
    args = ["--workspace", workspace, "--diff-policy", "accept", "--prompt", "Edit", *options]
    return companion(cache, "chat", *args, "--", sys.executable, AGENT, "checkpoint")


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_chat_prints_the_change_set_and_changes_lists_it_with_who_wrote_what(workspace: str, cache: str) -> None:
    result = chat_turn(cache, workspace, "--checkpoints")
    assert result.returncode == 0, result.stderr
    agent = os.path.basename(sys.executable)
    reviewed, outside = os.path.join(workspace, "reviewed.txt"), os.path.join(workspace, "outside.txt")
    assert "[changes: 2 files]" in result.stdout
    assert f"  modified  {outside}  +1 -1  by outside  not reviewed" in result.stdout
    assert f"  modified  {reviewed}  +1 -1  by {agent}  reviewed" in result.stdout
    listed = companion(cache, "changes", "--workspace", workspace, "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {
        "files": [
            {"path": outside, "change": "modified", "reviewed": False, "by": "outside"},
            {"path": reviewed, "change": "modified", "reviewed": True, "by": agent},
        ]
    }


def test_changes_reverts_one_file_then_restores_the_rest(workspace: str, cache: str) -> None:
    assert chat_turn(cache, workspace, "--checkpoints").returncode == 0
    reviewed, outside = os.path.join(workspace, "reviewed.txt"), os.path.join(workspace, "outside.txt")
    reverted = companion(cache, "changes", "--workspace", workspace, "--revert", reviewed)
    assert (reverted.returncode, reverted.stderr) == (0, "")
    assert (read(reviewed), read(outside)) == ("before\n", "written with no tool call\n")
    restored = companion(cache, "changes", "--workspace", workspace, "--restore")
    assert (restored.returncode, restored.stderr) == (0, "")
    assert (read(reviewed), read(outside)) == ("before\n", "before\n")


def test_changes_refuses_to_overwrite_a_later_edit_and_writes_nothing(workspace: str, cache: str) -> None:
    assert chat_turn(cache, workspace, "--checkpoints").returncode == 0
    reviewed, outside = os.path.join(workspace, "reviewed.txt"), os.path.join(workspace, "outside.txt")
    with open(outside, "a", encoding="utf-8") as handle:
        handle.write("the user's own line\n")
    refused = companion(cache, "changes", "--workspace", workspace, "--restore")
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"error: {outside} changed since the turn ended, so nothing was written and that change is kept; "
        "look at it, then revert the other files one by one with --revert."
    ]
    assert (read(reviewed), read(outside)) == ("after\n", "written with no tool call\nthe user's own line\n")


def test_changes_in_a_folder_with_no_chat_says_so(workspace: str, cache: str) -> None:
    result = companion(cache, "changes", "--workspace", workspace, "--json")
    assert result.returncode == 1
    assert result.stderr == "error: no chat has left a turn in this workspace; run `chat --checkpoints` there first.\n"


def test_without_checkpoints_a_chat_keeps_none_and_prints_no_change_set(workspace: str, cache: str) -> None:
    """Off by default: a chat in a large folder does not read every file before its first prompt."""
    result = chat_turn(cache, workspace)
    assert result.returncode == 0, result.stderr
    assert "[changes:" not in result.stdout
    assert not os.path.exists(os.path.join(cache, "checkpoints"))
    assert companion(cache, "changes", "--workspace", workspace, "--json").returncode == 1


def test_changes_without_an_action_lists_the_change_set_as_the_chat_does(workspace: str, cache: str) -> None:
    chat = chat_turn(cache, workspace, "--checkpoints")
    assert chat.returncode == 0, chat.stderr
    listed = companion(cache, "changes", "--workspace", workspace)
    assert (listed.returncode, listed.stderr) == (0, "")
    chat_lines = chat.stdout.split("[changes: 2 files]\n")[1].splitlines()[:2]
    assert listed.stdout.splitlines() == ["changes: 2 files", *chat_lines]


def test_revert_takes_a_path_relative_to_the_workspace_and_says_what_it_did(workspace: str, cache: str) -> None:
    """`changes` runs in another folder (the checkout); `--revert reviewed.txt` means the workspace's."""
    assert chat_turn(cache, workspace, "--checkpoints").returncode == 0
    reviewed, outside = os.path.join(workspace, "reviewed.txt"), os.path.join(workspace, "outside.txt")
    reverted = companion(cache, "changes", "--workspace", workspace, "--revert", "reviewed.txt")
    assert (reverted.returncode, reverted.stderr) == (0, "")
    assert reverted.stdout == f"reverted {reviewed} to the checkpoint before the last turn\n"
    assert (read(reviewed), read(outside)) == ("before\n", "written with no tool call\n")
    restored = companion(cache, "changes", "--workspace", workspace, "--restore")
    assert (restored.returncode, restored.stderr) == (0, "")
    assert f"reverted {outside} to the checkpoint before the last turn\n" in restored.stdout
    assert (read(reviewed), read(outside)) == ("before\n", "before\n")
