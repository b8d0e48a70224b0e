"""The chat with Codex (registry id `codex-acp`, pinned in tests/conformance/codex), whose every edit
is one `apply_patch` call that may touch several files, run offline against `ResponsesStandIn`
(tests/conformance/registry_agents.py says how).

What Codex does over ACP (observed with 0.16.0; the tests below depend on it): one
`session/request_permission` per patch, whatever the number of files, whose `toolCall` holds one
diff block per file with that file's whole old and new text, one location per file, and
`rawInput.changes` (path -> unified diff); options `approved` (allow_once) and `abort` (reject_once).
After `approved` it writes every file of the patch itself (never `fs/write_text_file`); after
`abort` it writes none. Its patch rewrites each line of a hunk, context included, with LF: a one-line
edit of a CRLF file leaves the hunk's lines LF and the rest CRLF, and its diff block says so.

What a user depends on: each file of the patch is reviewed on its own; accepting all writes exactly
the accepted bytes to every file; any rejected file rejects the whole patch (Codex can only take it
or leave it), nothing is written, and the chat says which file was rejected; a CRLF file's one-line
edit lands byte for byte as the review showed it, line-ending change included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatSession
from companion.core.reviews import Review
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView, _base_env
from tests.conformance.openai_standin import Step, tool_call
from tests.conformance.registry_agents import CODEX, Update
from tests.conformance.responses_standin import ResponsesStandIn

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]

PROMPT = "Please make the change."
NAMES = ("a.txt", "b.txt", "c.txt")


@dataclass
class Setup:
    command: list[str]
    env: dict[str, str]
    model: ResponsesStandIn


@pytest.fixture
def codex(tmp_path: str) -> Iterator[Callable[[list[Step]], Setup]]:
    """`codex(steps)` -> Setup: codex-acp offline, its model playing `steps`."""
    models: list[ResponsesStandIn] = []

    def make(steps: list[Step]) -> Setup:
        home, tmpdir = os.path.join(str(tmp_path), "home"), os.path.join(str(tmp_path), "tmp")
        os.makedirs(home, exist_ok=True)
        os.makedirs(tmpdir, exist_ok=True)
        model = ResponsesStandIn(steps).__enter__()
        models.append(model)
        env = _base_env(home, tmpdir)
        env.update(CODEX.configure(home, model.base_url, {}))
        return Setup(CODEX.command(), env, model)

    yield make
    for model in models:
        model.__exit__(None, None, None)


def write(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def on_disk(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def three_files(workspace: str) -> tuple[dict[str, str], dict[str, bytes], list[Step]]:
    """Three LF files and the one patch that changes line two of each: (paths, before, steps)."""
    paths = {name: os.path.join(workspace, name) for name in NAMES}
    before = {name: b"one\ntwo\nthree\n" for name in NAMES}
    for name, path in paths.items():
        write(path, before[name])
    updates = [Update(paths[name], ("one",), ("two",), (f"TWO {name}",), ("three",)) for name in NAMES]
    return paths, before, [CODEX.patch(*updates), "Done."]


async def chat_once(setup: Setup, workspace: str, editor: AsyncEditor, view: RecordingView) -> str:
    """One prompt through the core ChatSession, the user played by `editor`; the stop reason."""
    session = ChatSession(custom_agent(setup.command), [workspace], editor, view, env=setup.env)
    await session.start()
    try:
        return await session.prompt(PROMPT)
    finally:
        await session.close()


def decide_by_name(rejected: set[str]) -> Callable[[Review], None]:
    """The user accepts each review as shown, except those of the files named in `rejected`."""

    def decide(review: Review) -> None:
        if os.path.basename(review.file_path) in rejected:
            review.reject()
        else:
            review.accept(review.proposal)

    return decide


def shown(editor: AsyncEditor) -> dict[str, str]:
    """Each reviewed file's name -> the proposal the user saw."""
    return {os.path.basename(review.file_path): proposal for review, proposal, _ in editor.shown}


