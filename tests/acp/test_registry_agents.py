"""The chat with two agents of the official ACP registry nobody here wrote for: Qwen Code and opencode
(tests/conformance/registry_agents.py says why these, how they are pinned and run offline), each
against `OpenAIStandIn`, a local OpenAI-compatible model scripted per test.

What a user of "any ACP agent" depends on, per agent: a new file accepted (made by its write tool
or by its edit tool with an empty old text) is written with the exact bytes; an existing file edited
by a snippet is written with the exact bytes when accepted (LF and CRLF files, a multi-line
snippet) and left alone when rejected; the review shows the real change; and the mode the agent
starts in never lets an edit past the review. One chat per scenario: headless flows run
`python -m companion chat --prompt` as a user would; the review's content is read through
`ChatSession` with an Editor the test plays.

opencode edits without asking out of the box (its `build` mode, and it advertises no asking mode);
it asks only with `permission.edit = "ask"` in its config, which the review-flow tests give it.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatSession
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView, _base_env
from tests.conformance.openai_standin import OpenAIStandIn, Step
from tests.conformance.registry_agents import REGISTRY_AGENTS, RegistryAgent

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

AGENTS = sorted(REGISTRY_AGENTS)
# What makes each agent ask before it edits (Qwen Code asks in the mode it starts in by default).
ASKING: dict[str, dict[str, Any]] = {"qwen": {}, "opencode": {"permission": {"edit": "ask"}}}
NEW_TEXT = "first line\nsecond line ✓\n"
LINES = ["one", "two", "three", "four"]
PROMPT = "Please make the change."


@dataclass
class Setup:
    """One registry agent ready to start offline: its command line, environment and model."""

    agent: RegistryAgent
    command: list[str]
    env: dict[str, str]
    model: OpenAIStandIn


@pytest.fixture
def registry_agent(tmp_path: str) -> Iterator[Any]:
    """`make(name, steps, **options)` -> Setup: the agent `name` whose model plays `steps`."""
    models: list[OpenAIStandIn] = []

    def make(name: str, steps: list[Step], **options: Any) -> Setup:
        agent = REGISTRY_AGENTS[name]
        unable = agent.cannot_run_here()
        if unable:
            pytest.skip(unable)
        home, tmpdir = os.path.join(str(tmp_path), "home"), os.path.join(str(tmp_path), "tmp")
        os.makedirs(home, exist_ok=True)
        os.makedirs(tmpdir, exist_ok=True)
        model = OpenAIStandIn(steps).__enter__()
        models.append(model)
        env = _base_env(home, tmpdir)
        env.update(agent.configure(home, model.base_url, options))
        return Setup(agent, agent.command(), env, model)

    yield make
    for model in models:
        model.__exit__(None, None, None)


def run_chat_cli(setup: Setup, workspace: str, policy: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", policy]
    argv += ["--prompt", PROMPT, "--", *setup.command]
    return subprocess.run(
        argv, cwd=ROOT, env=setup.env, capture_output=True, text=True, encoding="utf-8", timeout=4 * CEILING
    )


def existing(workspace: str, ending: str, name: str = "old.txt") -> tuple[str, bytes]:
    path = os.path.join(workspace, name)
    data = ending.join([*LINES, ""]).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(data)
    return path, data


def on_disk(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def read_if_any(path: str) -> bytes | None:
    return on_disk(path) if os.path.exists(path) else None


def explained(result: subprocess.CompletedProcess[str]) -> str:
    """The exit code, every notice the chat printed (a long transcript's tail can cut the one that
    says why an edit was refused) and the tails of both streams."""
    notices = "\n".join(line for line in result.stdout.splitlines() if line.startswith("[notice]"))
    return (
        f"exit {result.returncode}\nnotices:\n{notices}\n"
        f"stdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-2000:]}"
    )


@pytest.mark.parametrize("name", AGENTS)
def test_new_files_accepted_are_written_with_the_exact_bytes(name: str, registry_agent: Any, workspace: str) -> None:
    """One made by the agent's write tool, one by its edit tool with an empty old text (both create)."""
    agent = REGISTRY_AGENTS[name]
    written, edited = os.path.join(workspace, "written.txt"), os.path.join(workspace, "edited.txt")
    steps: list[Step] = [agent.write(written, NEW_TEXT), agent.edit(edited, "", NEW_TEXT), "Done."]
    result = run_chat_cli(registry_agent(name, steps, **ASKING[name]), workspace, "accept")
    assert result.returncode == 0, explained(result)
    assert {"written": read_if_any(written), "edited": read_if_any(edited)} == {
        "written": NEW_TEXT.encode("utf-8"),
        "edited": NEW_TEXT.encode("utf-8"),
    }, explained(result)
    assert "Done." in result.stdout


