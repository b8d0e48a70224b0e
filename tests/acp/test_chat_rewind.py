"""`/rewind N` in `chat --checkpoints` (issue 41, "Rewind the conversation with the code"): the files
go back to before prompt N, a new session of the agent gets the turns before prompt N (bounded, the
older ones cut with a marker) at the head of its first prompt, prompt N's text is given back, and
`/rewind undo` brings back the files and the earlier session (`session/load`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.acp.conftest import CEILING, ROOT
from tests.acp.test_chat_features import AGENT


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def chat(
    workspace: str, tmp: str, lines: str, load: bool = True
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    log = os.path.join(tmp, "sessions.jsonl")
    env = {**os.environ, "PYTHONPATH": ROOT, "GEMINI_COMPANION_CACHE": os.path.join(tmp, "cache")}
    env["SCRIPTED_AGENT_SESSIONS"] = log
    if not load:
        env["SCRIPTED_AGENT_NO_LOAD"] = "1"
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", "accept"]
    argv += ["--checkpoints", "--", sys.executable, AGENT, "checkpoint"]
    result = subprocess.run(argv, cwd=ROOT, env=env, input=lines, capture_output=True, text=True, timeout=CEILING)
    with open(log, encoding="utf-8") as handle:
        return result, [json.loads(line) for line in handle]


def test_rewind_restores_the_files_seeds_a_new_session_with_the_bounded_transcript_and_undo_loads_the_old(
    workspace: str, tmp_path: object
) -> None:
    outside = os.path.join(workspace, "outside.txt")
    write(os.path.join(workspace, "reviewed.txt"), "before\n")
    write(outside, "before\n")
    second, third = "Second " + "b" * 12_000, "Third " + "c" * 12_000
    lines = f"Edit the files\n{second}\n{third}\nFourth\n/rewind 4\n/rewind undo\n/rewind 4\nFourth again\n"
    result, log = chat(workspace, str(tmp_path), lines)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Rewound to prompt 4: a new session of" in out
    assert "Prompt 4 was (type it again, or change it, to send it):\nFourth\n" in out  # the text given back
    assert "The earlier conversation is back (session/load)" in out
    methods = [(e["method"], e["sessionId"]) for e in log if e["method"] != "session/prompt"]
    assert methods == [("session/new", "s1"), ("session/new", "s2"), ("session/load", "s1"), ("session/new", "s3")]
    prompts = [e for e in log if e["method"] == "session/prompt"]
    assert [p["sessionId"] for p in prompts] == ["s1"] * 4 + ["s3"]
    first = prompts[-1]["texts"]  # the new session's first prompt: the transcript, then what the user typed
    note = first[0]
    assert first[-1] == "Fourth again"
    assert len(note) <= 32_000
    assert "[… 2 earlier turns cut]" in note
    assert third in note and "Done: " + third in note  # the newest turn before prompt 4, prompt and reply
    assert "Edit the files" not in note and "Second" not in note and "Fourth" not in note
    assert "(replay of s1)" not in note  # the undo's replay is not a turn of the transcript
    # The files: before prompt 4 (the agent's third turn wrote outside.txt) after each rewind; the
    # undo brought back the fourth turn's text, and "Fourth again" (the agent's fifth prompt) wrote last.
    assert "[restore to prompt 4: 1 file(s) change]" in out
    assert "Restored undo 1." in out
    assert read(outside) == "written at prompt 5\n"


def test_rewind_to_a_prompt_the_chat_never_had_changes_nothing(workspace: str, tmp_path: object) -> None:
    outside = os.path.join(workspace, "outside.txt")
    write(os.path.join(workspace, "reviewed.txt"), "before\n")
    write(outside, "before\n")
    result, log = chat(workspace, str(tmp_path), "Edit the files\n/rewind 7\n/rewind undo\n")
    assert result.returncode == 0, result.stderr
    assert "error: this conversation has no prompt 7 (its prompts: 1;" in result.stdout
    assert "error: there is no rewind to undo in this chat" in result.stdout
    assert [e["method"] for e in log] == ["session/new", "session/prompt"]
    assert read(outside) == "written at prompt 1\n"


def test_undo_of_a_rewind_with_an_agent_that_cannot_load_brings_back_the_files_and_says_so(
    workspace: str, tmp_path: object
) -> None:
    outside = os.path.join(workspace, "outside.txt")
    write(os.path.join(workspace, "reviewed.txt"), "before\n")
    write(outside, "before\n")
    result, log = chat(workspace, str(tmp_path), "Edit the files\nSecond\n/rewind 2\n/rewind undo\nThird\n", False)
    assert result.returncode == 0, result.stderr
    assert "cannot open its earlier session again (no session/load): the chat goes on in the new session." in (
        result.stdout
    )
    assert [(e["method"], e["sessionId"]) for e in log if e["method"] != "session/prompt"] == [
        ("session/new", "s1"),
        ("session/new", "s2"),
    ]
    third = [e for e in log if e["method"] == "session/prompt"][-1]
    assert third["sessionId"] == "s2" and "Edit the files" in third["texts"][0]  # the note still goes
    assert read(outside) == "written at prompt 3\n"
