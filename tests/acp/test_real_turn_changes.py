"""Issue 30, "Prove it", with the real agents offline: ONE turn edits five files, three through
reviewed permissions, one that the agent writes without asking (its auto mode), one by a shell
command; the turn's change set and `changes --json` name who made each change and whether it was
reviewed; `changes --revert` / `--restore` put back the exact bytes and refuse, writing nothing, to
overwrite a file the user changed after the turn.

The chat runs in-process (`ChatSession` and `Turns`, as `chat --checkpoints` does: headless/chat.py
`TurnChanges`), so the test can choose per review; `changes` runs as the user would, a subprocess.

- Gemini CLI 0.61.0 (`--acp`, recorded model turns): its auto mode is reached the way Gemini
  itself enters it: "Allow for this session" (`proceed_always`) on an edit switches it to `autoEdit`
  (bundle chunk-5FZXKDXH.js, `isAutoEditTransition`), and its next write arrives through
  fs/write_text_file with no permission request. Setting `autoEdit` with session/set_mode instead
  makes its writes arrive unasked, which the chat refuses (every fs write needs a review or "Allow
  for this session"; tests/acp/test_modes.py): nothing is written, so nothing is listed.
- claude-agent-acp 0.101.0 (a local Messages API stand-in): the chat moves to `acceptEdits`
  (session/set_mode) during the turn; the agent writes its files itself in both modes.
- The shell command is the agent's own (Gemini's `run_shell_command`, Claude's `Bash`, both
  asked and allowed once): the change set cannot know what a command wrote, so it is "outside".

Last, a command the agent runs after writing a file through a review (a formatter) rewrites it: that
file is "outside" and not reviewed (in-process with both agents, and as `chat --checkpoints` prints it).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from companion.acp.agents.agents import PRESETS, AgentSpec, custom_agent
from companion.acp.session import ChatSession
from companion.core.history.change_set import FileChange
from companion.core.history.turns import Turns
from companion.core.reviews import Review
from tests.acp.conftest import CEILING, ROOT, AgentSetup, AsyncEditor, RecordingView
from tests.conformance.claude_harness import ModelStandIn
from tests.conformance.harness import write_file_call

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

BEFORE = {
    "reviewed_1.txt": b"alpha\nbeta\n",
    "reviewed_2.txt": "caf\u00e9\nsecond \u2713\n".encode(),
    "auto.txt": b"one\ntwo\n",
    "shell.txt": b"kept\n",
    "untouched.txt": b"never changed\n",
}
AFTER = {
    "reviewed_1.txt": b"alpha\nBETA, reviewed\n",
    "reviewed_2.txt": "caf\u00e9\nSECOND \u2713, reviewed\n".encode(),
    "reviewed_3.txt": b"a new file, reviewed\n",
    "auto.txt": b"one\nTWO, written without asking\n",
    "shell.txt": b"kept\nappended by the shell\n",
    "untouched.txt": b"never changed\n",
}
REVIEWED = ("reviewed_1.txt", "reviewed_2.txt", "reviewed_3.txt")
USERS_LINE = b"the user's own line, typed after the turn\n"

# Python, not sed: the same command line on every platform's shell.
SHELL_COMMAND = f"\"{sys.executable}\" -c \"open('shell.txt', 'ab').write(b'appended by the shell\\n')\""


def tree(workspace: str) -> dict[str, bytes]:
    """Every file under the workspace, relative path -> bytes."""
    found: dict[str, bytes] = {}
    for folder, _, files in os.walk(workspace):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, workspace)] = handle.read()
    return found


def text(name: str) -> str:
    return AFTER[name].decode("utf-8")


@pytest.fixture
def cache(tmp_path: Any) -> str:
    return os.path.join(str(tmp_path), "cache")


@pytest.fixture
def files(workspace: str) -> dict[str, str]:
    """The workspace before the prompt; name -> absolute path for every name in AFTER."""
    for name, content in BEFORE.items():
        with open(os.path.join(workspace, name), "wb") as handle:
            handle.write(content)
    return {name: os.path.join(workspace, name) for name in AFTER}


def changes(cache: str, workspace: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ROOT, "GEMINI_COMPANION_CACHE": cache}
    argv = [sys.executable, "-m", "companion", "changes", "--workspace", workspace, *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=CEILING)


async def accept(session: ChatSession, review: Review) -> None:
    review.accept(review.proposal)


async def chat_turn(
    spec: AgentSpec, env: dict[str, str], workspace: str, cache: str, decide: Callable[[ChatSession, Review], Any]
) -> tuple[str, list[FileChange], AsyncEditor, RecordingView]:
    """One prompt between a checkpoint and the turn's change set, as `chat --checkpoints` runs it;
    `decide` plays the user on each review, other permissions (the shell command) are allowed once."""
    editor, view = AsyncEditor(), RecordingView(answer_kind="allow_once")
    session = ChatSession(spec, [workspace], editor, view, env=env)
    turns = Turns(cache, [workspace])
    editor.decide = lambda review: asyncio.ensure_future(decide(session, review))
    await session.start()
    try:
        await asyncio.to_thread(turns.begin)
        session.writes.take()
        stop = await session.prompt("Edit the five files.")
        found = await asyncio.to_thread(turns.end, session.spec.name, *session.writes.take_turn())
    finally:
        await session.close()
    return stop, found, editor, view


def assert_attribution(found: list[FileChange], files: dict[str, str], agent: str, cache: str, workspace: str) -> None:
    """The five files, each with who made it and whether it was reviewed; `changes --json` the same,
    in exactly its documented shape."""
    expected = sorted(
        [{"path": files[n], "change": "modified", "reviewed": True, "by": agent} for n in REVIEWED[:2]]
        + [{"path": files["reviewed_3.txt"], "change": "added", "reviewed": True, "by": agent}]
        + [{"path": files["auto.txt"], "change": "modified", "reviewed": False, "by": agent}]
        + [{"path": files["shell.txt"], "change": "modified", "reviewed": False, "by": "outside"}],
        key=lambda f: str(f["path"]),
    )
    assert [change.as_json() for change in found] == expected
    listed = changes(cache, workspace, "--json")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert json.loads(listed.stdout) == {"files": expected}


def assert_revert_refuse_restore(files: dict[str, str], cache: str, workspace: str) -> None:
    """Revert one file: its exact bytes before the prompt, the rest as the turn left them. A file
    the user edited after the turn: refused, one line, nothing written. Once the user's edit is
    gone, restore: every file byte-identical to before the prompt."""
    reverted = changes(cache, workspace, "--revert", files["reviewed_1.txt"])
    assert (reverted.returncode, reverted.stderr) == (0, "")
    assert tree(workspace) == {**AFTER, "reviewed_1.txt": BEFORE["reviewed_1.txt"]}

    with open(files["auto.txt"], "ab") as handle:
        handle.write(USERS_LINE)
    edited = tree(workspace)
    for args in (("--revert", files["auto.txt"]), ("--restore",)):
        refused = changes(cache, workspace, *args)
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.splitlines() == [
            f"error: {files['auto.txt']} changed since the turn ended, so nothing was written and that change is "
            "kept; look at it, then revert the other files one by one with --revert."
        ]
        assert tree(workspace) == edited  # nothing written, the user's line kept

    with open(files["auto.txt"], "wb") as handle:  # the user takes their line back
        handle.write(AFTER["auto.txt"])
    restored = changes(cache, workspace, "--restore")
    assert (restored.returncode, restored.stderr) == (0, "")
    assert tree(workspace) == BEFORE


# -- Gemini CLI --


def shell_call(command: str) -> dict[str, Any]:
    return {"functionCall": {"name": "run_shell_command", "args": {"command": command}}}


async def test_gemini_one_turn_reviewed_auto_and_shell_changes_are_attributed_reverted_and_restored(
    gemini: AgentSetup, workspace: str, files: dict[str, str], cache: str
) -> None:
    gemini.record_turns(
        *[[write_file_call(files[name], text(name))] for name in (*REVIEWED, "auto.txt")],
        [shell_call(SHELL_COMMAND)],
        [{"text": "Done."}],
    )

    async def decide(session: ChatSession, review: Review) -> None:
        if review.file_path == files["reviewed_3.txt"]:  # reviewed, then "Allow for this session"
            review.accept_always(review.proposal)
        else:
            review.accept(review.proposal)

    spec = replace(PRESETS["gemini"], command=tuple(gemini.command))
    stop, found, editor, view = await chat_turn(spec, gemini.env, workspace, cache, decide)
    assert stop == "end_turn"
    assert [review.file_path for review, *_ in editor.shown] == [files[n] for n in REVIEWED]
    assert [title for title, _ in view.asked] == [SHELL_COMMAND]  # the command, asked and allowed once
    assert tree(workspace) == AFTER
    assert_attribution(found, files, "Gemini CLI", cache, workspace)
    assert_revert_refuse_restore(files, cache, workspace)


# -- claude-agent-acp --


class ScriptedModel(ModelStandIn):
    """The Messages API stand-in, asking for one tool per model turn in order, then "Done."; requests
    without tools (the session title, the prompt suggestion) get "Done." too."""

    def __init__(self, steps: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__("", {})
        self.steps = steps

    def _turn(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        answered = sum(
            1
            for message in request.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
        if request.get("tools") and answered < len(self.steps):
            name, tool_input = self.steps[answered]
            return [{"type": "tool_use", "id": f"toolu_proof_{answered}", "name": name, "input": tool_input}]
        return [{"type": "text", "text": "Done."}]


def claude_edit(path: str, old: bytes, new: bytes) -> tuple[str, dict[str, Any]]:
    """Claude's Edit of the one line that differs."""
    [(a, b)] = [(a, b) for a, b in zip(old.decode().splitlines(), new.decode().splitlines(), strict=True) if a != b]
    return "Edit", {"file_path": path, "old_string": a, "new_string": b, "replace_all": False}


