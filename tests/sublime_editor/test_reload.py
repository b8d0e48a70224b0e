"""Reloading the package (an upgrade, or a save of plugin.py) any number of times, with clients
connected, leaves nothing behind."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import types
from typing import Any

import psutil
import websockets

from tests.hostile.conftest import RawStreamClient
from tests.sublime_editor.conftest import Companion, loop_threads, write
from tests.sublime_fake import control, sublime

RELOADS = 200


def listening_ports() -> set[int]:
    return {
        c.laddr.port
        for c in psutil.Process().net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.laddr.ip == "127.0.0.1"
    }


def open_fds() -> int:
    process = psutil.Process()
    return process.num_fds() if hasattr(process, "num_fds") else process.num_handles()


def settings_callbacks() -> int:
    settings = sublime.load_settings("Gemini Companion.sublime-settings")
    return len(control.host().settings[settings.settings_id].callbacks)


def claude_client(handle: Any) -> Any:
    """A Claude Code connection (sync WebSocket client) that has done the handshake."""
    from websockets.sync.client import connect

    connection = connect(
        f"ws://127.0.0.1:{handle.port}/",
        subprotocols=[websockets.Subprotocol("mcp")],
        additional_headers={"X-Claude-Code-Ide-Authorization": handle.claude_token},
        open_timeout=30,
    )
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "claude-code", "version": "0"},
    }
    connection.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}))
    assert json.loads(connection.recv(timeout=30))["id"] == 0
    connection.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    return connection


def closed_by_server(connection: Any) -> bool:
    try:
        while True:
            connection.recv(timeout=10)  # notifications may still arrive before the close
    except websockets.ConnectionClosed:
        return True
    except TimeoutError:
        return False


def lock_files(tmp_path: Any) -> list[str]:
    folder = os.path.join(str(tmp_path), "claude", "ide")
    return os.listdir(folder) if os.path.isdir(folder) else []


def test_two_hundred_reloads_with_a_client_connected_leak_no_thread_socket_file_listener_or_handler(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    window = control.new_window([workspace])
    view = control.open_file(window, write(workspace, "a.txt", "a\n"))
    ports_before = listening_ports()
    threads_before = threading.active_count()
    companion.load()
    companion.ready(window)
    control.settle()
    baseline = {
        "listeners": control.listener_count(),
        "commands": len(control.command_classes()),
        "settings callbacks": settings_callbacks(),
        "log handlers": len(logging.getLogger("gemini_companion").handlers),
    }
    assert baseline["listeners"] > 0 and baseline["commands"] > 0 and baseline["settings callbacks"] == 1
    fds_before = open_fds()
    seen_ports = set()
    handle = companion.ready(window)
    for _ in range(RELOADS):
        client = RawStreamClient(handle)  # a Gemini CLI holding its notification stream open
        claude = claude_client(handle)  # and a Claude Code holding its WebSocket
        companion.load()  # Sublime's reload: plugin_unloaded, re-import, plugin_loaded
        assert client.stream_ended()  # the old server let go of it instead of hanging on to it
        assert closed_by_server(claude)
        client.close()
        claude.close()
        handle = companion.ready(window)
        seen_ports.add(handle.port)
        assert len(companion.discovery_files()) == 1
        assert lock_files(tmp_path) == [f"{handle.port}.lock"]
    control.settle()
    now = {
        "listeners": control.listener_count(),
        "commands": len(control.command_classes()),
        "settings callbacks": settings_callbacks(),
        "log handlers": len(logging.getLogger("gemini_companion").handlers),
    }
    assert now == baseline
    assert len(loop_threads()) == 1
    assert threading.active_count() == threads_before + 1
    assert listening_ports() - ports_before == {handle.port}
    assert open_fds() <= fds_before + 2  # the new server's listening socket (+1 slack)
    assert len(seen_ports) > 1  # each reload really started a new server
    assert view.get_status("gemini_companion").startswith("Gemini")

    companion.unload()
    control.settle()
    control.pump_until(lambda: loop_threads() == [], 30, "the loop thread to end on its own")
    assert threading.active_count() == threads_before
    assert listening_ports() - ports_before == set()
    assert companion.discovery_files() == {}
    assert control.listener_count() == 0 and control.command_classes() == []
    assert settings_callbacks() == 0
    assert not [h for h in logging.getLogger("gemini_companion").handlers if getattr(h, "_gemini_companion", False)]
    assert os.listdir(companion.discovery_dir) == []
    assert lock_files(tmp_path) == []


def test_unloading_never_waits_for_a_busy_loop_thread_and_a_reload_takes_over_once_it_is_free(
    companion: Companion, workspace: str, tmp_path: Any, capsys: Any
) -> None:
    window = control.new_window([workspace])
    companion.load()
    old = companion.ready(window)
    busy, release = threading.Event(), threading.Event()

    async def hold_the_loop() -> None:  # a handler that blocks the loop thread (a slow disk, a bug)
        busy.set()
        release.wait(60)

    old.runtime.submit(hold_the_loop)
    try:
        assert busy.wait(30)
        companion.unload()  # a disable, upgrade or reload: plugin_unloaded on the main thread
        assert "did not stop" not in capsys.readouterr().out  # it did not sit waiting for the loop
        assert old.runtime._thread.is_alive() and os.path.exists(old.discovery_path)  # the loop still holds them
        companion.plugin = control.load_plugin()  # the package comes back while the old loop is still busy
        control.settle()
        assert len(loop_threads()) == 2
        release.set()
        new = companion.ready(window)
        # The new loop thread waited for the old one: its files were gone before the new server's appeared.
        assert list(companion.discovery_files()) == [os.path.basename(new.discovery_path)]
        assert lock_files(tmp_path) == [f"{new.port}.lock"]
        assert old.port not in listening_ports() and new.port in listening_ports()
        control.pump_until(lambda: len(loop_threads()) == 1, 30, "the old loop thread to end")
    finally:
        release.set()  # a failed assertion must not leave the loop held


def test_a_reload_while_another_thread_imports_still_runs_the_new_code(companion: Companion, workspace: str) -> None:
    """Sublime's plugin host is one process shared with other packages, and our own loop thread
    imports the server stack in the background: modules come and go in `sys.modules` while
    plugin.py drops ours on a reload. Walking that dict in Python while it changes raised
    "dictionary changed size during iteration" (seen in the flake loop, tests/workflow/test_logging.py)
    and left the package unloaded."""
    window = control.new_window([workspace])
    companion.load()
    stop = threading.Event()

    def import_meanwhile() -> None:  # what any other thread's import does to sys.modules
        names = [f"_another_package_module_{n}" for n in range(50)]
        while not stop.is_set():
            for name in names:
                sys.modules[name] = types.ModuleType(name)
            for name in names:
                del sys.modules[name]

    thread = threading.Thread(target=import_meanwhile, daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as a loaded machine can
    thread.start()
    try:
        for _ in range(20):
            companion.load()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    handle = companion.ready(window)  # the last reload ran to its end: the window is served again
    assert len(companion.discovery_files()) == 1 and handle.port
