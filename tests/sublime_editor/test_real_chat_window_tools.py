"""Issue #40, "Prove it", with the REAL agents in the fake Sublime: the chat's claude-agent-acp
0.101.0 (a local Messages API stand-in, ChainStandIn) and Gemini CLI 0.61.0 (`--acp`, a local Gemini
API stand-in, GeminiStandIn) find the window's tools in the MCP server the chat passed, the user
clicks the allow option on the permission card of each call, and the error the exec panel shows and
the text typed (never saved) in a buffer reach the agent's model, not the file on disk.
(tests/acp/test_real_window_tools.py does the same on the ChatSession and with `chat`.)"""

from __future__ import annotations

import json
import os
from typing import Any

from companion.core.server.chat_servers import WINDOW_SERVER_NAME
from tests.conformance.claude_harness import ChainStandIn
from tests.conformance.gemini_standin import GeminiStandIn, function_responses
from tests.conformance.harness import GEMINI_SETTINGS, PINNED, make_gemini_home, node, require_node_modules
from tests.sublime_editor.conftest import Companion, write
from tests.sublime_editor.test_chat import CEILING, chat_of, send, setup, start_chat, text, wait_turn
from tests.sublime_editor.test_real_turn_review import allow_once, claude_agent
from tests.sublime_fake import control, sublime

ON_DISK = "print('saved an hour ago')\n"
UNSAVED = "print(fooo)  # typed in Sublime, not saved\n"
PROBLEM = "F821 undefined name 'fooo'"


def ask_about_app_py(companion: Companion, folder: str, agent: dict[str, Any]) -> sublime.View:
    """A window whose exec panel shows a linter's error in app.py and whose app.py buffer holds
    unsaved text; its chat with `agent` is asked about app.py. Returns the chat view."""
    path = write(folder, "app.py", ON_DISK)
    window = setup(companion, folder, [agent])
    view = start_chat(companion, window, agent["name"])
    panel = window.create_output_panel("exec")  # a build (a linter's) failed
    panel.settings().set("result_file_regex", r"^(.+?):(\d+):(\d+): (.*)$")
    panel.settings().set("result_base_dir", folder)
    panel.run_command("append", {"characters": f"app.py:1:7: {PROBLEM}\n[Finished in 0.1s with exit code 1]\n"})
    buffer = control.open_file(window, path)
    control.select(buffer, sublime.Region(0, buffer.size()))
    control.type_text(buffer, UNSAVED)  # typed, never saved
    assert buffer.is_dirty()
    send(view, "What is wrong with app.py?")
    return view


def test_real_claude_in_the_chat_reads_the_build_error_and_the_unsaved_buffer_through_the_window_tools(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    folder = os.path.realpath(workspace)
    diagnostics, read_file = (f"mcp__{WINDOW_SERVER_NAME}__{tool}" for tool in ("get_diagnostics", "read_file"))
    model = ChainStandIn(
        [
            ("ToolSearch", {"query": f"select:{diagnostics},{read_file}", "max_results": 5}),
            (diagnostics, {"path": "app.py"}),
            (read_file, {"path": "app.py"}),
        ]
    )
    with model:
        view = ask_about_app_py(companion, folder, claude_agent(tmp_path, folder, model))
        allow_once(view, diagnostics, "Yes")
        allow_once(view, read_file, "Yes")
        wait_turn(view)
        token = chat_of(view).session.servers.token  # the chat's own, for the window's tools

    after_diagnostics, after_read = model.requests_after(1)[0], model.requests_after(2)[0]
    assert PROBLEM in json.dumps(after_diagnostics), "the build error"
    assert UNSAVED.strip() in json.dumps(after_read)
    told = json.dumps(model.requests)
    assert ON_DISK.strip() not in told
    assert control.pump_until(lambda: "Done." in text(view), CEILING, "the answer")
    assert token and token not in told and token not in text(view)


def test_real_gemini_in_the_chat_reads_the_build_error_and_the_unsaved_buffer_through_the_window_tools(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    """Gemini CLI's own read_file reads the disk (it ignores the client's fs/*): through the window's
    tools its model gets the buffer the user is editing."""
    require_node_modules()
    folder = os.path.realpath(workspace)
    diagnostics, read_file = (f"mcp_{WINDOW_SERVER_NAME}_{tool}" for tool in ("get_diagnostics", "read_file"))
    api = GeminiStandIn([(diagnostics, {"path": "app.py"}), (read_file, {"path": "app.py"})])
    home = make_gemini_home(os.path.join(str(tmp_path), "gemini-home"), {**GEMINI_SETTINGS, "ide": {"enabled": False}})
    env = {"HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_API_KEY": "fake", "GOOGLE_GEMINI_BASE_URL": api.url}
    agent = {"name": "Gemini CLI", "command": node(), "args": [PINNED.gemini_js, "--acp"], "env": env}
    with api:
        view = ask_about_app_py(companion, folder, agent)
        allow_once(view, "get_diagnostics", "Allow")  # Gemini's title: "get_diagnostics (sublime MCP Server)"
        allow_once(view, "read_file", "Allow")
        wait_turn(view)
        token = chat_of(view).session.servers.token

    answers = {r["name"]: r["response"] for request in api.model_requests() for r in function_responses(request)}
    assert PROBLEM in answers[diagnostics]["output"], answers
    assert UNSAVED in answers[read_file]["output"], answers
    told = json.dumps(api.requests)
    assert ON_DISK.strip() not in told
    assert control.pump_until(lambda: "Done." in text(view), CEILING, "the answer")
    assert token and token not in told and token not in text(view)
