"""Property-based fuzzing of one running window server's HTTP layer and JSON-RPC bodies.

One real server (uvicorn on 127.0.0.1, port 0) serves every test of this module; each test feeds it
thousands of generated requests over a keep-alive connection (raw sockets for truncated and slow
ones). Every request must get a 4xx or a JSON-RPC error -- or, for the rare generated message
that is actually valid, its normal answer; JSON-RPC notifications and responses get the 202 with
no body that the MCP transport prescribes. Never a 5xx, never traceback text, and afterwards the
server still serves, the fuzzing session still works, no error was logged and nothing was written
to the workspace or the discovery folder. A second server offers the workspace tools beside a folder
outside its workspace, with a user who rejects every review: no call shows what is outside, offers a
review of a path outside, or writes anything. About 12 000 cases in all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import string
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.hostile.conftest import (
    ACCEPT,
    PROTOCOL,
    RESET,
    SECRET,
    TRACEBACK_MARKERS,
    RawHttp,
    Reply,
    Target,
    initialize_body,
    raw_exchange,
    snapshot,
)

FUZZ = settings(
    deadline=None,
    database=None,  # writes nothing into the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

KNOWN_METHODS = [
    "ping",
    "initialize",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "ide/contextUpdate",
    "ide/diffAccepted",
    "openDiff",
    "closeDiff",
]
# Methods this server answers with a result when the request is well formed.
SERVED_METHODS = {"ping", "initialize", "tools/list", "tools/call"}

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=25,
)


# -- the oracle --


class Checker:
    """Judges replies and keeps what a test needs to prove at the end."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.http = RawHttp(target.port)
        self.session_id = target.new_session(self.http)
        self.cases = 0

    def post(self, body: bytes, headers: list[tuple[str, str]] | None = None) -> Reply:
        self.cases += 1
        return self.http.request("POST", "/mcp", headers or self.target.base_headers(self.session_id), body)

    def session_still_works(self) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/list"}).encode()
        reply = self.http.request("POST", "/mcp", self.target.base_headers(self.session_id), body)
        assert reply.status == 200 and "result" in json.loads(reply.body), reply


def judge(reply: Reply) -> str:
    """'refused' (4xx), 'accepted' (202, no body), 'error' (JSON-RPC error) or 'result'."""
    assert 200 <= reply.status < 500, reply
    for marker in TRACEBACK_MARKERS:
        assert marker not in reply.body, reply
    if 400 <= reply.status < 500:
        return "refused"  # a short JSON or text reason (the SDK's transport checks answer in plain text)
    if reply.status == 202:
        assert reply.body == b"", reply
        return "accepted"
    assert reply.status == 200, reply
    data = json.loads(reply.body)
    assert isinstance(data, dict) and data.get("jsonrpc") == "2.0", reply
    if "error" in data:
        error = data["error"]
        assert isinstance(error["code"], int) and isinstance(error["message"], str), reply
        return "error"
    assert "result" in data, reply
    return "result"


def is_request_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def could_be_valid(message: Any) -> bool:
    """Whether `message` is a well-formed request for a method this server serves."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and is_request_id(message.get("id"))
        and message.get("method") in SERVED_METHODS
        and isinstance(message.get("params", {}), (dict, type(None)))
    )


def is_notification_or_response(message: Any) -> bool:
    """Messages the transport accepts with 202 and no body (nothing to answer in JSON-RPC)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "result" in message or "error" in message:
        return True  # shaped like a response: the server is not asked anything
    return isinstance(message.get("method"), str) and not is_request_id(message.get("id"))