@pytest.mark.parametrize("name", AGENTS)
def test_snippet_edits_accepted_are_written_exactly(name: str, registry_agent: Any, workspace: str) -> None:
    """A two-line snippet, as the model saw the file (its read tools show LF), in the middle of an
    LF file and of a CRLF file; each keeps its own line breaks."""
    agent = REGISTRY_AGENTS[name]
    steps: list[Step] = []
    paths: dict[str, str] = {}
    expected: dict[str, bytes] = {}
    for label, ending in (("LF", "\n"), ("CRLF", "\r\n")):
        paths[label], _ = existing(workspace, ending, f"{label}.txt")
        steps += [agent.read(paths[label]), agent.edit(paths[label], "two\nthree", "TWO\nTHREE")]
        expected[label] = ending.join(["one", "TWO", "THREE", "four", ""]).encode("utf-8")
    result = run_chat_cli(registry_agent(name, [*steps, "Done."], **ASKING[name]), workspace, "accept")
    assert result.returncode == 0, explained(result)
    assert {label: on_disk(path) for label, path in paths.items()} == expected, explained(result)


@pytest.mark.parametrize("name", AGENTS)
def test_a_snippet_edit_rejected_leaves_the_file_unchanged(name: str, registry_agent: Any, workspace: str) -> None:
    agent = REGISTRY_AGENTS[name]
    path, before = existing(workspace, "\r\n")
    setup = registry_agent(name, [agent.read(path), agent.edit(path, "two", "TWO"), "Done."], **ASKING[name])
    result = run_chat_cli(setup, workspace, "reject")
    assert result.returncode == 0, explained(result)
    assert on_disk(path) == before
    assert any("reject" in told.lower() or "cancel" in told.lower() for told in setup.model.tool_messages()), (
        f"the agent's model was never told the edit was refused: {setup.model.tool_messages()!r}"
    )


async def chat_once(setup: Setup, workspace: str, editor: AsyncEditor, view: RecordingView) -> None:
    """One prompt through the core ChatSession, the user played by `editor`."""
    session = ChatSession(custom_agent(setup.command), [workspace], editor, view, env=setup.env)
    await session.start()
    try:
        assert await session.prompt(PROMPT) == "end_turn"
    finally:
        await session.close()


def _diff(before: str, after: str) -> list[str]:
    """The line diff a user reads: every line break counts (`splitlines`), so a stray CR shows."""
    return list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))


@pytest.mark.parametrize("name", AGENTS)
async def test_the_review_shows_the_real_change(name: str, registry_agent: Any, workspace: str) -> None:
    """One line of a CRLF file changed: the review shows the file with that one line changed, and
    the accepted change on disk is exactly the change the review showed."""
    agent = REGISTRY_AGENTS[name]
    path, before = existing(workspace, "\r\n")
    setup = registry_agent(name, [agent.read(path), agent.edit(path, "three", "THREE"), "Done."], **ASKING[name])
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = lambda review: review.accept(review.proposal)
    await chat_once(setup, workspace, editor, view)
    assert len(editor.shown) == 1, f"reviews shown: {editor.shown!r}; notices: {view.notices!r}"
    shown = editor.shown[0][1]
    old = before.decode("utf-8")
    assert _diff(old, shown) == ["--- ", "+++ ", "@@ -3 +3 @@", "-three", "+THREE"], repr(shown)
    after = on_disk(path)
    assert _diff(old, after.decode("utf-8")) == _diff(old, shown), f"on disk: {after!r}; shown: {shown!r}"
    assert after == b"one\r\ntwo\r\nTHREE\r\nfour\r\n"


async def test_qwen_started_in_auto_edit_is_moved_to_its_asking_mode(registry_agent: Any, workspace: str) -> None:
    """A user whose Qwen Code settings say `tools.approvalMode: auto-edit`: it starts in a mode that
    writes through `fs/write_text_file` without asking, which the chat refuses, so no edit could ever
    be made. Moved to its asking mode (`default`), its edit is reviewed, and written once accepted."""
    agent = REGISTRY_AGENTS["qwen"]
    path, _ = existing(workspace, "\n")
    steps: list[Step] = [agent.read(path), agent.edit(path, "two", "TWO"), "Done."]
    setup = registry_agent("qwen", steps, approval_mode="auto-edit")
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = lambda review: review.accept(review.proposal)
    await chat_once(setup, workspace, editor, view)
    modes = view.called("mode")
    assert modes and modes[-1][0] == "default", f"modes: {modes!r}"
    assert [proposal for _, proposal, _ in editor.shown] == ["one\nTWO\nthree\nfour\n"], view.notices
    assert on_disk(path) == b"one\nTWO\nthree\nfour\n"


def test_opencode_out_of_the_box_never_passes_an_unreviewed_edit_off_as_reviewed(
    registry_agent: Any, workspace: str
) -> None:
    """opencode's own defaults: it starts in `build`, which edits without asking, and offers no asking
    mode to move it to. Under `--diff-policy reject`, either nothing is written, or the chat says the
    edit was applied without review and exits non-zero (exit 0 means every edit went through the
    policy)."""
    path = os.path.join(workspace, "new.txt")
    setup = registry_agent("opencode", [REGISTRY_AGENTS["opencode"].write(path, NEW_TEXT), "Done."])
    result = run_chat_cli(setup, workspace, "reject")
    if not os.path.exists(path):
        assert result.returncode == 0, explained(result)
        return
    assert result.returncode != 0, f"an edit applied without review, and exit 0: {explained(result)}"
    assert "without review" in (result.stdout + result.stderr).lower(), explained(result)
