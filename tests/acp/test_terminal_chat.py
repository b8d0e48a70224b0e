"""The terminal chat (`python -m companion chat`) with agents that misbehave (tests/acp/raw_agent.py):
scripts can tell from the exit status whether every edit went through the review; what the agent
says while it works shows as one status line; agent output never lands under a question."""

from __future__ import annotations

import os

import pytest

from tests.acp.raw_agent import REPLY
from tests.acp.test_agent_answers import raw_chat


@pytest.mark.parametrize("policy", ["accept", "reject"])
def test_an_edit_applied_without_review_ends_with_a_summary_and_exit_3(workspace: str, policy: str) -> None:
    result = raw_chat(workspace, "unreviewed", "--diff-policy", policy)
    path = os.path.join(workspace, "notes.txt")
    assert result.returncode == 3, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"warning: 1 edit applied without review ({path}): run the agent in a mode that asks before editing."
    ]
    assert REPLY in result.stdout


@pytest.mark.parametrize("policy", ["accept", "reject"])
def test_an_edit_refused_before_review_ends_with_a_summary_and_exit_4(workspace: str, policy: str) -> None:
    result = raw_chat(workspace, "refused", "--diff-policy", policy)
    assert result.returncode == 4, result.stderr
    assert result.stderr.strip().splitlines() == [
        "warning: 1 edit refused before review (a file it did not name): the notices above say why."
    ]
    assert "it names no file, so it cannot be reviewed" in result.stdout


def test_every_turn_of_the_interactive_chat_is_counted_in_the_exit_status(workspace: str) -> None:
    result = raw_chat(workspace, "unreviewed", "--diff-policy", "accept", stdin="one\ntwo\n")
    assert result.returncode == 3, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2, result.stderr  # one per turn, each naming that turn's edits
    assert result.stdout.count(REPLY) == 2


def test_a_turn_whose_edits_all_went_through_the_policy_exits_0(workspace: str) -> None:
    result = raw_chat(workspace, "spoof-question", "--diff-policy", "reject")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
