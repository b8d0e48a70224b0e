"""A chat's agent sees what the window sees (issue #40): `session/new` carries the window's own MCP
server, with a token of the chat's own, and the agent (tests/acp/tools_agent.py, an MCP client on
the pinned `mcp` library) gets the build error the exec panel shows and the unsaved text of a buffer.
When the chat ends, the same URL and token answer 401; the token is in no transcript or log line."""

from __future__ import annotations

import json
import logging
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.acp.tools_agent import __file__ as TOOLS_AGENT
from tests.sublime_editor.conftest import Companion, write
from tests.sublime_editor.test_chat import CEILING, chat_of, chat_views, send, text, wait_turn
from tests.sublime_fake import control, sublime


def tools_agent(record: str, mcp: dict[str, Any]) -> dict[str, Any]:
    env = {"TOOLS_AGENT_RECORD": record, "TOOLS_AGENT_MCP": json.dumps(mcp)}
    return {"name": "Tools", "command": sys.executable, "args": [TOOLS_AGENT], "env": env}


def records(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def answer_status(url: str, token: str) -> int:
    """The HTTP status of an MCP ping sent to `url` with `token` (no MCP session: 400 once past the guard)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=CEILING) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def open_chat(
    companion: Companion, workspace: str, agent: dict[str, Any], settings: dict[str, Any] | None = None
) -> tuple[sublime.Window, Any, sublime.View]:
    """A window on `workspace` whose chat with `agent` (named Tools) has started, or failed to."""
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [agent], **(settings or {})})
    window = control.new_window([workspace])
    companion.load()
    handle = companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Tools"})
    (view,) = chat_views(window)
    control.pump_until(lambda: "is ready" in text(view) or "⚠" in text(view), CEILING, "the chat to start")
    return window, handle, view


def end_chat(view: sublime.View) -> None:
    """Close the chat's tab and wait until its agent is stopped (not left to the unload)."""
    chat = chat_of(view)
    control.close_tab(view)
    control.pump_until(lambda: chat._closing is not None and chat._closing.done(), CEILING, "the chat to end")


def test_the_chats_agent_reads_the_build_error_and_the_unsaved_buffer_and_its_token_dies_with_the_chat(
    companion: Companion, workspace: str, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = write(workspace, "app.py", "x = \n")
    record = os.path.join(str(tmp_path), "record.jsonl")
    window, handle, view = open_chat(companion, workspace, tools_agent(record, {"http": True}))
    assert "is ready" in text(view), text(view)
    panel = window.create_output_panel("exec")  # a build failed
    panel.settings().set("result_file_regex", r'^\s*File "(...*?)", line ([0-9]*)')
    panel.settings().set("result_base_dir", workspace)
    panel.run_command("append", {"characters": f'Traceback:\n  File "{path}", line 1\nSyntaxError: invalid syntax\n'})
    buffer = control.open_file(window, path)
    control.type_text(buffer, "unsaved = 1\n")  # typed, never saved
    assert buffer.is_dirty()
    chat_view = next(v for v in chat_views(window))
    send(chat_view, "tools app.py")
    wait_turn(chat_view)

    new, used = records(record)
    (entry,) = new["mcpServers"]
    assert entry["type"] == "http" and entry["url"] == handle.url
    token = entry["headers"][0]["value"].removeprefix("Bearer ")
    assert token != handle.token  # the window's own token is never handed to an agent
    (server,) = used["results"]
    assert "openDiff" not in server["tools"] and {"get_diagnostics", "read_file"} <= set(server["tools"]), server
    read = server["calls"]["read_file"]
    assert not read["error"] and read["text"].endswith(
        "unsaved text, which differs from the file on disk]\nunsaved = 1\nx = \n"
    )
    diagnostics = json.loads(server["calls"]["get_diagnostics"]["text"])
    assert Path(path).as_uri() in json.dumps(diagnostics) or path in json.dumps(diagnostics), diagnostics
    assert "build" in json.dumps(diagnostics)

    transcript = text(chat_view)
    chat = chat_of(chat_view)
    control.close_tab(chat_view)  # the chat ends
    control.pump_until(lambda: chat._closing is not None and chat._closing.done(), CEILING, "the chat to end")
    assert len(handle.chat_tokens) == 0
    assert answer_status(handle.url, token) == 401
    assert answer_status(handle.url, handle.token) != 401  # the window itself still serves
    assert token not in transcript
    assert not [r for r in caplog.records if token in r.getMessage()]


def test_an_agent_without_http_gets_only_stdio_entries_and_the_bridge_works(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    write(workspace, "notes.txt", "on disk\n")
    record = os.path.join(str(tmp_path), "record.jsonl")
    user = {"mcpServers": {"remote": {"type": "http", "url": "https://example.invalid/mcp"}}}
    settings = {"chat_mcp_servers": user, "bridge_python": sys.executable}
    _window, handle, view = open_chat(companion, workspace, tools_agent(record, {}), settings)
    assert "is ready" in text(view), text(view)
    assert "Not sent to this agent, which does not take their transport: remote (http)." in text(view)
    send(view, "tools notes.txt")
    wait_turn(view)
    new, used = records(record)
    (entry,) = new["mcpServers"]
    assert "type" not in entry and entry["command"] == sys.executable
    assert entry["args"] == ["-m", "companion", "bridge", "--port", str(handle.port)]
    assert handle.token not in json.dumps(new)  # the bridge gets the chat's token, never the window's
    (server,) = used["results"]
    assert server["calls"]["read_file"] == {"error": False, "text": "on disk\n"}, server
    end_chat(view)


def test_a_bad_chat_mcp_servers_setting_starts_nothing_and_names_the_entry(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = os.path.join(str(tmp_path), "record.jsonl")
    bad = {"mcpServers": {"lint": {"args": ["--fast"]}}}
    _window, _handle, view = open_chat(
        companion, workspace, tools_agent(record, {"http": True}), {"chat_mcp_servers": bad}
    )
    assert "MCP server 'lint' needs \"command\"" in text(view), text(view)
    assert records(record) == []  # the agent never started


def test_chat_editor_tools_false_sends_no_window_server(companion: Companion, workspace: str, tmp_path: Any) -> None:
    record = os.path.join(str(tmp_path), "record.jsonl")
    _window, handle, view = open_chat(
        companion, workspace, tools_agent(record, {"http": True}), {"chat_editor_tools": False}
    )
    assert "is ready" in text(view), text(view)
    assert records(record)[0]["mcpServers"] == []
    assert len(handle.chat_tokens) == 0
    end_chat(view)


def test_the_chats_agent_never_gets_an_excluded_file_nor_anything_while_sharing_is_paused(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    write(workspace, ".env", "API_KEY=secret\n")
    write(workspace, "notes.txt", "notes\n")
    record = os.path.join(str(tmp_path), "record.jsonl")
    window, _handle, view = open_chat(companion, workspace, tools_agent(record, {"http": True}))
    assert "is ready" in text(view), text(view)
    send(view, "tools .env")
    wait_turn(view)
    (server,) = records(record)[-1]["results"]
    assert server["calls"]["read_file"]["error"], server
    assert "context_exclude" in server["calls"]["read_file"]["text"]
    listed = server["calls"]["list_files"]["text"]
    assert "notes.txt" in listed and ".env" not in listed, listed
    assert "API_KEY" not in text(view)

    window.run_command("gemini_companion_toggle_sharing")  # pause
    send(view, "tools notes.txt")
    wait_turn(view)
    (server,) = records(record)[-1]["results"]
    for name in ("read_file", "list_files", "get_diagnostics"):
        assert server["calls"][name]["error"] and "paused" in server["calls"][name]["text"], server
    end_chat(view)
