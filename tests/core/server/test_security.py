"""The request guard, probed over real HTTP: each test fails if its protection is removed."""

from __future__ import annotations

import base64
import hmac
import secrets
import socket

import httpx2
import psutil
import pytest

from companion.core.server import security
from companion.core.server.security import MAX_BODY_BYTES, RequestGuard
from companion.runtime import Runtime, WindowHandle
from tests.scripted_editor import ScriptedEditor

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
ACCEPT = "application/json, text/event-stream"


def post(window: WindowHandle, headers: dict[str, str], path: str = "/mcp") -> httpx2.Response:
    url = f"http://127.0.0.1:{window.port}{path}"
    with httpx2.Client(timeout=10) as http:
        return http.post(url, json=INIT, headers={"Accept": ACCEPT, **headers})


def auth(window: WindowHandle) -> dict[str, str]:
    return {"Authorization": f"Bearer {window.token}"}


def test_the_right_token_is_served(window: WindowHandle) -> None:
    response = post(window, auth(window))
    assert response.status_code == 200 and response.headers["mcp-session-id"]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer wrong",
        "bearer {token}",
        "Bearer {prefix}",
        "Bearer {token}x",
        "Basic {token}",
        "{token}",
    ],
)
def test_a_missing_or_wrong_token_is_refused_with_a_challenge(window: WindowHandle, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header.format(token=window.token, prefix=window.token[:-1])}
    response = post(window, headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert window.token not in response.text


def test_a_token_in_the_query_string_is_not_accepted(window: WindowHandle) -> None:
    assert post(window, {}, path=f"/mcp?token={window.token}").status_code in (401, 404)


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "127.0.0.1:{other}",
        "localhost:{other}",
        "127.0.0.1",
        "localhost",
        "localhost.:{port}",
        "127.0.0.1.:{port}",
        "[::1]:{port}",
        "0.0.0.0:{port}",
        "127.0.0.2:{port}",
        "evil.example",
    ],
)
def test_a_host_other_than_loopback_on_our_port_is_refused(window: WindowHandle, host: str) -> None:
    headers = {**auth(window), "Host": host.format(port=window.port, other=window.port + 1)}
    assert post(window, headers).status_code == 403


@pytest.mark.parametrize("host", ["LOCALHOST:{port}", "LocalHost:{port}", "localhost:0{port}"])
def test_host_spelling_tricks_are_refused(window: WindowHandle, host: str) -> None:
    # Clients write the Host exactly as the discovery file implies; any other spelling is an attack.
    assert post(window, {**auth(window), "Host": host.format(port=window.port)}).status_code == 403


@pytest.mark.parametrize(
    "origin", ["null", "http://evil.example", "http://127.0.0.1:{port}", "http://localhost:{port}"]
)
def test_any_origin_is_refused_because_only_browsers_send_one(window: WindowHandle, origin: str) -> None:
    headers = {**auth(window), "Origin": origin.format(port=window.port)}
    assert post(window, headers).status_code == 403


@pytest.mark.parametrize("path", ["/", "/mcp/", "/MCP", "/sse", "/mcp/../mcp2"])
def test_only_the_mcp_path_exists(window: WindowHandle, path: str) -> None:
    assert post(window, auth(window), path=path).status_code == 404


def test_a_body_over_the_cap_is_refused_before_it_is_read(window: WindowHandle) -> None:
    with socket.create_connection(("127.0.0.1", window.port), timeout=10) as sock:
        request = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{window.port}\r\nAuthorization: Bearer {window.token}\r\n"
            f"Content-Type: application/json\r\nAccept: {ACCEPT}\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
        )
        sock.sendall(request.encode())
        reply = sock.recv(4096).decode("latin-1")
    assert reply.startswith("HTTP/1.1 413")