async def test_claude_one_turn_reviewed_accept_edits_and_bash_changes_are_attributed_reverted_and_restored(
    claude_factory: Any, workspace: str, files: dict[str, str], cache: str
) -> None:
    setup: AgentSetup = claude_factory("unused", {})
    steps = [claude_edit(files[n], BEFORE[n], AFTER[n]) for n in REVIEWED[:2]]
    steps.append(("Write", {"file_path": files["reviewed_3.txt"], "content": text("reviewed_3.txt")}))
    steps.append(claude_edit(files["auto.txt"], BEFORE["auto.txt"], AFTER["auto.txt"]))
    steps.append(("Bash", {"command": SHELL_COMMAND, "description": "Append a line to shell.txt"}))
    with ScriptedModel(steps) as model:
        env = {**setup.env, "ANTHROPIC_BASE_URL": model.url}

        async def decide(session: ChatSession, review: Review) -> None:
            if review.file_path == files["reviewed_3.txt"]:  # the last reviewed edit: then acceptEdits
                await session.set_mode("acceptEdits")
                modes.append(str(session.mode))
            review.accept(review.proposal)

        modes: list[str] = []
        stop, found, editor, view = await chat_turn(custom_agent(setup.command), env, workspace, cache, decide)
    assert stop == "end_turn"
    assert modes == ["acceptEdits"]
    assert [review.file_path for review, *_ in editor.shown] == [files[n] for n in REVIEWED]
    assert [title for title, _ in view.asked] == [SHELL_COMMAND]  # Bash, asked and allowed once
    assert tree(workspace) == AFTER
    assert_attribution(found, files, "Claude", cache, workspace)
    assert_revert_refuse_restore(files, cache, workspace)


