"""Local processes without the token holding hundreds of idle or half-sent connections: the
companion, with few file descriptors, keeps serving a real client and keeps its log short."""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import time
import urllib.parse
from collections.abc import Iterator

import pytest

from companion.core.server.connections import HEAD_TIMEOUT_SECONDS
from tests.serve_process import ServeProcess, endpoint, serve

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
DESCRIPTORS = 128  # the companion's whole process gets this many (macOS' default is 256)
HOSTILE = 400


def limited_descriptors() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


@pytest.fixture
def server(tmp_path: str) -> Iterator[tuple[ServeProcess, int, str]]:
    workspace = os.path.join(str(tmp_path), "workspace")
    os.makedirs(workspace)
    with serve(tmp_path, workspace, "reject", preexec_fn=limited_descriptors) as serving:
        serving.expect("Discovery file:")
        _path, url, token = endpoint(tmp_path)
        port = urllib.parse.urlsplit(url).port
        assert port is not None
        yield serving, port, token


def initialize(port: int, token: str) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        connection.request(
            "POST",
            "/mcp",
            body,
            {
                "Authorization": f"Bearer {token}",
                "Host": f"127.0.0.1:{port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def hostile_sockets(port: int, count: int) -> list[socket.socket]:
    """Half of them idle, half with an unfinished request head; none has the token."""
    sockets = []
    for index in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if index % 2:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sockets.append(sock)
    return sockets


def test_a_real_client_is_served_while_hostile_connections_hold_the_rest(
    server: tuple[ServeProcess, int, str],
) -> None:
    serving, port, token = server
    held = hostile_sockets(port, HOSTILE)
    try:
        statuses = [initialize(port, token) for _ in range(10)]
        assert statuses == [200] * 10, statuses
        assert serving.process.poll() is None
    finally:
        for sock in held:
            sock.close()
    time.sleep(1)
    log = "".join(serving.output)
    # One warning at most per 30 s about failed accepts, never a traceback per attempt.
    assert len(log) < 20_000 and "Traceback" not in log, log[-3000:]
    assert initialize(port, token) == 200


def test_a_connection_that_sends_no_request_head_is_closed(server: tuple[ServeProcess, int, str]) -> None:
    _serving, port, _token = server
    with socket.create_connection(("127.0.0.1", port), timeout=HEAD_TIMEOUT_SECONDS * 4) as idle:
        idle.sendall(b"GET /mcp HTTP/1.1\r\n")  # a byte-a-second client that never finishes
        started = time.monotonic()
        assert idle.recv(1024) == b""  # closed by the server
        assert time.monotonic() - started < HEAD_TIMEOUT_SECONDS * 3


def test_unauthenticated_requests_do_not_keep_their_connection(server: tuple[ServeProcess, int, str]) -> None:
    _serving, port, _token = server
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", "/mcp", "{}", {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    assert response.status == 401 and response.getheader("connection") == "close"
    connection.close()
