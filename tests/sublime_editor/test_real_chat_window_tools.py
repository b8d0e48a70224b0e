"""Issue #40, "Prove it", with a REAL agent in the fake Sublime: the chat's claude-agent-acp 0.101.0
(a local Messages API stand-in, ChainStandIn) finds the window's tools in the MCP server the chat
passed, the user clicks "Yes" on the permission card of each call, and the build error the exec
panel shows and the text typed (never saved) in a buffer reach the agent's model, not the file on
disk. (tests/acp/test_real_window_tools.py does the same with Gemini CLI and with `chat`.)"""

from __future__ import annotations

import json
import os
from typing import Any

from companion.core.server.chat_servers import WINDOW_SERVER_NAME
from tests.conformance.claude_harness import ChainStandIn
from tests.sublime_editor.conftest import Companion, write
from tests.sublime_editor.test_chat import CEILING, chat_of, send, setup, start_chat, text, wait_turn
from tests.sublime_editor.test_real_turn_review import allow_once, claude_agent
from tests.sublime_fake import control, sublime

ON_DISK = "print('saved an hour ago')\n"
UNSAVED = "print(fooo)  # typed in Sublime, not saved\n"
PROBLEM = "F821 undefined name 'fooo'"


def test_real_claude_in_the_chat_reads_the_build_error_and_the_unsaved_buffer_through_the_window_tools(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    folder = os.path.realpath(workspace)
    path = write(folder, "app.py", ON_DISK)
    diagnostics, read_file = (f"mcp__{WINDOW_SERVER_NAME}__{tool}" for tool in ("get_diagnostics", "read_file"))
    model = ChainStandIn(
        [
            ("ToolSearch", {"query": f"select:{diagnostics},{read_file}", "max_results": 5}),
            (diagnostics, {"path": "app.py"}),
            (read_file, {"path": "app.py"}),
        ]
    )
    with model:
        window = setup(companion, folder, [claude_agent(tmp_path, folder, model)])
        view = start_chat(companion, window, "Claude")
        panel = window.create_output_panel("exec")  # a build (a linter's) failed
        panel.settings().set("result_file_regex", r"^(.+?):(\d+):(\d+): (.*)$")
        panel.settings().set("result_base_dir", folder)
        panel.run_command("append", {"characters": f"app.py:1:7: {PROBLEM}\n[Finished in 0.1s with exit code 1]\n"})
        buffer = control.open_file(window, path)
        control.select(buffer, sublime.Region(0, buffer.size()))
        control.type_text(buffer, UNSAVED)  # typed, never saved
        assert buffer.is_dirty()
        send(view, "What is wrong with app.py?")
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