# -- a command that rewrites what the agent wrote through a review --

AFTER_REVIEW = b"appended by a formatter after the review\n"
REWRITES = (
    f"\"{sys.executable}\" -c \"import os; open('reviewed_1.txt', 'ab').write(b'appended by a formatter after the "
    "review\\n'); os.utime('reviewed_2.txt')\""
)


async def test_gemini_a_file_its_command_rewrites_after_the_reviewed_write_is_not_called_reviewed(
    gemini: AgentSetup, workspace: str, files: dict[str, str], cache: str
) -> None:
    """The agent writes two files through reviews, then runs a command (a formatter, a code
    generator) that appends to one and only touches the other: the first's content is not what the
    user reviewed (outside, not reviewed); the second's still is (compared by content, not by stat)."""
    gemini.record_turns(
        *[[write_file_call(files[name], text(name))] for name in REVIEWED[:2]],
        [shell_call(REWRITES)],
        [{"text": "Done."}],
    )

    spec = replace(PRESETS["gemini"], command=tuple(gemini.command))
    stop, found, *_ = await chat_turn(spec, gemini.env, workspace, cache, accept)
    assert stop == "end_turn"
    with open(files["reviewed_1.txt"], "rb") as handle:
        assert handle.read() == AFTER["reviewed_1.txt"] + AFTER_REVIEW
    expected = [
        {"path": files["reviewed_1.txt"], "change": "modified", "reviewed": False, "by": "outside"},
        {"path": files["reviewed_2.txt"], "change": "modified", "reviewed": True, "by": "Gemini CLI"},
    ]
    assert [change.as_json() for change in found] == expected
    listed = changes(cache, workspace, "--json")
    assert json.loads(listed.stdout) == {"files": expected}, listed.stderr


