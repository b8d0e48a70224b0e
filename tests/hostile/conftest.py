"""Fixtures for the hostile tests: a real runtime, a window server, a raw HTTP client that keeps its connection."""

from __future__ import annotations

import http.client
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from companion.core.reviews import Review
from companion.mcp_tools.factory import tool_factory
from companion.mcp_tools.settings import WorkspaceToolSettings
from companion.runtime import Runtime, WindowHandle
from tests.scripted_editor import ScriptedEditor

ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"
RESET = 0  # the status of a Reply when the connection was reset instead of answered
TRACEBACK_MARKERS = (b"Traceback (most recent call last)", b'File "', b"Exception in ASGI")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def initialize_body(request_id: int = 1) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "0"},
            },
        }
    ).encode()


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def json(self) -> object:
        return json.loads(self.body)


class RawHttp:
    """http.client on one keep-alive connection; headers are sent exactly as given (duplicates too)."""

    def __init__(self, port: int, timeout: float = 30) -> None:
        self.port = port
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(
        self, method: str, path: str, headers: list[tuple[str, str]], body: bytes | None = None, _retry: bool = True
    ) -> Reply:
        conn = self._connection()
        if body is not None and not any(name.lower() in ("content-length", "transfer-encoding") for name, _ in headers):
            headers = [*headers, ("Content-Length", str(len(body)))]
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            conn.endheaders(body)
            response = conn.getresponse()
            data = response.read()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # The server closed the idle keep-alive connection (or after an error reply): reconnect once.
            self.close()
            if _retry:
                return self.request(method, path, headers, body, _retry=False)
            # Refused at the HTTP level: uvicorn answers 400 and closes, and the unread body makes the
            # kernel reset the connection, which can destroy that answer in flight.
            return Reply(RESET, [], b"")
        reply = Reply(response.status, list(response.getheaders()), data)
        if response.will_close:
            self.close()
        return reply


@dataclass
class Target:
    """A running window server and what a legitimate client would know about it."""

    handle: WindowHandle
    editor: ScriptedEditor
    workspace: str
    discovery_dir: str

    @property
    def port(self) -> int:
        return self.handle.port

    @property
    def token(self) -> str:
        return self.handle.token

    def base_headers(self, session_id: str | None = None) -> list[tuple[str, str]]:
        headers = [
            ("Host", f"127.0.0.1:{self.port}"),
            ("Authorization", f"Bearer {self.token}"),
            ("Accept", ACCEPT),
            ("Content-Type", "application/json"),
        ]
        if session_id is not None:
            headers += [("Mcp-Session-Id", session_id), ("Mcp-Protocol-Version", PROTOCOL)]
        return headers

    def new_session(self, http: RawHttp) -> str:
        reply = http.request("POST", "/mcp", self.base_headers(), initialize_body())
        assert reply.status == 200, reply
        session_id = reply.header("mcp-session-id")
        assert session_id
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        assert http.request("POST", "/mcp", self.base_headers(session_id), note).status == 202
        return session_id

    def assert_serving(self) -> None:
        """A fresh client can still initialize and list the tools."""
        http = RawHttp(self.port)
        try:
            session_id = self.new_session(http)
            body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
            reply = http.request("POST", "/mcp", self.base_headers(session_id), body)
            assert reply.status == 200, reply
            names = {tool["name"] for tool in json.loads(reply.body)["result"]["tools"]}
            assert {"openDiff", "closeDiff"} <= names
        finally:
            http.close()


