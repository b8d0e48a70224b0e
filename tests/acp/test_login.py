"""Logging in from the chat (issue #40): an agent whose session/new answers auth_required has its
`authMethods` offered, the chosen one is run (`authenticate`, or its terminal login command), and
then the session starts; `chat --login` offers them before the session. With tests/acp/login_agent.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest

from companion.acp.agents.agents import custom_agent
from companion.acp.session import ChatFailed, ChatSession
from companion.acp.view import LoginCommand
from tests.acp.conftest import CEILING, ROOT, AsyncEditor, RecordingView
from tests.acp.login_agent import CODE, recorded

pytestmark = pytest.mark.anyio
AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "login_agent.py")


def agent_env(tmp_path: Any) -> dict[str, str]:
    root = str(tmp_path)
    return {
        **os.environ,
        "LOGIN_AGENT_RECORD": os.path.join(root, "record.jsonl"),
        "LOGIN_AGENT_MARKER": os.path.join(root, "marker"),
    }


def methods(env: dict[str, str]) -> list[str]:
    return [r["method"] for r in recorded(env["LOGIN_AGENT_RECORD"])]


async def started(workspace: str, behaviour: str, view: RecordingView, env: dict[str, str], login: bool = False) -> str:
    """Start a chat with the login agent; '' when it started, else the one-line failure."""
    session = ChatSession(custom_agent([sys.executable, AGENT, behaviour]), [workspace], AsyncEditor(), view, env=env)
    try:
        await session.start(login=login)
        assert session.session_id == "s1"
        assert await session.prompt("Hello") == "end_turn"
        return ""
    except ChatFailed as exc:
        return str(exc)
    finally:
        await session.close()


async def test_the_agents_own_login_runs_and_then_the_session_starts(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path)
    view = RecordingView(picks=[0])
    assert await started(workspace, "agent", view, env) == ""
    assert methods(env) == ["initialize", "session/new", "authenticate", "session/new", "session/prompt"]
    assert [r["params"] for r in recorded(env["LOGIN_AGENT_RECORD"]) if r["method"] == "authenticate"] == ["oauth"]
    ((kind, (title, items)),) = view.questions
    assert kind == "pick" and title == "python needs a login (Authentication required): choose how"
    assert items == ["Log in with the browser — OAuth — the agent logs you in", "API key — set EXAMPLE_API_KEY"]
    assert view.text == ["Hello."]


async def test_the_client_advertises_terminal_logins_elicitation_and_boolean_options(
    workspace: str, tmp_path: Any
) -> None:
    env = agent_env(tmp_path)
    assert await started(workspace, "asks", RecordingView(), env) == ""
    capabilities = recorded(env["LOGIN_AGENT_RECORD"])[0]["params"]
    assert capabilities["auth"] == {"terminal": True}
    assert capabilities["elicitation"] == {"form": {}, "url": {}}
    assert capabilities["session"] == {"configOptions": {"boolean": {}}}


async def test_no_login_chosen_ends_the_start_saying_why(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path)
    failure = await started(workspace, "agent", RecordingView(picks=[None]), env)
    assert failure.startswith("python needs a login (Authentication required)")
    assert "authenticate" not in methods(env)


async def test_an_env_var_login_names_the_variable_and_never_a_value(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path)
    failure = await started(workspace, "agent", RecordingView(picks=[1]), env)
    assert failure == (
        "To log in to python with API key, set EXAMPLE_API_KEY (Example key) in its environment "
        '(the "env" of its entry in the setting "agents"; for `chat`, the shell\'s environment), then start a new '
        "chat; get the value at https://example.com/keys."
    )


def type_code(command: LoginCommand, code: str = CODE) -> bool:
    """What the user does in the terminal: the login command runs, and they type the code."""
    result = subprocess.run(
        list(command.argv),
        cwd=command.cwd,
        env={**os.environ, **command.env},
        input=code + "\n",
        capture_output=True,
        text=True,
        timeout=CEILING,
    )
    return result.returncode == 0


async def test_a_terminal_login_runs_the_agents_command_and_then_the_session_starts(
    workspace: str, tmp_path: Any
) -> None:
    env = agent_env(tmp_path)
    view = RecordingView(picks=[0], login_runner=type_code)
    assert await started(workspace, "terminal", view, env) == ""
    (command,) = [what for kind, what in view.questions if kind == "login"]
    assert command.argv == (sys.executable, AGENT, "terminal", "--login") and command.cwd == workspace
    assert dict(command.env) == {"LOGIN_MARKER": env["LOGIN_AGENT_MARKER"]}
    assert "LOGIN_MARKER" not in repr(command)  # the environment may hold secrets: never in a repr or log
    assert methods(env) == ["initialize", "session/new", "session/new", "session/prompt"]


async def test_a_terminal_login_that_fails_offers_the_login_again(workspace: str, tmp_path: Any) -> None:
    env = agent_env(tmp_path)
    codes = ["wrong", CODE]
    view = RecordingView(picks=[0, 0], login_runner=lambda command: type_code(command, codes.pop(0)) or True)
    assert await started(workspace, "terminal", view, env) == ""
    assert [kind for kind, _ in view.questions] == ["pick", "login", "pick", "login"]


async def test_a_login_asked_for_at_the_first_prompt_runs_and_the_prompt_is_sent_again(
    workspace: str, tmp_path: Any
) -> None:
    env = agent_env(tmp_path)
    view = RecordingView(picks=[0])
    assert await started(workspace, "prompt-auth", view, env) == ""
    assert methods(env) == ["initialize", "session/new", "session/prompt", "authenticate", "session/prompt"]
    assert [r["params"] for r in recorded(env["LOGIN_AGENT_RECORD"]) if r["method"] == "session/prompt"] == [
        "Hello",
        "Hello",
    ]
    assert view.text == ["Hello."]


async def test_chat_login_with_an_agent_offering_no_login_says_so_and_starts(workspace: str, tmp_path: Any) -> None:
    view = RecordingView()
    assert await started(workspace, "asks", view, agent_env(tmp_path), login=True) == ""
    assert view.notices == ["python offers no login methods (authMethods); the chat starts without one."]


async def test_closing_the_chat_during_the_login_question_withdraws_it(workspace: str, tmp_path: Any) -> None:
    asked = asyncio.Event()

    class Waiting(RecordingView):
        async def pick(self, title: str, items: list[str]) -> int | None:
            asked.set()
            await asyncio.Event().wait()  # the user never answers
            return None

    spec = custom_agent([sys.executable, AGENT, "agent"])
    session = ChatSession(spec, [workspace], AsyncEditor(), Waiting(), env=agent_env(tmp_path))
    starting = asyncio.ensure_future(session.start())
    await asyncio.wait_for(asked.wait(), CEILING)
    await session.close()
    with pytest.raises(ChatFailed, match="needs a login"):
        await asyncio.wait_for(starting, CEILING)


def chat_cli(workspace: str, tmp_path: Any, behaviour: str, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", workspace, *args]
    argv += ["--", sys.executable, AGENT, behaviour]
    env = {**agent_env(tmp_path), "PYTHONPATH": ROOT}
    return subprocess.run(argv, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=CEILING)


def test_chat_login_offers_the_methods_before_the_session_starts(workspace: str, tmp_path: Any) -> None:
    result = chat_cli(workspace, tmp_path, "agent", "1\n", "--login", "--prompt", "Hello")
    assert result.returncode == 0, result.stderr
    menu = "Log in to python: choose how\n  1) Log in with the browser — OAuth — the agent logs you in\n"
    assert menu in result.stdout
    assert "Hello." in result.stdout
    # The login came first: session/new succeeded at its first try.
    assert methods(agent_env(tmp_path)) == ["initialize", "authenticate", "session/new", "session/prompt"]


def test_the_terminal_chat_offers_a_login_when_the_agent_needs_one(workspace: str, tmp_path: Any) -> None:
    result = chat_cli(workspace, tmp_path, "agent", "1\nHello\n")
    assert result.returncode == 0, result.stderr
    assert "python needs a login (Authentication required): choose how\n  1) Log in" in result.stdout
    assert "Hello." in result.stdout


def test_chat_login_runs_a_terminal_login_in_the_foreground_with_the_consoles_input(
    workspace: str, tmp_path: Any
) -> None:
    result = chat_cli(workspace, tmp_path, "terminal", f"1\n{CODE}\n", "--login", "--prompt", "Hello")
    assert result.returncode == 0, result.stderr
    running = f"[login] Log in to python: running {sys.executable} {AGENT} terminal --login; answer it here."
    assert running in result.stdout
    assert "Enter the login code: Logged in." in result.stdout
    assert "Hello." in result.stdout
    assert env_free(result.stdout + result.stderr, agent_env(tmp_path)["LOGIN_AGENT_MARKER"])


def env_free(output: str, value: str) -> bool:
    """The login's environment is never printed."""
    return value not in output
