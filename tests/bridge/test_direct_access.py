"""server_port and auth_token: a fixed address and token for clients configured by hand."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import pytest

from tests.bridge.conftest import TOOLS, Companion, ThreadedClient, free_port, text, tool_names
from tests.sublime_fake import control, sublime

PACKAGE_SETTINGS = "Gemini Companion.sublime-settings"
TOKEN = "fixed-token-for-claude-code-0123456789abcdef"


def serving(companion: Companion, window: sublime.Window, timeout: float = 30) -> Any:
    """The window's handle once a server of it listens (after a fall-back, the new one)."""

    def ready() -> Any:
        registry = companion.registry()
        state = registry.get(window) if registry is not None else None
        if state is None or not state.handle.ready.done() or state.handle.ready.exception() is not None:
            return None
        return state.handle

    return control.pump_until(ready, timeout, "the window's server")


def discovery_files(companion: Companion) -> list[dict[str, Any]]:
    """The discovery files now (a restart may delete one while we read: it is then not there)."""
    found = []
    for name in sorted(os.listdir(companion.discovery_dir)) if os.path.isdir(companion.discovery_dir) else []:
        if not name.startswith("gemini-ide-server-"):
            continue  # a file being written (".<name>.<pid>.tmp", renamed into place when complete)
        try:
            with open(os.path.join(companion.discovery_dir, name), encoding="utf-8") as handle:
                found.append(json.load(handle))
        except FileNotFoundError:
            continue
    return found


def discovery_ports(companion: Companion) -> list[int]:
    return sorted(payload["port"] for payload in discovery_files(companion))


def test_the_first_window_gets_the_fixed_port_every_window_the_fixed_token(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    port = free_port()
    control.user_settings(PACKAGE_SETTINGS, {"server_port": port, "auth_token": TOKEN})
    first = control.new_window([workspace])
    second = control.new_window([str(tmp_path)])
    companion.load()
    one, two = serving(companion, first), serving(companion, second)
    assert one.port == port and two.port not in (0, port)
    assert one.token == TOKEN and two.token == TOKEN
    assert discovery_ports(companion) == sorted([port, two.port])
    assert all(p["authToken"] == TOKEN for p in discovery_files(companion))
    # A client configured by hand with the URL and token reaches the window's tools.
    client = ThreadedClient(f"http://127.0.0.1:{port}/mcp", TOKEN, "hand-configured")
    try:
        assert tool_names(client) == TOOLS
    finally:
        client.close()
    # With both fixed, the Connect view does not warn that the HTTP entry will break.
    assert control.run_from_palette(first, "gemini_companion_connect_agent")
    (view,) = [v for v in first.views() if v.settings().get("gemini_companion.connect")]
    # The fixed token is never in the view's text (hot exit would save it); Copy carries it.
    assert "Authorization: Bearer <token: see Copy below>" in text(view) and TOKEN not in text(view)
    control.click_link(view, "copy")
    assert f"Authorization: Bearer {TOKEN}" in sublime.get_clipboard()
    assert "change every time" not in text(view)
    # When the window holding the port closes, the next window that opens gets it.
    control.close_window(first)
    control.pump_until(lambda: discovery_ports(companion) == [two.port], 30, "the first window's server to stop")
    third = control.new_window([workspace])
    assert serving(companion, third).port == port


def test_a_taken_port_falls_back_to_a_free_one_and_says_so(
    companion: Companion, workspace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other_program:
        other_program.bind(("127.0.0.1", 0))
        other_program.listen()
        taken = other_program.getsockname()[1]
        control.user_settings(PACKAGE_SETTINGS, {"server_port": taken})
        window = control.new_window([workspace])
        companion.load()
        handle = serving(companion, window)
        assert handle.port not in (0, taken)
        assert discovery_ports(companion) == [handle.port]  # Gemini CLI and the bridge still find it
        messages = control.status_messages()
        assert any(f"port {taken} (setting server_port) is not available" in m for m in messages), messages
        assert "a client configured by hand with that port does not" in capsys.readouterr().out
        client = ThreadedClient(handle.url, handle.token)
        try:
            assert tool_names(client) == TOOLS
        finally:
            client.close()


def test_an_unusable_token_setting_is_refused_without_showing_it(companion: Companion, workspace: str) -> None:
    weak = "hunter2"
    control.user_settings(PACKAGE_SETTINGS, {"auth_token": weak, "server_port": "8080"})
    window = control.new_window([workspace])
    companion.load()
    handle = serving(companion, window)
    control.settle()
    assert handle.token != weak and len(handle.token) >= 32
    messages = control.status_messages()
    assert any("auth_token must be at least 32 characters" in m for m in messages), messages
    assert any("server_port must be 0 or a port number" in m for m in messages), messages
    assert not any(weak in m for m in messages)


def test_changing_the_settings_restarts_the_servers_on_the_new_port_and_token(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    first = control.new_window([workspace])
    second = control.new_window([str(tmp_path)])
    companion.load()
    before = {serving(companion, w).port for w in (first, second)}
    port = free_port()
    control.user_settings(PACKAGE_SETTINGS, {"server_port": port, "auth_token": TOKEN})
    control.pump_until(
        lambda: port in discovery_ports(companion) and len(discovery_ports(companion)) == 2, 30, "the restart"
    )
    one, two = serving(companion, first), serving(companion, second)
    assert port in (one.port, two.port) and one.token == two.token == TOKEN
    assert not before & set(discovery_ports(companion))  # the old servers and files are gone
    assert all(p["authToken"] == TOKEN for p in discovery_files(companion))
    # Back to the defaults: free ports and a random token again.
    control.user_settings(PACKAGE_SETTINGS, {"server_port": 0, "auth_token": ""})
    control.pump_until(lambda: port not in discovery_ports(companion) and len(discovery_ports(companion)) == 2, 30)
    assert serving(companion, first).token != TOKEN
    assert os.path.isdir(companion.discovery_dir)
