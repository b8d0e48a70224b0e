"""Issue #24 (10) with the real Claude Code: when the window's server stops, the client reconnects
2-10 ms after its connection closes. The server must already refuse it: before the fix it was
accepted and initialized, then cut ~100 ms later (13 of 17 stops)."""

from __future__ import annotations

import os
import threading

import pytest

from tests.conformance.claude_harness import ModelStandIn
from tests.conformance.test_claude_code import Window, window

__all__ = ["window"]  # fixture

pytestmark = [pytest.mark.conformance, pytest.mark.skipif(os.name == "nt", reason="the pty harness is POSIX")]


def test_claude_codes_reconnect_while_the_window_stops_is_refused(window: Window) -> None:
    target = os.path.join(window.workspace, "unused.txt")
    with ModelStandIn("Write", {"file_path": target, "content": "x\n"}) as model:
        claude = window.claude(model)
        try:
            window.wait_connected(claude)
            server = window.handle.server
            side = window.handle.claude
            assert server is not None and side is not None
            stopping = threading.Event()
            initialized_while_stopping: list[str] = []
            report = side.on_clients_changed

            def watch() -> None:  # on the loop thread, each time a client finishes or ends its handshake
                if stopping.is_set():
                    initialized_while_stopping.extend(side.client_names())
                if report is not None:
                    report()

            side.on_clients_changed = watch
            stopping.set()
            window.handle.close().result(30)  # the client's reconnect comes during this
            assert initialized_while_stopping == [], "Claude Code reconnected and was initialized during stop"
        finally:
            claude.stop()
