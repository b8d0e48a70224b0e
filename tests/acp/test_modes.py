"""The mode a chat runs in (issue #27 item 3): the agent's asking mode picked from the modes it
advertises, the user's `mode` (setting, `--mode`), and the one-click switch offered when an edit
went through no review. Real subprocesses: the scripted agent (the SDK's agent side), `chat`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSetting, AgentSpec
from companion.acp.modes import Kind, NoAskingMode, asking_mode, kind, starting_mode
from companion.acp.session import ChatFailed, ChatSession
from companion.acp.view import Mode
from tests.acp.conftest import ROOT, AsyncEditor, RecordingView

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripted_agent.py")

# What real agents advertise (reference acp.md §2–4): id, name.
GEMINI = [Mode("default", "Default"), Mode("autoEdit", "Auto Edit"), Mode("yolo", "YOLO"), Mode("plan", "Plan")]
CLAUDE = [Mode("default", "Manual"), Mode("acceptEdits", "Accept Edits"), Mode("plan", "Plan"), Mode("auto", "Auto")]
QWEN = [Mode("plan", "Plan"), Mode("default", "Default"), Mode("auto-edit", "Auto Edit"), Mode("yolo", "YOLO")]
GOOSE = [Mode("auto", "Auto"), Mode("approve", "Approve"), Mode("smart_approve", "Smart Approve"), Mode("chat", "Chat")]
NO_ASKING = [Mode("read-only", "Read Only"), Mode("auto", "Default"), Mode("full-access", "Full Access")]
WRITES_FIRST = [Mode("accept-edits", "Accept edits"), Mode("ask", "Ask"), Mode("default", "Default")]


@pytest.mark.parametrize(
    ("modes", "asking"),
    [
        (GEMINI, "default"),
        (CLAUDE, "default"),
        (QWEN, "default"),
        (GOOSE, "approve"),
        (WRITES_FIRST, "ask"),  # `ask` is preferred to `default`
        ([Mode("m1", "Writes"), Mode("m2", "Manual")], "m2"),  # by name, for an id we do not know
        (NO_ASKING, None),  # `auto` named "Default" still writes: a name never overrides a known id
        ([], None),
    ],
)
def test_the_asking_mode_is_picked_from_what_the_agent_advertises(modes: list[Mode], asking: str | None) -> None:
    found = asking_mode(modes)
    assert (found.id if found else None) == asking


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (Mode("accept-edits", ""), Kind.WRITES),
        (Mode("acceptEdits", ""), Kind.WRITES),
        (Mode("auto_approve", ""), Kind.WRITES),
        (Mode("x", "Accept Edits"), Kind.WRITES),
        (Mode("bypassPermissions", ""), Kind.WRITES),
        (Mode("read-only", ""), Kind.READS),
        (Mode("Default", ""), Kind.ASKS),
        (Mode("build", "Build"), Kind.UNKNOWN),
    ],
)
def test_modes_compare_without_case_or_separators(mode: Mode, expected: Kind) -> None:
    assert kind(mode) is expected


def test_the_users_mode_wins_and_a_missing_one_says_which_exist() -> None:
    assert starting_mode("A", "accept-edits", WRITES_FIRST, "default").mode_id == "default"
    assert starting_mode("A", "ask", WRITES_FIRST, "accept-edits").mode_id == "accept-edits"
    assert starting_mode("A", "ask", WRITES_FIRST, "ask").mode_id is None  # already there: no set_mode
    with pytest.raises(ValueError, match=r"A has no mode 'manual'; its modes are \['accept-edits', 'ask', 'default'\]"):
        starting_mode("A", "ask", WRITES_FIRST, "manual")


def test_an_agent_that_writes_without_asking_and_has_no_asking_mode_is_not_started_silently() -> None:
    all_write = [Mode("auto", "Default"), Mode("full-access", "Full Access")]
    with pytest.raises(
        NoAskingMode, match=r"starts in mode 'auto', which applies edits without review.*set its \"mode\""
    ):
        starting_mode("Codex", "auto", all_write, None)
    # A mode not known to write beats one known to: there every edit is asked for, or seen writing.
    assert starting_mode("Codex", "auto", NO_ASKING, None).mode_id == "read-only"
    assert starting_mode("Odd", "build", [Mode("build", "Build")], None).mode_id is None  # unknown: kept


def test_mode_in_the_agents_setting() -> None:
    spec = AgentSpec.from_setting({"name": "Q", "command": ["qwen", "--acp"], "mode": " ask "})
    assert spec.mode == "ask" and spec.review_mode is None
    for bad in ("", 3, ["ask"]):
        with pytest.raises(AgentSetting, match="\"mode\" of agent 'Q' must be the id of one of its modes"):
            AgentSpec.from_setting({"name": "Q", "command": "qwen", "mode": bad})


# -- with the scripted agent --


def _modes(current: str, *ids: str) -> dict[str, Any]:
    return {"currentModeId": current, "availableModes": [{"id": i, "name": i.title()} for i in ids]}


def _environment(tmp_path: Any, modes: dict[str, Any], writes: str = "", fs_writes: str = "") -> dict[str, str]:
    return {
        **os.environ,
        "SCRIPTED_AGENT_MODES": json.dumps(modes),
        "SCRIPTED_AGENT_RECORD": str(tmp_path / "set_mode.txt"),
        "SCRIPTED_AGENT_WRITES": writes,
        "SCRIPTED_AGENT_FS_WRITES": fs_writes,
    }


def _text(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode()


def _set_modes(tmp_path: Any) -> list[str]:
    record = tmp_path / "set_mode.txt"
    return record.read_text().split() if record.exists() else []


async def _turn(workspace: str, env: dict[str, str], view: RecordingView, mode: str | None = None) -> ChatSession:
    """One turn of the scripted agent; the user rejects every review."""
    spec = AgentSpec("Scripted", (sys.executable, AGENT, "modes"), mode=mode)
    editor = AsyncEditor()
    editor.decide = lambda review: review.reject()
    session = ChatSession(spec, [workspace], editor, view, env=env)
    try:
        await session.start()
        await session.prompt("edit modes.txt")
    finally:
        await session.close()
    return session


@pytest.fixture
def modes_file(workspace: str) -> str:
    path = os.path.join(workspace, "modes.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("before\n")
    return path


async def test_an_agent_starting_in_a_writing_mode_is_moved_to_its_asking_mode(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("accept-edits", "accept-edits", "ask", "plan"), writes="accept-edits")
    view = RecordingView()
    session = await _turn(workspace, env, view)
    assert _set_modes(tmp_path) == ["ask"] and session.mode == "ask"
    assert _text(modes_file) == "before\n"  # asked, rejected: unchanged
    assert view.called("mode")[-1][0] == "ask"
    assert "Scripted started in mode 'accept-edits'; the chat runs in 'ask': Ask asks before each edit." in view.notices


async def test_an_agent_starting_in_a_mode_whose_writes_are_refused_is_moved_too(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("auto-approve", "auto-approve", "default"), fs_writes="auto-approve")
    view = RecordingView()
    editor_accepts = AsyncEditor()
    editor_accepts.decide = lambda review: review.accept(review.proposal)
    session = ChatSession(
        AgentSpec("Scripted", (sys.executable, AGENT, "modes")), [workspace], editor_accepts, view, env=env
    )
    try:
        await session.start()
        assert await session.prompt("edit modes.txt") == "end_turn"
    finally:
        await session.close()
    assert _set_modes(tmp_path) == ["default"]
    assert _text(modes_file) == "after\n"  # reviewed, accepted, written through fs/*


async def test_the_users_mode_is_set_even_one_that_writes_and_the_unreviewed_edit_offers_the_asking_mode(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("ask", "ask", "accept-edits"), writes="accept-edits")
    view = RecordingView()
    await _turn(workspace, env, view, mode="accept-edits")
    assert _set_modes(tmp_path) == ["accept-edits"]
    assert _text(modes_file) == "after\n"
    assert "Scripted runs in mode 'accept-edits', which applies edits without review (you set it)." in view.notices
    text = f"Scripted changed {modes_file} without asking: applied without review."
    assert view.called("offer_mode") == [(text, Mode("ask", "Ask"))]


async def test_a_write_refused_for_want_of_a_review_offers_the_asking_mode(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("ask", "ask", "auto-approve"), fs_writes="auto-approve")
    view = RecordingView()
    await _turn(workspace, env, view, mode="auto-approve")
    assert _text(modes_file) == "before\n"
    [(text, mode)] = view.called("offer_mode")
    assert text.startswith(f"Refused the write of {modes_file}: no review accepted it") and mode.id == "ask"


async def test_a_mode_the_agent_lacks_and_a_writing_agent_without_an_asking_mode_end_the_start_clearly(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("auto", "auto", "full-access"), writes="auto")
    with pytest.raises(ChatFailed, match=r"Scripted starts in mode 'auto', which applies edits without review"):
        await _turn(workspace, env, RecordingView())
    with pytest.raises(ChatFailed, match=r"Scripted has no mode 'ask'; its modes are \['auto', 'full-access'\]"):
        await _turn(workspace, env, RecordingView(), mode="ask")
    assert _text(modes_file) == "before\n" and _set_modes(tmp_path) == []


def _chat_command(workspace: str, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--prompt", "edit modes.txt"]
    argv += [*extra, "--", sys.executable, AGENT, "modes"]
    return subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_chat_under_reject_moves_a_writing_agent_to_its_asking_mode(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("accept-edits", "accept-edits", "ask"), writes="accept-edits")
    done = _chat_command(workspace, env, "--diff-policy", "reject")
    assert _set_modes(tmp_path) == ["ask"], done.stderr
    assert _text(modes_file) == "before\n"


def test_chat_mode_option_and_the_line_that_says_how_to_switch_back(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("ask", "ask", "accept-edits"), writes="accept-edits")
    done = _chat_command(workspace, env, "--diff-policy", "reject", "--mode", "accept-edits")
    assert _set_modes(tmp_path) == ["accept-edits"], done.stderr
    assert "To review its edits, switch to its mode 'ask', which asks: run the chat with --mode ask." in done.stdout
    empty = _chat_command(workspace, env, "--mode", " ")
    assert empty.returncode == 2 and "error: --mode needs the id of one of the agent's modes" in empty.stderr


# -- by behaviour, not by name (issue #36) --


def test_an_agent_whose_asking_mode_is_named_read_only_is_started_there_and_its_edit_reviewed(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("auto", "read-only", "auto", "full-access"), writes="auto")
    done = _chat_command(workspace, env, "--diff-policy", "reject")
    assert done.returncode == 0, done.stdout + done.stderr  # was: refused at start, "no mode asks before each edit"
    assert _set_modes(tmp_path) == ["read-only"]
    assert "the chat runs in 'read-only'" in done.stdout
    assert _text(modes_file) == "before\n"  # asked in read-only, rejected by the policy
    assert "without review" not in done.stderr


async def test_a_mode_seen_writing_without_asking_is_a_writing_mode_whatever_its_name(
    workspace: str, modes_file: str, tmp_path: Any
) -> None:
    env = _environment(tmp_path, _modes("default", "default", "approve"), writes="default")
    view = RecordingView()
    session = await _turn(workspace, env, view)
    assert _text(modes_file) == "after\n"
    text = f"Scripted changed {modes_file} without asking: applied without review."
    assert view.called("offer_mode") == [(text, Mode("approve", "Approve"))]  # not `default` again
    assert kind(Mode("default", "Default"), session.seen) is Kind.WRITES


def test_a_mode_whose_description_says_it_asks_is_an_asking_mode() -> None:
    careful = Mode("careful", "Careful", "Asks for your approval before each file edit")
    writes = Mode("fast", "Fast", "Edits files without asking for approval")
    assert asking_mode([writes, careful]) == careful
    assert kind(writes) is Kind.UNKNOWN
    assert starting_mode("A", "auto", [Mode("auto", "Auto"), careful], None).mode_id == "careful"
