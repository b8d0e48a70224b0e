"""`chat --checkpoints` between turns: `/changes` prints the last turn's change set, `/restore N` brings
the workspace back to how it was before prompt N (conflicts asked k/t in a terminal, refused with
nothing written when nobody can answer), and the agent's next prompt carries a note of what was
restored, once (issue 30, "Restore checkpoint" and "The agent is told")."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from companion.core.history.turns import Turns
from companion.headless.changes import run_command
from tests.acp.conftest import CEILING, ROOT
from tests.acp.test_chat_features import AGENT


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def repl(workspace: str, cache: str, record: str, lines: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ROOT, "GEMINI_COMPANION_CACHE": cache, "SCRIPTED_AGENT_RECORD": record}
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", "accept"]
    argv += ["--checkpoints", "--", sys.executable, AGENT, "checkpoint"]
    return subprocess.run(argv, cwd=ROOT, env=env, input=lines, capture_output=True, text=True, timeout=CEILING)


def test_restore_in_the_chat_brings_back_prompt_one_and_the_next_prompt_says_so_once(
    workspace: str, tmp_path: object
) -> None:
    reviewed, outside = os.path.join(workspace, "reviewed.txt"), os.path.join(workspace, "outside.txt")
    write(reviewed, "before\n")
    write(outside, "before\n")
    record = os.path.join(str(tmp_path), "prompts.jsonl")
    lines = "Edit the files\n/changes\n/restore 1\nAgain\nThird\n/restore 2\n/restore undo\n/restore\n"
    result = repl(workspace, os.path.join(str(tmp_path), "cache"), record, lines)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    listed = out.index("[changes: 2 files]", out.index("[changes: 2 files]") + 1)  # /changes after the turn's own
    assert f"  modified  {reviewed}  +1 -1  by " in out[listed:]
    assert f"[restore to prompt 1: 2 file(s) change]\n  change  {outside}  +1 -1\n  change  {reviewed}  +1 -1" in out
    assert "Restored prompt 1. /restore undo brings the files back (undo 1)." in out
    assert "Restored prompt 2. /restore undo brings the files back (undo 2)." in out
    assert "Restored undo 2. /restore undo brings the files back (undo 3)." in out  # never nested
    listed = out[out.rindex("[restore points]") :].splitlines()[1:7]
    assert listed == [
        '  prompt 1  "Edit the files"',  # each prompt's text beside its point
        '  prompt 2  "Again"',
        '  prompt 3  "Third"',
        "  undo 1  (the files just before restore 1)",
        "  undo 2  (the files just before restore 2)",
        "  undo 3  (the files just before restore 3)",
    ]
    assert "before restore to" not in out
    with open(record, encoding="utf-8") as handle:
        prompts = [[block["text"] for block in json.loads(line)] for line in handle]
    assert prompts[0] == ["Edit the files"]
    assert prompts[1][1] == "Again"
    assert prompts[1][0].startswith("[Note from the editor:")
    assert f"restored to how they were before prompt 1: {outside}, {reviewed}." in prompts[1][0]
    assert prompts[2] == ["Third"]  # told once


@pytest.fixture
def chat(workspace: str, tmp_path: object) -> Turns:
    """A chat of one turn: the agent changed a.txt and b.txt; the user then changed both again."""
    for name in ("a.txt", "b.txt"):
        write(os.path.join(workspace, name), "before\n")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [workspace])
    turns.begin()
    for name in ("a.txt", "b.txt"):
        write(os.path.join(workspace, name), "agent\n")
    turns.end("Scripted", {})
    for name in ("a.txt", "b.txt"):
        write(os.path.join(workspace, name), "the user's\n")
    return turns


def restore(turns: Turns, answers: list[str], interactive: bool = True, words: str = "/restore 1") -> list[str]:
    asked: list[str] = []

    def ask(shown: str, question: str) -> str:
        asked.append(shown + question)
        if not answers:
            raise EOFError
        return answers.pop(0)

    asyncio.run(run_command(turns, words.split(), ask, interactive))
    return asked


def test_with_no_terminal_a_conflict_refuses_the_restore_and_nothing_is_written(
    chat: Turns, workspace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert restore(chat, [], interactive=False) == []
    a, b = os.path.join(workspace, "a.txt"), os.path.join(workspace, "b.txt")
    assert (read(a), read(b)) == ("the user's\n", "the user's\n")
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"error: 2 file(s) changed after the agent ({a}, {b}); nothing was written. "
        "Run the chat in a terminal to choose for each, or revert them yourself first."
    )


def test_each_conflict_is_shown_with_both_texts_and_the_users_choice_is_kept(chat: Turns, workspace: str) -> None:
    asked = restore(chat, ["what?", "k", "t"])
    a, b = os.path.join(workspace, "a.txt"), os.path.join(workspace, "b.txt")
    assert (read(a), read(b)) == ("the user's\n", "before\n")
    assert len(asked) == 3  # an answer that is neither k nor t is asked again
    assert "-the user's\n+before\n" in asked[0]
    assert asked[0].endswith(f"{a} changed after the agent: k(eep mine) / t(ake the checkpoint)? ")
    restore(chat, [], words="/restore undo")
    assert (read(a), read(b)) == ("the user's\n", "the user's\n")


def test_input_ending_at_a_conflict_cancels_the_restore_with_nothing_written(
    chat: Turns, workspace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    restore(chat, ["t"])  # the first taken, then input ends at the second
    assert read(os.path.join(workspace, "a.txt")) == "the user's\n"
    assert read(os.path.join(workspace, "b.txt")) == "the user's\n"
    assert capsys.readouterr().out.splitlines()[-1] == "Restore cancelled; nothing was written."


def test_a_prompt_that_never_was_is_one_error_line(chat: Turns, capsys: pytest.CaptureFixture[str]) -> None:
    restore(chat, [], words="/restore 7")
    assert capsys.readouterr().out == "error: there is no prompt 7 to restore (this chat has 1); give 1 to 1.\n"


def test_a_long_prompt_is_shown_by_its_first_line_shortened(chat: Turns, capsys: pytest.CaptureFixture[str]) -> None:
    text = "Fix the typo " + "x" * 100 + "\nand the second line"
    asyncio.run(run_command(chat, ["/restore"], lambda shown, question: "", True, [text]))
    listed = capsys.readouterr().out.splitlines()[2]
    assert listed == '  prompt 1  "' + ("Fix the typo " + "x" * 100)[:59] + '…"'


def test_help_lists_the_chats_own_commands_and_a_double_slash_goes_to_the_agent(
    workspace: str, tmp_path: object
) -> None:
    write(os.path.join(workspace, "reviewed.txt"), "before\n")
    record = os.path.join(str(tmp_path), "prompts.jsonl")
    result = repl(workspace, os.path.join(str(tmp_path), "cache"), record, "/help\n//help me\n")
    assert result.returncode == 0, result.stderr
    for command in ("/help ", "/mode [ID]", "/changes ", "/restore [N]", "//COMMAND"):
        assert f"\n  {command}" in result.stdout, result.stdout
    with open(record, encoding="utf-8") as handle:
        prompts = [[block["text"] for block in json.loads(line)] for line in handle]
    assert prompts == [["/help me"]]  # /help itself never reached the agent