async def test_claude_a_file_its_bash_rewrites_after_the_reviewed_edit_is_not_called_reviewed(
    claude_factory: Any, workspace: str, files: dict[str, str], cache: str
) -> None:
    """The same with Claude, which writes its reviewed edits itself (recorded when it reports the
    tool call completed)."""
    setup: AgentSetup = claude_factory("unused", {})
    steps = [claude_edit(files[n], BEFORE[n], AFTER[n]) for n in REVIEWED[:2]]
    steps.append(("Bash", {"command": REWRITES, "description": "Format the files"}))
    with ScriptedModel(steps) as model:
        env = {**setup.env, "ANTHROPIC_BASE_URL": model.url}
        stop, found, *_ = await chat_turn(custom_agent(setup.command), env, workspace, cache, accept)
    assert stop == "end_turn"
    with open(files["reviewed_1.txt"], "rb") as handle:
        assert handle.read() == AFTER["reviewed_1.txt"] + AFTER_REVIEW
    assert [change.as_json() for change in found] == [
        {"path": files["reviewed_1.txt"], "change": "modified", "reviewed": False, "by": "outside"},
        {"path": files["reviewed_2.txt"], "change": "modified", "reviewed": True, "by": "Claude"},
    ]


def test_chat_checkpoints_prints_the_rewritten_file_as_outside(
    gemini: AgentSetup, workspace: str, files: dict[str, str], cache: str
) -> None:
    """The headless `chat --checkpoints --prompt` with the real Gemini CLI, every permission allowed
    once: the change set it prints after the turn says the same, and the file rewritten after your
    review is named in the warning line, exit 3 (issue 36: its bytes are not the ones accepted)."""
    gemini.record_turns(
        *[[write_file_call(files[name], text(name))] for name in REVIEWED[:2]],
        [shell_call(REWRITES)],
        [{"text": "Done."}],
    )
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", "accept"]
    argv += ["--checkpoints", "--prompt", "Edit the files.", "--", *gemini.command]
    env = {**gemini.env, "GEMINI_COMPANION_CACHE": cache}
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=CEILING)
    assert result.returncode == 3, result.stderr
    assert f"warning: 1 edit changed after your review ({files['reviewed_1.txt']})" in result.stderr
    agent = os.path.basename(gemini.command[0])  # a command line's agent is named by its program
    printed = result.stdout[result.stdout.index("[changes: 2 files]") :].strip().splitlines()
    assert printed == [
        "[changes: 2 files]",
        f"  modified  {files['reviewed_1.txt']}  +2 -1  by outside  not reviewed  changed after your review",
        f"  modified  {files['reviewed_2.txt']}  +1 -1  by {agent}  reviewed",
    ]


async def test_claude_an_edit_accepted_with_the_users_changes_is_the_agents_reviewed_write(
    claude_factory: Any, workspace: str, files: dict[str, str], cache: str
) -> None:
    """Claude writes its own proposal, then the client writes the user's version over it: the file
    holds what the user accepted, so it stays "reviewed" by the agent (its digest is taken after)."""
    setup: AgentSetup = claude_factory("unused", {})
    users = b"alpha\nBETA, as the user wants it\n"
    with ScriptedModel(
        [claude_edit(files["reviewed_1.txt"], BEFORE["reviewed_1.txt"], AFTER["reviewed_1.txt"])]
    ) as model:

        async def decide(session: ChatSession, review: Review) -> None:
            review.accept(users.decode())

        env = {**setup.env, "ANTHROPIC_BASE_URL": model.url}
        stop, found, *_ = await chat_turn(custom_agent(setup.command), env, workspace, cache, decide)
    assert stop == "end_turn"
    with open(files["reviewed_1.txt"], "rb") as handle:
        assert handle.read() == users
    assert [change.as_json() for change in found] == [
        {"path": files["reviewed_1.txt"], "change": "modified", "reviewed": True, "by": "Claude"}
    ]


async def test_gemini_set_to_auto_edit_has_its_unasked_write_refused_so_only_the_command_is_listed(
    gemini: AgentSetup, workspace: str, files: dict[str, str], cache: str
) -> None:
    """In `autoEdit` set by the user, Gemini writes through fs/write_text_file without asking: the
    chat refuses writes no review accepted (tests/acp/test_modes.py), so the file is untouched and the
    change set has only the command's change."""
    gemini.record_turns(
        [write_file_call(files["auto.txt"], text("auto.txt"))], [shell_call(SHELL_COMMAND)], [{"text": "Done."}]
    )
    spec = replace(PRESETS["gemini"], command=tuple(gemini.command), mode="autoEdit")
    stop, found, editor, view = await chat_turn(spec, gemini.env, workspace, cache, accept)
    assert stop == "end_turn"
    assert editor.shown == []
    assert any(n.startswith(f"Refused the write of {files['auto.txt']}: no review accepted it") for n in view.notices)
    assert tree(workspace) == {**BEFORE, "shell.txt": AFTER["shell.txt"]}
    assert [change.as_json() for change in found] == [
        {"path": files["shell.txt"], "change": "modified", "reviewed": False, "by": "outside"}
    ]