def test_a_chunked_body_over_the_cap_is_refused_too(window: WindowHandle) -> None:
    """No Content-Length to check up front: the body is counted as it arrives and cut at the cap."""
    chunk = b"x" * (1024 * 1024)
    with socket.create_connection(("127.0.0.1", window.port), timeout=20) as sock:
        sock.sendall(
            (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{window.port}\r\nAuthorization: Bearer {window.token}\r\n"
                f"Content-Type: application/json\r\nAccept: {ACCEPT}\r\nTransfer-Encoding: chunked\r\n\r\n"
            ).encode()
        )
        try:
            for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before the whole body is sent
        reply = sock.recv(4096).decode("latin-1")
    assert reply.startswith("HTTP/1.1 413"), reply[:200]


def test_the_cap_leaves_room_for_an_escaped_8_mb_file() -> None:
    assert MAX_BODY_BYTES >= 2 * 8 * 1024 * 1024 + 64 * 1024


def test_the_server_listens_on_loopback_only(window: WindowHandle) -> None:
    listening = [
        conn.laddr.ip
        for conn in psutil.Process().net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == window.port
    ]
    assert listening == ["127.0.0.1"]


# The SDK checks Host and Origin too; these run the guard alone, so removing one of its checks
# fails here even though the SDK's own check would still catch the request end to end.


def guard_status(headers: list[tuple[bytes, bytes]], path: str = "/mcp", port: int = 4000) -> int:
    import asyncio

    sent: list[dict[str, object]] = []

    async def inner(scope: object, receive: object, send: object) -> None:
        sent.append({"type": "http.response.start", "status": 200})

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    guard = RequestGuard(inner, "secret", port, max_body=100)  # type: ignore[arg-type]
    scope = {"type": "http", "path": path, "method": "POST", "headers": headers}
    asyncio.run(guard(scope, receive, send))  # type: ignore[arg-type]
    return int(sent[0]["status"])  # type: ignore[call-overload]


GOOD = [(b"host", b"127.0.0.1:4000"), (b"authorization", b"Bearer secret")]


def test_guard_alone_passes_a_good_request() -> None:
    assert guard_status(GOOD) == 200
    assert guard_status([(b"host", b"localhost:4000"), (b"authorization", b"Bearer secret")]) == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([*GOOD, (b"origin", b"null")], 403),
        ([(b"host", b"evil:4000"), (b"authorization", b"Bearer secret")], 403),
        ([(b"host", b"127.0.0.1:4000"), (b"host", b"evil:4000"), (b"authorization", b"Bearer secret")], 403),
        ([(b"host", b"127.0.0.1:4000")], 401),
        ([(b"host", b"127.0.0.1:4000"), (b"authorization", b"Bearer secre")], 401),
        ([*GOOD, (b"authorization", b"Bearer secret")], 401),
        ([*GOOD, (b"content-length", b"101")], 413),
        ([*GOOD, (b"content-length", b"1"), (b"content-length", b"1")], 400),
        ([*GOOD, (b"content-length", b"ten")], 400),
    ],
)
def test_guard_alone_refuses(headers: list[tuple[bytes, bytes]], status: int) -> None:
    assert guard_status(headers) == status


def test_guard_alone_serves_only_the_mcp_path() -> None:
    assert guard_status(GOOD, path="/other") == 404


def test_each_window_gets_its_own_token_of_at_least_128_random_bits(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[int] = []
    real = secrets.token_urlsafe

    def spy(nbytes: int | None = None) -> str:
        drawn.append(nbytes or 32)
        return real(nbytes)

    monkeypatch.setattr(secrets, "token_urlsafe", spy)
    handles = [runtime.open_window(ScriptedEditor(), []) for _ in range(3)]
    for handle in handles:
        handle.ready.result(30)
    tokens = [h.token for h in handles]
    assert len(set(tokens)) == 3
    assert drawn and min(drawn) >= 16  # from the OS's CSPRNG, 128 bits or more
    for token in tokens:
        assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) >= 16


def test_the_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    assert guard_status(GOOD) == 200
    assert guard_status([(b"host", b"127.0.0.1:4000"), (b"authorization", b"Bearer wrong")]) == 401
    assert compared == [(b"Bearer secret", b"Bearer secret"), (b"Bearer wrong", b"Bearer secret")]