def snapshot(path: str) -> dict[str, tuple[int, int, int]]:
    """Every entry under `path` with its size, mtime and mode: equal snapshots mean nothing was written."""
    found: dict[str, tuple[int, int, int]] = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(root, name)
            st = os.lstat(full)
            found[os.path.relpath(full, path)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return found


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = str(tmp_path_factory.mktemp("hostile"))
    workspace = os.path.join(root, "workspace")
    os.makedirs(os.path.join(workspace, "src"))
    with open(os.path.join(workspace, "src", "main.py"), "w") as f:
        f.write("print('hello')\n")
    discovery_dir = os.path.join(root, "discovery")
    editor = ScriptedEditor()
    runtime = Runtime(discovery_directory=discovery_dir)
    handle = runtime.open_window(editor, [workspace])
    handle.ready.result(30)
    try:
        yield Target(handle, editor, workspace, discovery_dir)
    finally:
        runtime.stop()


SECRET = "SECRET-OUTSIDE-THE-WORKSPACE"


class RejectingEditor(ScriptedEditor):
    """A user who rejects every review at once: with this editor nothing may ever be written."""

    async def show_review(self, review: Review) -> None:
        await super().show_review(review)
        review.reject()


@pytest.fixture(scope="module")
def tools_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A window server with the workspace tools on `<root>/workspace`, beside `<root>/outside` that
    holds SECRET (and, on POSIX, reached from the workspace by a symlink `out_link`). `ask_gemini`
    is on, with a Gemini CLI program that does not exist: hostile prompts reach its argument
    handling but start nothing."""
    root = str(tmp_path_factory.mktemp("hostile-tools"))
    workspace = os.path.join(root, "workspace")
    outside = os.path.join(root, "outside")
    os.makedirs(os.path.join(workspace, "src"))
    os.makedirs(outside)
    with open(os.path.join(workspace, "src", "main.py"), "w") as f:
        f.write("print('hello')\n")
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write(SECRET + "\n")
    if os.name != "nt":
        os.symlink(outside, os.path.join(workspace, "out_link"))
    settings = WorkspaceToolSettings(gemini_command=(os.path.join(root, "no-such-gemini"),), write_timeout_seconds=30)
    runtime = Runtime(discovery_directory=os.path.join(root, "discovery"))
    editor = RejectingEditor()
    handle = runtime.open_window(editor, [workspace], tool_factory=tool_factory(settings))
    handle.ready.result(30)
    try:
        yield Target(handle, editor, workspace, os.path.join(root, "discovery"))
    finally:
        runtime.stop()


def raw_exchange(port: int, data: list[bytes], shutdown_write: bool = True, timeout: float = 10) -> bytes:
    """Send `data` pieces on a fresh socket, optionally half-close, and read what comes back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        for piece in data:
            sock.sendall(piece)
        if shutdown_write:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (ConnectionResetError, TimeoutError):
            pass
        return b"".join(chunks)


class RawStreamClient:
    """A connected client the cheap way: initialize, initialized, then hold the GET stream open and read it."""

    def __init__(self, handle: WindowHandle) -> None:
        http = RawHttp(handle.port)
        headers = [
            ("Host", f"127.0.0.1:{handle.port}"),
            ("Authorization", f"Bearer {handle.token}"),
            ("Accept", ACCEPT),
            ("Content-Type", "application/json"),
        ]
        reply = http.request("POST", "/mcp", headers, initialize_body())
        session = reply.header("mcp-session-id")
        assert reply.status == 200 and session
        headers += [("Mcp-Session-Id", session), ("Mcp-Protocol-Version", PROTOCOL)]
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        assert http.request("POST", "/mcp", headers, note).status == 202
        http.close()
        self.sock = socket.create_connection(("127.0.0.1", handle.port), timeout=30)
        head = "".join(f"{k}: {v}\r\n" for k, v in headers if k != "Content-Type")
        self.sock.sendall(f"GET /mcp HTTP/1.1\r\n{head}\r\n".encode())
        seen = b""
        while b"ide/contextUpdate" not in seen:  # the stream is open and the first context arrived
            chunk = self.sock.recv(65536)
            assert chunk, seen
            seen += chunk
        assert seen.startswith(b"HTTP/1.1 200")

    def stream_ended(self, timeout: float = 30) -> bool:
        """Read the stream to its end: True when the server closed it within `timeout` seconds."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except (TimeoutError, OSError):
            return False
        return True

    def close(self) -> None:
        self.sock.close()
