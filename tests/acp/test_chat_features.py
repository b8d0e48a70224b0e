"""What a chat UI needs from a session, with the scripted agent (the SDK's agent side, a real
subprocess): every update kind reaches the ChatView, modes and config options, prompts with
workspace files, a refused continue; and agents from the settings."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from companion.acp.agents.agents import AgentSetting, AgentSpec
from companion.acp.prompt.resources import Resource, ResourceRefused
from companion.acp.session import ChatFailed, ChatSession
from companion.acp.view import (
    Command,
    ConfigChoice,
    ConfigOption,
    Location,
    Mode,
    PlanEntry,
    ToolCall,
    ToolDiff,
    Usage,
)
from tests.acp.conftest import AsyncEditor, RecordingView

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripted_agent.py")
MODEL_CHOICES = (ConfigChoice("small", "Small", None, "Fast"), ConfigChoice("large", "Large", "Slow", "Strong"))


async def _chat(workspace: str, behaviour: str, view: RecordingView, env: dict[str, str] | None = None) -> ChatSession:
    spec = AgentSpec("Scripted", (sys.executable, AGENT, behaviour))
    session = ChatSession(spec, [workspace], AsyncEditor(), view, env={**os.environ, **(env or {})})
    return session


@pytest.fixture
async def every_update(workspace: str) -> AsyncIterator[tuple[ChatSession, RecordingView]]:
    view = RecordingView()
    session = await _chat(workspace, "every-update", view)
    try:
        await session.start()
        yield session, view
    finally:
        await session.close()


async def test_every_update_kind_reaches_the_view_as_plain_values(
    every_update: tuple[ChatSession, RecordingView], workspace: str
) -> None:
    session, view = every_update
    view.calls.clear()
    assert await session.prompt("go") == "end_turn"
    path = os.path.join(workspace, "scripted.txt")
    started = ToolCall("t1", "Edit scripted.txt", "edit", "pending", (Location(path, 4),))
    diff = (ToolDiff(path, "a\n", "b\n"),)  # what the view links to: this edit had no review
    done = ToolCall("t1", "Edit scripted.txt", "edit", "completed", (Location(path, 4),), diff, "edited")
    assert view.calls == [
        ("user_text", "what the user said"),
        ("thought", "thinking"),
        ("agent_text", "the reply"),
        ("notice", ("Compacting the conversation", "agent")),  # Claude's informational chunk
        ("tool_call", started),
        ("tool_call", done),  # the update merged into the call: title, kind and locations kept
        ("notice", (f"Scripted changed {path} without asking: applied without review.", "warning")),
        ("plan", [PlanEntry("Edit the file", "high", "completed"), PlanEntry("Fix it", "medium", "pending")]),
        ("usage", Usage(1200, 200000, 0.25, "USD")),
        (
            "available_commands",
            [Command("review", "Review the changes", "what to review"), Command("compact", "Compact the conversation")],
        ),
        ("mode", ("code", [Mode("ask", "Ask", "Asks before every edit"), Mode("code", "Code")])),
        ("config_options", [ConfigOption("model", "Model", "select", "large", MODEL_CHOICES, None, "model")]),
        ("session_info", "Fixing scripted.txt"),
        ("turn_ended", "end_turn"),
    ]
    assert session.mode == "code" and session.title == "Fixing scripted.txt"


async def test_modes_and_config_options_of_session_new_and_their_changes(
    every_update: tuple[ChatSession, RecordingView],
) -> None:
    session, view = every_update
    modes = [Mode("ask", "Ask", "Asks before every edit"), Mode("code", "Code")]
    assert view.called("mode") == [("ask", modes)]
    assert view.called("config_options") == [
        [ConfigOption("model", "Model", "select", "small", MODEL_CHOICES, None, "model")]
    ]
    await session.set_mode("code")
    assert session.mode == "code" and view.called("mode")[-1] == ("code", modes)
    await session.set_model("large")  # no `models`: the config option `model`, as Claude has it
    assert view.called("config_options")[-1][0].current == "large"
    with pytest.raises(ChatFailed, match="has no mode 'yolo'; pick one of"):
        await session.set_mode("yolo")
    with pytest.raises(ChatFailed, match="'huge' is not a value of Model; pick one of"):
        await session.set_config_option("model", "huge")
    assert session.mode == "code" and session.config[0].current == "large"


async def test_continuing_a_session_is_refused_when_the_agent_cannot_load(workspace: str) -> None:
    session = await _chat(workspace, "every-update", RecordingView())
    try:
        assert not session.session_id
        with pytest.raises(ChatFailed, match=r"cannot continue a saved session .* start a new chat instead"):
            await session.load("s1")
        assert session.can_load is False and not session.session_id
    finally:
        await session.close()


@pytest.mark.parametrize("behaviour", ["embed", "links"])
async def test_workspace_files_go_embedded_or_as_links_by_the_agents_capability(
    workspace: str, tmp_path: Any, behaviour: str
) -> None:
    record = os.path.join(str(tmp_path), "prompts.jsonl")
    path = os.path.join(workspace, "notes.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("one\ntwo\nthree\nfour\n")
    session = await _chat(workspace, behaviour, RecordingView(), {"SCRIPTED_AGENT_RECORD": record})
    try:
        await session.start()
        await session.prompt("look", [Resource(path), Resource(path, lines=(2, 3))])
    finally:
        await session.close()
    with open(record, encoding="utf-8") as handle:
        (blocks,) = [json.loads(line) for line in handle]
    uri = f"file://{path}"
    note = {"type": "text", "text": f"[Lines 2-3 of {path}:]"}
    if behaviour == "embed":
        assert blocks[1:] == [
            {"type": "resource", "resource": {"uri": uri, "text": "one\ntwo\nthree\nfour\n"}},
            note,
            {"type": "resource", "resource": {"uri": uri, "text": "two\nthree\n"}},
        ]
    else:
        link = {"type": "resource_link", "name": "notes.txt", "uri": uri}
        assert blocks[1:] == [link, note, link]
    assert blocks[0] == {"type": "text", "text": "look"}


async def test_a_file_outside_the_workspace_is_refused_and_nothing_is_sent(workspace: str, tmp_path: Any) -> None:
    record = os.path.join(str(tmp_path), "prompts.jsonl")
    outside = os.path.join(str(tmp_path), "secret.txt")
    with open(outside, "w", encoding="utf-8") as handle:
        handle.write("secret\n")
    session = await _chat(workspace, "embed", RecordingView(), {"SCRIPTED_AGENT_RECORD": record})
    try:
        await session.start()
        with pytest.raises(ResourceRefused, match=r"secret.txt was not sent: .*outside the window's folders"):
            await session.prompt("look", [Resource(outside)])
        assert await session.prompt("again") == "end_turn"  # the chat goes on
    finally:
        await session.close()
    with open(record, encoding="utf-8") as handle:
        assert [json.loads(line) for line in handle] == [[{"type": "text", "text": "again"}]]


def test_an_agent_from_the_settings() -> None:
    spec = AgentSpec.from_setting({"name": "Codex", "command": "codex-acp", "args": ["--x"], "env": {"K": "v"}})
    assert (spec.name, spec.command, dict(spec.env), spec.review_mode) == (
        "Codex",
        ("codex-acp", "--x"),
        {"K": "v"},
        None,
    )
    claude = AgentSpec.from_setting({"name": "My Claude", "command": ["/opt/bin/claude-agent-acp"]})
    assert claude.review_mode == "default" and claude.session_meta  # the preset's program keeps its review mode


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("codex-acp", "an agent must be an object like"),
        ({"command": ["codex-acp"]}, 'needs a "name"'),
        ({"name": "Codex"}, "agent 'Codex' needs a \"command\""),
        ({"name": "Codex", "command": []}, 'needs a "command"'),
        ({"name": "Codex", "command": [1]}, 'needs a "command"'),
        ({"name": "Codex", "command": "x", "args": "--y"}, "\"args\" of agent 'Codex' must be a list of strings"),
        ({"name": "Codex", "command": "x", "env": {"K": 1}}, "\"env\" of agent 'Codex' must map names to strings"),
        ({"name": "Codex", "command": "x", "cmd": "y"}, r"unknown key\(s\) \['cmd'\]"),
    ],
)
def test_a_bad_agent_entry_says_what_to_write(entry: Any, message: str) -> None:
    with pytest.raises(AgentSetting, match=message):
        AgentSpec.from_setting(entry)


async def test_the_agents_env_from_the_settings_reaches_it_without_ide_variables(workspace: str) -> None:
    spec = AgentSpec.from_setting({"name": "A", "command": "a", "env": {"EXTRA": "1", "GEMINI_CLI_IDE_PORT": "9"}})
    session = ChatSession(spec, [workspace], AsyncEditor(), RecordingView(), env={"PATH": "/bin"})
    assert session.env == {"PATH": "/bin", "EXTRA": "1"}
