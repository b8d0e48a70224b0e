"""What the agent asks of the user (issue #40): `elicitation/create` forms asked field by field and
checked against the requested schema, URLs shown in full and opened only once confirmed; every
config option (booleans too) set from `/config`. With tests/acp/login_agent.py (`asks`)."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import threading
import webbrowser
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.asks.elicitation import form_fields, parse
from companion.acp.session import ChatSession
from companion.headless.chat import TerminalView
from companion.headless.console import Console, StdinLines
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.login_agent import URL, recorded
from tests.acp.test_login import AGENT, agent_env

pytestmark = pytest.mark.anyio


async def turn(workspace: str, tmp_path: Any, view: Any, prompt: str) -> list[dict[str, Any]]:
    """One turn with the asking agent; the answers it recorded to elicitation/create."""
    env = agent_env(tmp_path)
    session = ChatSession(custom_agent([sys.executable, AGENT, "asks"]), [workspace], AsyncEditor(), view, env=env)
    try:
        await session.start()
        assert await session.prompt(prompt) == "end_turn"
    finally:
        await session.close()
    return [r["params"] for r in recorded(env["LOGIN_AGENT_RECORD"]) if r["method"] == "elicitation/create"]


async def test_a_form_is_asked_field_by_field_and_each_answer_checked(workspace: str, tmp_path: Any) -> None:
    # Answer; name "A" is too short, then "Ada"; subscribe: Yes; color: blue; age: "old", "-3", then 42.
    view = RecordingView(picks=[0, 0, 2], texts=["A", "Ada", "old", "-3", "42"])
    answers = await turn(workspace, tmp_path, view, "form")
    assert answers == [{"action": "accept", "content": {"name": "Ada", "subscribe": True, "color": "blue", "age": 42}}]
    assert [q for q in view.questions] == [
        ("pick", ("python asks: the form of the test", ["Answer", "Decline"])),
        ("text", ("Your name", "string")),
        ("text", ("Your name", "string")),
        ("pick", ("Subscribe", ["Yes", "No"])),
        ("pick", ("Color", ["red", "green", "blue"])),
        ("text", ("Age (optional)", "integer")),
        ("text", ("Age (optional)", "integer")),
        ("text", ("Age (optional)", "integer")),
    ]
    assert [n for n in view.notices if "try again" in n] == [
        "Your name takes at least 2 characters; try again (Escape cancels the form).",
        "Age is a whole number, such as 3; try again (Escape cancels the form).",
        "Age is at least 0; try again (Escape cancels the form).",
    ]
    assert view.text == ["Elicitation: accept."]


async def test_an_optional_field_left_empty_is_left_out(workspace: str, tmp_path: Any) -> None:
    view = RecordingView(picks=[0, 1, 0], texts=["Bo", ""])
    answers = await turn(workspace, tmp_path, view, "form")
    assert answers == [{"action": "accept", "content": {"name": "Bo", "subscribe": False, "color": "red"}}]


@pytest.mark.parametrize(
    ("picks", "texts", "action"),
    [([1], [], "decline"), ([None], [], "cancel"), ([0], [None], "cancel"), ([0, 0, None], ["Ada"], "cancel")],
)
async def test_a_form_declined_or_dismissed_answers_so_and_sends_nothing(
    workspace: str, tmp_path: Any, picks: list[int | None], texts: list[str | None], action: str
) -> None:
    view = RecordingView(picks=picks, texts=texts)
    assert await turn(workspace, tmp_path, view, "form") == [{"action": action}]
    assert view.text == [f"Elicitation: {action}."]


async def test_a_url_is_shown_in_full_and_opened_only_once_confirmed(workspace: str, tmp_path: Any) -> None:
    view = RecordingView(confirms=[True])
    assert await turn(workspace, tmp_path, view, "url") == [{"action": "accept"}]
    assert view.questions == [("url", ("python asks you to open this address: the url of the test", URL))]
    assert view.opened == [URL]


@pytest.mark.parametrize(("confirm", "action"), [(False, "decline"), (None, "cancel")])
async def test_a_url_declined_is_never_opened(workspace: str, tmp_path: Any, confirm: bool | None, action: str) -> None:
    view = RecordingView(confirms=[confirm])
    assert await turn(workspace, tmp_path, view, "url") == [{"action": action}]
    assert view.opened == []


async def test_a_question_still_open_when_the_chat_closes_is_cancelled(workspace: str, tmp_path: Any) -> None:
    asked = asyncio.Event()

    class Waiting(RecordingView):
        async def pick(self, title: str, items: list[str]) -> int | None:
            asked.set()
            await asyncio.Event().wait()  # the user never answers
            return None

    env = agent_env(tmp_path)
    session = ChatSession(custom_agent([sys.executable, AGENT, "asks"]), [workspace], AsyncEditor(), Waiting(), env=env)
    try:
        await session.start()
        prompt = asyncio.ensure_future(session.prompt("form"))
        await asyncio.wait_for(asked.wait(), CEILING)
        await session.cancel()  # the turn's cancel withdraws the question: answered `cancel`
        assert await asyncio.wait_for(prompt, CEILING) == "end_turn"
    finally:
        await session.close()
    answers = [r["params"] for r in recorded(env["LOGIN_AGENT_RECORD"]) if r["method"] == "elicitation/create"]
    assert answers == [{"action": "cancel"}]


def test_each_schema_type_is_checked_with_a_message_saying_what_fits() -> None:
    schema = {
        "properties": {
            "ratio": {"type": "number", "title": "Ratio", "minimum": 0, "maximum": 1},
            "tier": {"type": "string", "title": "Tier", "oneOf": [{"const": "a", "title": "Tier A"}]},
            "code": {"type": "string", "title": "Code", "pattern": "^[0-9]{4}$", "maxLength": 4},
        },
        "required": ["ratio"],
    }
    ratio, tier, code = form_fields(schema)
    assert (ratio.kind, ratio.required, tier.kind, tier.choices, code.required) == (
        "number",
        True,
        "enum",
        (("a", "Tier A"),),
        False,
    )
    assert parse(ratio, "0.25") == 0.25
    for text, why in [("half", "Ratio is a number, such as 2.5"), ("2", "Ratio is at most 1"), ("nan", "finite")]:
        with pytest.raises(ValueError, match=why):
            parse(ratio, text)
    assert parse(code, "1234") == "1234"
    with pytest.raises(ValueError, match=r"Code must match \^\[0-9\]\{4\}\$"):
        parse(code, "12a4")
    with pytest.raises(ValueError, match="at most 4 characters"):
        parse(code, "12345")


def terminal_view(answers: str) -> tuple[TerminalView, io.StringIO]:
    out = io.StringIO()
    return TerminalView("prompt", console=Console(out, lines=StdinLines(io.StringIO(answers)))), out


@pytest.mark.parametrize(("answer", "action"), [("y", "accept"), ("n", "decline")])
async def test_the_terminal_chat_prints_the_url_in_full_and_opens_it_after_yes(
    workspace: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, answer: str, action: str
) -> None:
    opened: list[str] = []
    done = threading.Event()
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or done.set())
    view, out = terminal_view(f"{answer}\n")
    assert await turn(workspace, tmp_path, view, "url") == [{"action": action}]
    assert f"python asks you to open this address: the url of the test\n  {URL}\nOpen it in your browser? [y/n]: " in (
        out.getvalue()
    )
    if answer == "y":
        assert done.wait(CEILING)
    assert opened == ([URL] if answer == "y" else [])


async def test_the_terminal_chat_asks_a_form_on_the_console(workspace: str, tmp_path: Any) -> None:
    view, out = terminal_view("1\nAda\n2\n3\n7\n")
    answers = await turn(workspace, tmp_path, view, "form")
    assert answers == [{"action": "accept", "content": {"name": "Ada", "subscribe": False, "color": "blue", "age": 7}}]
    assert "\nColor\n  1) red\n  2) green\n  3) blue\n" in out.getvalue()


def chat_cli(workspace: str, tmp_path: Any, stdin: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, "--", sys.executable, AGENT, "asks"]
    env = {**agent_env(tmp_path), "PYTHONPATH": ROOT}
    return subprocess.run(argv, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=CEILING)


def test_config_lists_every_option_and_sets_a_boolean(workspace: str, tmp_path: Any) -> None:
    result = chat_cli(workspace, tmp_path, "/config\n/config fast on\n/config fast maybe\n/config effort high\n")
    assert result.returncode == 0, result.stderr
    assert "Options of python:\n  fast (Fast mode): off  [on | off]\n  effort (Effort): Low  [low | high]\n" in (
        result.stdout
    )
    assert "[Fast mode: on]\n" in result.stdout
    assert "error: Fast mode is on or off, not 'maybe'\n" in result.stdout
    assert "[Effort: High]\n" in result.stdout
    sets = [r["params"] for r in recorded(agent_env(tmp_path)["LOGIN_AGENT_RECORD"]) if "config" in r["method"]]
    assert sets == [{"configId": "fast", "value": True}, {"configId": "effort", "value": "high"}]
    assert os.path.isdir(workspace)
