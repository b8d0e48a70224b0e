"""What the chat's agent asks of the user in Sublime (issue #40): its login methods in a quick panel
(the agent's own `authenticate`, or its terminal login in Terminus), a form's fields in input and
quick panels, a URL in a dialog that shows it in full, and every config option from "Chat
Options…". The real agent process is tests/acp/login_agent.py; the user is the fake Sublime."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tests.acp.login_agent import CODE, URL, recorded
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, chat_of, chat_views, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import control, sublime

AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "login_agent.py")


def login_agent(tmp_path: Any, behaviour: str, name: str = "Login") -> dict[str, Any]:
    root = str(tmp_path)
    env = {"LOGIN_AGENT_RECORD": os.path.join(root, "record.jsonl"), "LOGIN_AGENT_MARKER": os.path.join(root, "marker")}
    return {"name": name, "command": sys.executable, "args": [AGENT, behaviour], "env": env}


def calls(agent: dict[str, Any], method: str | None = None) -> list[Any]:
    found = recorded(agent["env"]["LOGIN_AGENT_RECORD"])
    return [r["method"] for r in found] if method is None else [r["params"] for r in found if r["method"] == method]


def quick_panel(what: str) -> dict[str, Any]:
    return control.pump_until(lambda: (control.quick_panels() or [None])[-1], CEILING, what)


def input_panel(what: str) -> dict[str, Any]:
    return control.pump_until(lambda: (control.input_panels() or [None])[-1], CEILING, what)


def new_chat(companion: Companion, window: sublime.Window) -> sublime.View:
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Login"})
    (view,) = chat_views(window)
    return view


def wait_started(view: sublime.View) -> None:
    control.pump_until(lambda: "is ready" in text(view) or "⚠" in text(view), CEILING, "the chat to start")
    assert "is ready" in text(view), text(view)


def test_the_agents_login_methods_are_offered_and_the_chosen_one_logs_in(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = login_agent(tmp_path, "agent")
    window = setup(companion, workspace, [agent])
    view = new_chat(companion, window)
    panel = quick_panel("the login methods")
    assert panel["placeholder"] == "Login needs a login (Authentication required): choose how"
    assert panel["items"] == [
        "Log in with the browser — OAuth — the agent logs you in",
        "API key — set EXAMPLE_API_KEY",
    ]
    control.choose_quick_panel(0)
    wait_started(view)
    assert calls(agent) == ["initialize", "session/new", "authenticate", "session/new"]
    assert "Logging in to Login with Log in with the browser…" in text(view)


def test_a_terminal_login_runs_in_terminus_and_the_chat_starts_once_done(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    control.install_terminus()
    agent = login_agent(tmp_path, "terminal")
    agent["env"]["EXAMPLE_API_TOKEN"] = "a-secret-of-the-user"  # Terminus would keep it in the session file
    window = setup(companion, workspace, [agent])
    view = new_chat(companion, window)
    quick_panel("the login methods")
    control.choose_quick_panel(0)
    (args,) = control.pump_until(
        lambda: [a for name, a in control.terminus_calls() if name == "terminus_open"], CEILING, "the terminal"
    )
    assert args["cmd"] == [sys.executable, AGENT, "terminal", "--login"] and args["cwd"] == workspace
    assert args["env"]["LOGIN_MARKER"] == agent["env"]["LOGIN_AGENT_MARKER"]
    assert "EXAMPLE_API_TOKEN" not in args["env"]
    # What Terminus runs, with the user typing the code into it:
    login = subprocess.run(
        args["cmd"], cwd=args["cwd"], env={**os.environ, **args["env"]}, input=CODE + "\n", text=True, timeout=CEILING
    )
    assert login.returncode == 0
    control.pump_until(lambda: "Continue: I have logged in" in str(control.phantoms(view)), CEILING, "the card")
    control.click_link(view, "option-0")
    wait_started(view)
    assert calls(agent) == ["initialize", "session/new", "session/new"]
    assert agent["env"]["LOGIN_AGENT_MARKER"] not in text(view)  # the login's environment is never shown


def test_a_form_is_asked_in_input_and_quick_panels(companion: Companion, workspace: str, tmp_path: Any) -> None:
    agent = login_agent(tmp_path, "asks")
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window, "Login")
    send(view, "form")
    assert quick_panel("the form")["placeholder"] == "Login asks: the form of the test"
    control.choose_quick_panel(0)
    assert input_panel("the name")["caption"] == "Your name (string):"
    control.answer_input_panel("A")  # too short: said, and asked again
    control.pump_until(lambda: "takes at least 2 characters" in text(view), CEILING, "the notice")
    input_panel("the name again")
    control.answer_input_panel("Ada")
    assert quick_panel("subscribe")["items"] == ["Yes", "No"]
    control.choose_quick_panel(0)
    assert quick_panel("color")["items"] == ["red", "green", "blue"]
    control.choose_quick_panel(2)
    assert input_panel("the age")["caption"] == "Age (optional) (integer):"
    control.answer_input_panel("")
    wait_turn(view)
    assert calls(agent, "elicitation/create") == [
        {"action": "accept", "content": {"name": "Ada", "subscribe": True, "color": "blue"}}
    ]
    assert "Elicitation: accept." in text(view)


def test_a_form_declined_sends_no_content(companion: Companion, workspace: str, tmp_path: Any) -> None:
    agent = login_agent(tmp_path, "asks")
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window, "Login")
    send(view, "form")
    quick_panel("the form")
    control.choose_quick_panel(1)
    wait_turn(view)
    assert calls(agent, "elicitation/create") == [{"action": "decline"}]


def test_a_url_is_shown_in_full_and_opened_only_once_confirmed(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent = login_agent(tmp_path, "asks")
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window, "Login")
    control.answer_dialogs(False, True)  # the first declined, the second confirmed
    send(view, "url")
    wait_turn(view)
    assert control.opened_urls() == []
    send(view, "url")
    wait_turn(view)
    assert control.opened_urls() == [URL]
    assert calls(agent, "elicitation/create") == [{"action": "decline"}, {"action": "accept"}]
    asked = [d.message for d in control.dialogs()]
    assert (
        asked == [f"Login asks you to open this address: the url of the test\n\n{URL}\n\nOpen it in your browser?"] * 2
    )


def test_chat_options_sets_a_boolean_and_a_select(companion: Companion, workspace: str, tmp_path: Any) -> None:
    agent = login_agent(tmp_path, "asks")
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window, "Login")
    control.pump_until(lambda: chat_of(view).panel.options, CEILING, "the options")
    assert control.run_from_palette(window, "gemini_companion_chat_options")
    assert quick_panel("the options")["items"] == [["Fast mode", "off · fast"], ["Effort", "Low · effort"]]
    control.choose_quick_panel(0)  # a boolean: toggled
    control.pump_until(lambda: calls(agent, "session/set_config_option"), CEILING, "the option set")
    control.pump_until(lambda: chat_of(view).panel.options[0].current is True, CEILING, "the new value")
    assert control.run_from_palette(window, "gemini_companion_chat_options")
    assert quick_panel("the options")["items"][0] == ["Fast mode", "on · fast"]
    control.choose_quick_panel(1)
    assert quick_panel("the efforts")["items"] == [["● Low", "low"], ["High", "high"]]
    control.choose_quick_panel(1)
    control.pump_until(lambda: len(calls(agent, "session/set_config_option")) == 2, CEILING, "the effort set")
    assert calls(agent, "session/set_config_option") == [
        {"configId": "fast", "value": True},
        {"configId": "effort", "value": "high"},
    ]
    assert control.errors() == [] and control.violations() == []