@pytest.fixture(scope="module")
def server_errors() -> Iterator[list[logging.LogRecord]]:
    """Records at ERROR or above from any logger while the module runs (unhandled exceptions land here)."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect(level=logging.ERROR)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield records
    finally:
        root.removeHandler(handler)


@contextlib.contextmanager
def checked(target: Target, server_errors: list[logging.LogRecord], watched: list[str]) -> Iterator[Checker]:
    """A Checker on `target`; afterwards the session and the server still work, nothing under
    `watched` changed, and no unexpected error was logged."""
    before = [snapshot(path) for path in watched]
    errors_before = len(server_errors)
    checker = Checker(target)
    yield checker
    try:
        checker.session_still_works()
    finally:
        checker.http.close()
    target.assert_serving()
    assert [snapshot(path) for path in watched] == before, "something was written"
    unexpected = [r for r in server_errors[errors_before:] if not _client_went_away(r)]
    assert not unexpected, [r.getMessage() for r in unexpected]


@pytest.fixture
def checker(target: Target, server_errors: list[logging.LogRecord]) -> Iterator[Checker]:
    with checked(target, server_errors, [target.workspace, target.discovery_dir]) as checker:
        yield checker


@pytest.fixture
def tools_checker(tools_target: Target, server_errors: list[logging.LogRecord]) -> Iterator[Checker]:
    # The workspace's parent holds the workspace, the folder outside it and the discovery folder.
    with checked(tools_target, server_errors, [os.path.dirname(tools_target.workspace)]) as checker:
        yield checker


def _client_went_away(record: logging.LogRecord) -> bool:
    # The SDK logs a ClientDisconnect at ERROR when a client hangs up mid-body; nothing reaches a client.
    return record.exc_info is not None and type(record.exc_info[1]).__name__ == "ClientDisconnect"


def run(max_examples: int, strategy: st.SearchStrategy[Any], case: Callable[[Any], None], *examples: Any) -> int:
    count = 0

    def property_(value: Any) -> None:
        nonlocal count
        count += 1
        case(value)

    test = given(strategy)(property_)
    for value in examples:
        test = example(value)(test)
    settings(FUZZ, max_examples=max_examples)(test)()
    assert count >= max_examples, f"only {count} cases ran"
    return count


# -- bodies --


def _mutations(draw: st.DrawFn) -> bytes:
    valid = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}).encode()
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["cut", "delete", "insert", "replace"]))
        if action == "cut":
            del data[position:]
        elif action == "delete" and position < len(data):
            del data[position]
        elif action == "insert":
            data[position:position] = draw(
                st.sampled_from([b"{", b"}", b"[", b'"', b",", b":", b"\\", b"\x00", b"\xff"])
            )
        elif position < len(data):
            data[position] = draw(st.integers(0, 255))
    return bytes(data)


malformed_bodies = st.one_of(
    st.binary(max_size=2000),
    st.text(max_size=500).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.composite(lambda draw: _mutations(draw))(),
    st.sampled_from([b"", b"null", b"[]", b"{}", b"NaN", b"Infinity", b"-Infinity", b'{"a":NaN}', b"\xef\xbb\xbf{}"]),
    json_values.map(lambda v: json.dumps(v).encode()),
)


def test_malformed_json_bodies_get_a_parse_or_validation_error(checker: Checker) -> None:
    def case(body: bytes) -> None:
        outcome = judge(checker.post(body))
        try:
            message = json.loads(body)
        except ValueError:
            assert outcome in ("refused", "error"), body
            return
        if outcome == "result":
            assert could_be_valid(message), body
        elif outcome == "accepted":
            assert is_notification_or_response(message), body

    run(2500, malformed_bodies, case, b"{", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', b"\xff\xfe")


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "1.0", "2", ""]) | json_values)
    if draw(st.integers(0, 3)):
        message["id"] = draw(st.integers(-(2**70), 2**70) | st.text(max_size=20) | json_values)
    if draw(st.integers(0, 5)):
        message["method"] = draw(st.sampled_from(KNOWN_METHODS) | st.text(max_size=30) | json_values)
    if draw(st.booleans()):
        message["params"] = draw(json_values)
    for key in draw(st.lists(st.sampled_from(["result", "error", "extra", "_meta", "jsonrpc "]), max_size=2)):
        message[key] = draw(json_values)
    return message


def test_json_rpc_envelopes_with_wrong_types_and_unknown_methods(checker: Checker) -> None:
    def case(message: dict[str, Any]) -> None:
        outcome = judge(checker.post(json.dumps(message).encode()))
        if outcome == "result":
            assert could_be_valid(message), message
        elif outcome == "accepted":
            assert is_notification_or_response(message), message
        method = message.get("method")
        if (
            outcome != "refused"
            and isinstance(method, str)
            and method not in SERVED_METHODS
            and not method.startswith("notifications/")
            and is_request_id(message.get("id"))
            and not is_notification_or_response(message)
        ):
            assert outcome == "error", message  # unknown methods never succeed

    run(
        2500,
        envelopes(),
        case,
        {"jsonrpc": "2.0", "id": 1, "method": "nope/nope"},
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}},
        {"jsonrpc": "2.0", "id": [1], "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1, 2]},
    )


path_like = st.one_of(
    st.text(max_size=80),
    st.sampled_from(
        [
            "",
            "/",
            "../../etc/passwd",
            "/etc/passwd",
            "C:\\Windows\\system32",
            "\\\\server\\share\\x",
            "file:///etc/passwd",
            "/tmp/\x00evil",
            "~/.ssh/id_rsa",
            "/a/" + "b/" * 2000,
            "x" * 100_000,
            "\ud800",
            "/tmp/\u202eevil.py",
        ]
    ),
)


def _tools_call(
    draw: st.DrawFn, names: list[str], fields: dict[str, tuple[int, st.SearchStrategy[Any]]]
) -> dict[str, Any]:
    """A tools/call request for one of `names` (or any JSON value as the name). Its arguments are
    usually an object where field `key` appears unless `draw(integers(0, n))` gives 0 (for
    `fields[key] = (n, values)`), plus stray keys; sometimes any JSON value; sometimes absent."""
    name = draw(st.sampled_from(names) | json_values)
    arguments: Any
    if draw(st.integers(0, 4)):
        arguments = {key: draw(values) for key, (odds, values) in fields.items() if draw(st.integers(0, odds))}
        arguments.update(draw(st.dictionaries(st.text(max_size=8), json_values, max_size=2)))
    else:
        arguments = draw(json_values)
    params: dict[str, Any] = {"name": name}
    if draw(st.integers(0, 5)):
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": draw(st.integers(0, 10**6)), "method": "tools/call", "params": params}


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    fields = {
        "filePath": (3, path_like | json_values),
        "newContent": (2, st.text(max_size=200) | json_values),
        "suppressNotification": (1, json_values),
    }
    return _tools_call(draw, ["openDiff", "closeDiff", "OpenDiff", "list_files", "write_file", ""], fields)


def test_tool_calls_with_hostile_arguments_fail_cleanly_and_write_nothing(checker: Checker, target: Target) -> None:
    def case(message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8", "surrogatepass")
        shown_before = len(target.editor.shown)
        reply = checker.post(body)
        if judge(reply) != "result":
            return
        result = json.loads(reply.body)["result"]
        params = message["params"]
        arguments = params.get("arguments") or {}
        if not result.get("isError"):
            # Success only for a well-formed call of a tool this server offers.
            assert params["name"] in ("openDiff", "closeDiff"), message
            assert isinstance(arguments, dict) and isinstance(arguments.get("filePath"), str), message
            if params["name"] == "openDiff":
                assert arguments["filePath"] and isinstance(arguments.get("newContent"), str), message
                # The review echoes the path exactly as received.
                assert target.editor.shown[-1][0].file_path == arguments["filePath"]
                assert len(target.editor.shown) == shown_before + 1
            else:
                assert set(json.loads(result["content"][0]["text"])) == {"content"}

    run(2000, tool_calls(), case)


WORKSPACE_PATHS = [
    "src/main.py",
    "{ws}/src/main.py",
    "file://{ws}/src/main.py",
    "new/folder/file.txt",
    "src",
    "out_link/secret.txt",
    "out_link",
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "{outside}/secret.txt",
    "file://{outside}/secret.txt",
    "{outside}/new.txt",
    "{ws}/../outside/secret.txt",
]
workspace_paths = st.sampled_from(WORKSPACE_PATHS)


@st.composite
def workspace_tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    fields = {
        "path": (3, st.one_of(workspace_paths, workspace_paths, path_like, json_values)),
        "content": (2, st.one_of(st.text(max_size=200), st.text(max_size=200), json_values)),
        "recursive": (1, st.booleans() | json_values),
        "prompt": (1, st.text(max_size=200) | json_values),
    }
    return _tools_call(draw, ["list_files", "read_file", "write_file", "ask_gemini", "Read_File"], fields)


def test_workspace_tool_calls_with_hostile_arguments_never_reach_outside_nor_write_unapproved(
    tools_checker: Checker, tools_target: Target
) -> None:
    """The user rejects every review here, so nothing may be written at all; no call may show
    what lies outside the workspace, nor offer a review of a path outside it."""
    workspace = tools_target.workspace
    outside = os.path.join(os.path.dirname(workspace), "outside")
    inside = os.path.realpath(workspace) + os.sep
    editor = tools_target.editor

    def case(message: dict[str, Any]) -> None:
        arguments = message["params"].get("arguments")
        if isinstance(arguments, dict) and isinstance(arguments.get("path"), str):
            arguments["path"] = arguments["path"].replace("{ws}", workspace).replace("{outside}", outside)
        shown_before = len(editor.shown)
        reply = tools_checker.post(json.dumps(message).encode("utf-8", "surrogatepass"))
        if judge(reply) == "result":
            assert SECRET.encode() not in reply.body, message
            assert b"secret.txt" not in reply.body or json.loads(reply.body)["result"].get("isError"), message
        for review, _proposal, _revision in editor.shown[shown_before:]:
            assert os.path.realpath(review.file_path).startswith(inside), (message, review.file_path)

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}

    examples = [call("write_file", path=path, content="PWNED\n") for path in WORKSPACE_PATHS]
    examples += [call("read_file", path=path) for path in WORKSPACE_PATHS]
    examples += [call("list_files", recursive=True), call("ask_gemini", prompt="$(touch pwned)")]
    run(1500, workspace_tool_calls(), case, *examples)
    # The well-formed writes inside the workspace were offered for review (and rejected).
    assert any(review.file_path.endswith("new/folder/file.txt") for review, _, _ in editor.shown)


def test_huge_and_deeply_nested_values_are_refused_or_answered(checker: Checker) -> None:
    def case(spec: tuple[str, int]) -> None:
        kind, size = spec
        if kind == "array":
            body = b"[" * size + b"]" * size
        elif kind == "object":
            body = b'{"a":' * size + b"1" + b"}" * size
        elif kind == "params":
            body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"[" * size + b"]" * size + b"}}"
        elif kind == "string":
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "closeDiff", "arguments": {"filePath": "x" * size}},
                }
            ).encode()
        elif kind == "number":
            body = b'{"jsonrpc":"2.0","id":' + b"9" * size + b',"method":"ping"}'
        else:  # many keys
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {str(i): i for i in range(size)}}
            ).encode()
        outcome = judge(checker.post(body))
        assert outcome in ("refused", "error", "result", "accepted")

    kinds = st.sampled_from(["array", "object", "params", "string", "number", "keys"])
    run(
        300,
        st.tuples(kinds, st.integers(1, 200_000)),
        case,
        ("array", 1_000_000),
        ("string", 16 * 1024 * 1024),
        ("number", 5000),
    )


def test_a_body_over_the_cap_is_refused_before_it_is_read(checker: Checker) -> None:
    from companion.core.server.security import MAX_BODY_BYTES

    headers = [*checker.target.base_headers(checker.session_id), ("Content-Length", str(MAX_BODY_BYTES + 1))]
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)
    reply = raw_exchange(checker.target.port, [f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode(), b"{" * 1000])
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_a_chunked_body_over_the_cap_is_cut_off(checker: Checker) -> None:
    from companion.core.server.security import MAX_BODY_BYTES

    headers = [*checker.target.base_headers(checker.session_id), ("Transfer-Encoding", "chunked")]
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)
    chunk = b"x" * (1024 * 1024)
    pieces = [f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode()]
    pieces += [b"%x\r\n" % len(chunk) + chunk + b"\r\n"] * (MAX_BODY_BYTES // len(chunk) + 2)
    pieces.append(b"0\r\n\r\n")
    try:
        reply = raw_exchange(checker.target.port, pieces)
    except (BrokenPipeError, ConnectionResetError):
        reply = b""  # the server stopped reading and closed: also a refusal
    assert reply == b"" or reply.startswith(b"HTTP/1.1 413"), reply[:200]


# -- headers, methods and paths --

HEADER_NAMES = ["Host", "Authorization", "Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Origin"]
token_chars = string.ascii_letters + string.digits + "-_"
header_values = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@st.composite
def header_sets(draw: st.DrawFn) -> dict[str, Any]:
    """For each interesting header: keep it right, drop it, corrupt it or send it twice."""
    choices = {
        name: draw(st.sampled_from(["right", "right", "right", "missing", "wrong", "twice"])) for name in HEADER_NAMES
    }
    choices["Origin"] = draw(st.sampled_from(["missing", "missing", "wrong", "twice"]))
    return {
        "choices": choices,
        "wrong": {name: draw(header_values) for name in HEADER_NAMES},
        "extra": draw(
            st.lists(st.tuples(st.text(alphabet=token_chars, min_size=1, max_size=20), header_values), max_size=3)
        ),
        "method": draw(st.sampled_from(["POST"] * 6 + ["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD", "TRACE"])),
        "path": draw(
            st.sampled_from(
                ["/mcp"] * 8
                + [
                    "/",
                    "/mcp/",
                    "/MCP",
                    "//mcp",
                    "/mcp/../mcp",
                    "/%6dcp",
                    "/mcp?token=x",
                    "/mcp#x",
                    "/sse",
                    "/messages",
                ]
            )
        ),
    }


def test_missing_wrong_and_duplicated_headers_are_refused(checker: Checker, target: Target) -> None:
    right = dict(target.base_headers(checker.session_id))
    right["Origin"] = "http://localhost"

    def case(spec: dict[str, Any]) -> None:
        right["Mcp-Session-Id"] = checker.session_id
        headers: list[tuple[str, str]] = []
        for name, choice in spec["choices"].items():
            value = spec["wrong"][name] if choice == "wrong" else right[name]
            if choice in ("right", "wrong"):
                headers.append((name, value))
            elif choice == "twice":
                headers += [(name, right[name]), (name, spec["wrong"][name])]
        headers += [
            (k, v)
            for k, v in spec["extra"]
            if k.lower() not in ("content-length", "transfer-encoding", "connection", "expect", "upgrade")
        ]
        method, path = spec["method"], spec["path"]
        stream_possible = method == "GET"  # may open a notification stream: read only the status
        body = (
            None
            if method in ("GET", "HEAD", "DELETE")
            else json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        )
        checker.cases += 1
        choices, wrong = spec["choices"], spec["wrong"]

        def off(name: str) -> bool:
            return choices[name] != "right" and not (choices[name] == "wrong" and wrong[name] == right[name])

        if stream_possible:
            reply = Reply(head_only(target.port, method, path, headers), [], b"")
        else:
            reply = checker.http.request(method, path, headers, body)
        if reply.status == RESET:
            # Only a request h11 cannot parse (no single Host) is cut off at the HTTP level.
            assert choices["Host"] in ("missing", "twice"), spec
            return
        status = reply.status
        assert 200 <= status < 500, spec
        if urllib.parse.unquote(path.split("?")[0]) != "/mcp":  # /%6dcp is /mcp, percent-decoded
            assert status in (400, 404), spec
        elif choices["Origin"] != "missing" or off("Host"):
            assert status in (400, 403), spec
        elif off("Authorization"):
            assert status in (400, 401), spec
        if method == "DELETE" and status == 200:
            # The headers still named our session (the first of two wins): it is gone, start anew.
            assert reply.body == b""
            checker.session_id = target.new_session(checker.http)
        elif method not in ("HEAD", "GET"):
            judge(reply)

    run(2000, header_sets(), case)


def head_only(port: int, method: str, path: str, headers: list[tuple[str, str]]) -> int:
    """Send a GET on its own connection and return the status without waiting for a stream's body."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        if response.status == 200 and "text/event-stream" in (response.getheader("content-type") or ""):
            return 200  # a legitimate notification stream: hang up
        data = response.read()
        for marker in TRACEBACK_MARKERS:
            assert marker not in data
        return response.status
    finally:
        conn.close()