async def test_a_patch_of_three_files_is_reviewed_file_by_file_and_written_exactly(codex: Any, workspace: str) -> None:
    paths, _, steps = three_files(workspace)
    setup = codex(steps)
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = decide_by_name(set())
    assert await chat_once(setup, workspace, editor, view) == "end_turn", view.notices
    expected = {name: f"one\nTWO {name}\nthree\n" for name in NAMES}
    assert shown(editor) == expected, f"reviews: {editor.shown!r}; notices: {view.notices!r}"
    assert {name: on_disk(path) for name, path in paths.items()} == {
        name: text.encode("utf-8") for name, text in expected.items()
    }, view.notices
    assert not [n for n in view.notices if "after your review" in n or "without review" in n], view.notices


async def test_a_patch_with_one_file_rejected_writes_none_and_says_which(codex: Any, workspace: str) -> None:
    """Accept a and c, reject b: Codex can only take the whole patch or leave it, so the companion
    answers its reject option (`abort`, which ends Codex's turn `cancelled`); nothing is written,
    and a notice names b.txt as the rejected file."""
    paths, before, steps = three_files(workspace)
    setup = codex(steps)
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = decide_by_name({"b.txt"})
    stop = await chat_once(setup, workspace, editor, view)
    assert "b.txt" in shown(editor), f"reviews: {editor.shown!r}; notices: {view.notices!r}"
    assert {name: on_disk(path) for name, path in paths.items()} == before
    assert stop == "cancelled", f"Codex ends its turn so on `abort`: {stop!r}; notices: {view.notices!r}"
    assert [n for n in view.notices if "b.txt" in n and "reject" in n.lower()], view.notices