def test_unknown_and_stale_session_ids_are_refused(checker: Checker, target: Target) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()

    def case(session_id: str) -> None:
        headers = [h for h in target.base_headers(checker.session_id) if h[0] != "Mcp-Session-Id"]
        headers.append(("Mcp-Session-Id", session_id))
        reply = checker.post(body, headers)
        assert judge(reply) == "refused", (session_id, reply)

    ids = st.one_of(
        st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=80),
        st.uuids().map(lambda u: u.hex),
        st.just(checker.session_id).map(lambda s: s.upper()),
        st.just(checker.session_id).map(lambda s: s + "0"),
        st.just(checker.session_id).map(lambda s: s[:-1]),
    ).filter(lambda s: s != checker.session_id)
    run(500, ids, case, uuid.uuid4().hex)


# -- truncated and slow bodies (raw sockets) --


def request_bytes(target: Target, session_id: str, body: bytes, content_length: int | None = None) -> bytes:
    headers = target.base_headers(session_id)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)
    length = len(body) if content_length is None else content_length
    return f"POST /mcp HTTP/1.1\r\n{head}Content-Length: {length}\r\n\r\n".encode() + body


def test_truncated_requests_then_close_never_break_the_server(checker: Checker, target: Target) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).encode()

    def case(spec: tuple[int, int, bool]) -> None:
        extra, cut_from_end, half_close = spec
        data = request_bytes(target, checker.session_id, body, len(body) + extra)
        data = data[: max(1, len(data) - cut_from_end)]
        checker.cases += 1
        try:
            reply = raw_exchange(target.port, [data], shutdown_write=half_close, timeout=0.3 if not half_close else 10)
        except (BrokenPipeError, ConnectionResetError):
            return
        if reply:
            status = int(reply.split(b" ", 2)[1])
            assert status < 500, reply[:300]
            for marker in TRACEBACK_MARKERS:
                assert marker not in reply

    run(300, st.tuples(st.integers(0, 100_000), st.integers(0, 400), st.booleans()), case)