def run_chat_cli(setup: Setup, workspace: str, policy: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """`companion chat --diff-policy POLICY --checkpoints --prompt ...`, as a user runs it: (result, explained)."""
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--diff-policy", policy]
    argv += ["--checkpoints", "--prompt", PROMPT, "--", *setup.command]
    result = subprocess.run(
        argv, cwd=ROOT, env=setup.env, capture_output=True, text=True, encoding="utf-8", timeout=4 * CEILING
    )
    return result, f"exit {result.returncode}\nstdout: {result.stdout[-3000:]}\nstderr: {result.stderr[-2000:]}"


def test_headless_a_patch_of_three_files_rejected_is_not_an_error(codex: Any, workspace: str) -> None:
    """`--diff-policy reject`: Codex's only reject option ends its turn `cancelled`. That is the
    user's own answer, not a failure: exit 0 or 4 (never 1), no `error:` line, nothing written."""
    paths, before, steps = three_files(workspace)
    result, explained = run_chat_cli(codex(steps), workspace, "reject")
    assert result.returncode in (0, 4), explained
    assert "error:" not in result.stderr, explained
    assert {name: on_disk(path) for name, path in paths.items()} == before


def crlf_edit(workspace: str) -> tuple[str, list[Step], bytes]:
    """A CRLF file and a patch changing its second line: (path, steps, what Codex writes).

    Codex rewrites the lines of the hunk (context included) with LF and leaves the rest CRLF."""
    path = os.path.join(workspace, "crlf.txt")
    write(path, b"one\r\ntwo\r\nthree\r\nfour\r\n")
    steps: list[Step] = [CODEX.patch(Update(path, ("one",), ("two",), ("TWO",), ("three",))), "Done."]
    return path, steps, b"one\nTWO\nthree\nfour\r\n"


# The review keeps the file's CRLF on the lines Codex sends with LF (acp/review/edits.py `_with_breaks_of`);
# Codex writes its own LF lines after the permission, and the companion, finding exactly Codex's
# proposal on disk, writes the accepted bytes (session.py `_land_accepted`).


async def test_a_one_line_edit_of_a_crlf_file_lands_exactly_as_reviewed(codex: Any, workspace: str) -> None:
    """A CRLF file's second line changed: the review shows either the file kept CRLF with that one
    line changed, or what Codex writes (its hunk's lines LF) with the change of line endings; once
    accepted, the file holds exactly the bytes shown, and the edit counts as reviewed."""
    path, steps, written = crlf_edit(workspace)
    setup = codex(steps)
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = decide_by_name(set())
    assert await chat_once(setup, workspace, editor, view) == "end_turn", view.notices
    kept = "one\r\nTWO\r\nthree\r\nfour\r\n"
    assert [proposal for _, proposal, _ in editor.shown] in ([kept], [written.decode("utf-8")]), view.notices
    assert on_disk(path) == editor.shown[0][1].encode("utf-8"), f"shown {editor.shown[0][1]!r}"
    assert not [n for n in view.notices if "after your review" in n or "without review" in n], view.notices


async def test_a_crlf_edit_is_never_called_reviewed_unless_on_disk_as_shown(codex: Any, workspace: str) -> None:
    """Whatever the review showed: either the file holds exactly those bytes, or the chat names it as
    changed after your review."""
    path, steps, _ = crlf_edit(workspace)
    setup = codex(steps)
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = decide_by_name(set())
    assert await chat_once(setup, workspace, editor, view) == "end_turn", view.notices
    assert len(editor.shown) == 1, view.notices
    if on_disk(path) != editor.shown[0][1].encode("utf-8"):
        assert [n for n in view.notices if "crlf.txt" in n and "after your review" in n], (
            f"on disk {on_disk(path)!r}, shown {editor.shown[0][1]!r}, and no notice: {view.notices!r}"
        )


def test_headless_a_patch_of_three_files_accepted_is_reviewed_and_exact(codex: Any, workspace: str) -> None:
    """As a user runs it: `companion chat --diff-policy accept --checkpoints`. Exit 0 says every edit
    went through the review; the change set must say each of the three files is reviewed (none
    "outside"), and each holds exactly what Codex wrote, which is what the review showed."""
    paths, _, steps = three_files(workspace)
    result, explained = run_chat_cli(codex(steps), workspace, "accept")
    assert result.returncode == 0, explained
    assert {name: on_disk(path) for name, path in paths.items()} == {
        name: f"one\nTWO {name}\nthree\n".encode() for name in NAMES
    }, explained
    for path in paths.values():
        listed = [line for line in result.stdout.splitlines() if line.strip().startswith("modified") and path in line]
        assert len(listed) == 1 and listed[0].rstrip().endswith(" reviewed"), explained
        assert "not reviewed" not in listed[0] and "outside" not in listed[0], explained
    assert "warning:" not in result.stderr, explained


# Codex's rawInput carries no patch text: `changes` maps the source path to
# {type: "update", unified_diff, move_path}, and the one diff block names the target (with the
# source's text as oldText): file_changes.py reads the rename from `changes`.
async def test_a_rename_with_an_edit_is_reviewed_as_a_rename(codex: Any, workspace: str) -> None:
    source, target = os.path.join(workspace, "old.txt"), os.path.join(workspace, "moved.txt")
    write(source, b"one\ntwo\n")
    patch = "\n".join(["*** Begin Patch", f"*** Update File: {source}", f"*** Move to: {target}", "@@", " one"])
    setup = codex([tool_call(CODEX.patch_tool, input=patch + "\n-two\n+TWO\n*** End Patch\n"), "Done."])
    editor, view = AsyncEditor(), RecordingView()
    editor.decide = decide_by_name(set())
    assert await chat_once(setup, workspace, editor, view) == "end_turn", view.notices
    reviews = [(review.renamed_from, review.file_path, proposal) for review, proposal, _ in editor.shown]
    assert reviews == [(source, target, "one\nTWO\n")], view.notices
    assert (on_disk(target), os.path.exists(source)) == (b"one\nTWO\n", False)
    assert not [n for n in view.notices if "after your review" in n or "without review" in n], view.notices