def test_malformed_chunked_framing_is_refused(checker: Checker, target: Target) -> None:
    headers = [*target.base_headers(checker.session_id), ("Transfer-Encoding", "chunked")]
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)

    def case(framing: bytes) -> None:
        checker.cases += 1
        try:
            reply = raw_exchange(target.port, [f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode() + framing])
        except (BrokenPipeError, ConnectionResetError):
            return
        if reply:
            assert int(reply.split(b" ", 2)[1]) < 500, reply[:300]
            for marker in TRACEBACK_MARKERS:
                assert marker not in reply

    framing = st.one_of(
        st.binary(max_size=200),
        st.lists(
            st.tuples(st.sampled_from([b"%x", b"%X", b"-%x", b"%x;ext", b"zz", b"%x "]), st.binary(max_size=40)),
            max_size=4,
        ).map(
            lambda parts: (
                b"".join(fmt.replace(b"%x", b"%x" % len(data)) + b"\r\n" + data + b"\r\n" for fmt, data in parts)
                + b"0\r\n\r\n"
            )
        ),
    )
    run(300, framing, case)


def test_slow_bodies_are_still_answered_correctly(checker: Checker, target: Target) -> None:
    import socket

    def case(spec: tuple[int, list[int]]) -> None:
        request_id, delays = spec
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}).encode()
        data = request_bytes(target, checker.session_id, body)
        rng = random.Random(request_id)
        cuts = sorted(rng.sample(range(1, len(data)), len(delays)))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        checker.cases += 1
        with socket.create_connection(("127.0.0.1", target.port), timeout=30) as sock:
            for piece, delay in zip(pieces, [0, *delays], strict=True):
                time.sleep(delay / 1000)
                sock.sendall(piece)
            reply = b""
            while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < _length(reply):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
        answer = json.loads(reply.split(b"\r\n\r\n", 1)[1])
        assert answer["id"] == request_id and answer["result"]["tools"]

    run(100, st.tuples(st.integers(1, 10**6), st.lists(st.integers(0, 15), min_size=1, max_size=6)), case)


def _length(reply: bytes) -> int:
    for line in reply.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_initialize_on_a_fresh_connection_after_all_that_still_works(target: Target) -> None:
    http = RawHttp(target.port)
    try:
        reply = http.request(
            "POST",
            "/mcp",
            [
                ("Host", f"127.0.0.1:{target.port}"),
                ("Authorization", f"Bearer {target.token}"),
                ("Accept", ACCEPT),
                ("Content-Type", "application/json"),
            ],
            initialize_body(9),
        )
        assert reply.status == 200
        assert json.loads(reply.body)["result"]["protocolVersion"] == PROTOCOL
    finally:
        http.close()
