"""The id rules read a message exactly as the SDK does (companion/core/server/request_ids.py).

`head` reads only the top-level `id` and `method` of an HTTP body, skipping the rest; the SDK then
parses the whole body (`pydantic_core.from_json`, then `jsonrpc_message_adapter`). If the two ever
read a different id, a request could pass with an id the SDK cannot answer, or two requests with one
id could both be let through. Generated messages with duplicate members, escaped keys, ids nested in
`params`, odd numbers and whitespace prove they never do, on both transports' readers."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pydantic
import pydantic_core
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from companion.core.server.request_ids import Refused, head, read_message, request_id

NOT_JSON, NOT_A_MESSAGE = "not JSON", "not a message"


def sdk_reading(raw: bytes) -> Any:
    """What the SDK's Streamable HTTP transport makes of a body: the request id it will answer,
    None (a notification or response: nothing to answer), or why it fails."""
    try:
        parsed = pydantic_core.from_json(raw)
    except ValueError:
        return NOT_JSON
    try:
        message = types.jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except pydantic.ValidationError:
        return NOT_A_MESSAGE
    return message.id if isinstance(message, types.JSONRPCRequest) else None


def our_reading(raw: bytes) -> Any:
    try:
        return request_id(head(raw))
    except Refused as refused:
        return refused


KEYS = ["id", "method", "jsonrpc", "params", "result", "\\u0069d", "i\\u0064", "\\u006dethod", "Id", "id "]
scalars = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.sampled_from(["ping", "tools/list", "2.0"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "method", "a"]), inner, max_size=3)
    ),
    max_leaves=6,
)
raw_numbers = st.sampled_from(["1e400", "-0", "1e2", "1.0", "007", "-", "1E3", "0.5e-1", "9" * 30, "NaN", "Infinity"])
spaces = st.sampled_from(["", " ", "\n", "\t", "\r\n  ", "\x0b", "\u00a0"])


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """A top-level object written by hand, so that members can repeat and keys can be escaped."""
    members = []
    for _ in range(draw(st.integers(0, 5))):
        key = draw(st.sampled_from(KEYS))
        value = draw(raw_numbers) if draw(st.integers(0, 4)) == 0 else json.dumps(draw(values))
        members.append(f'{draw(spaces)}"{key}"{draw(spaces)}:{draw(spaces)}{value}{draw(spaces)}')
    text = "{" + ",".join(members) + "}"
    if draw(st.integers(0, 9)) == 0:
        text = "[" + text + "]"
    return (draw(spaces) + text + draw(spaces)).encode()


@settings(deadline=None, database=None, max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
@example(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "id": {"a": 1}}')
@example(b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping", "id": 3}')
@example(b'{"jsonrpc": "2.0", "method": "ping", "params": {"id": 5}}')
@example(b'{"jsonrpc": "2.0", "\\u0069d": 7, "method": "ping"}')
@example(b'{"jsonrpc": "2.0", "id": 100000000000000000000000000000, "method": "ping"}')
def test_the_rules_read_the_id_the_sdk_reads(raw: bytes) -> None:
    sdk, ours = sdk_reading(raw), our_reading(raw)
    if isinstance(ours, Refused):
        # Refused: never something the SDK would serve as a request with a good id, except a batch
        # (which the SDK cannot read either) and, from the parse, only what the SDK cannot parse.
        assert sdk in (None, NOT_JSON, NOT_A_MESSAGE), (raw, sdk, ours.error)
        if ours.error.error.code == types.PARSE_ERROR:
            assert sdk == NOT_JSON, raw
        return
    # Let through: the SDK reads the same request id (or none, or answers its own error).
    assert sdk in (ours, NOT_A_MESSAGE), (raw, sdk, ours)


@settings(deadline=None, database=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_the_websocket_reader_agrees_with_the_http_rules(raw: bytes) -> None:
    """The WebSocket parses once (from_json) and checks the same rules: same verdicts as HTTP."""
    http = our_reading(raw)
    try:
        message = read_message(raw)
    except Refused as refused:
        if isinstance(http, Refused):
            assert refused.error.error.code == http.error.error.code, raw
        else:
            assert sdk_reading(raw) == NOT_A_MESSAGE, raw  # answered: the SDK could not read it either
        return
    assert not isinstance(http, Refused), raw
    assert (message.id if isinstance(message, types.JSONRPCRequest) else None) == http


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # The SDK keeps the last of duplicate members: so do the rules.
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "id": {"a": 1}}', "refused"),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping", "id": 3}', 3),
        # An id inside params is not the message's.
        (b'{"jsonrpc": "2.0", "method": "ping", "params": {"id": 5}}', None),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"id": {"a": 1}}}', 6),
        # Escaped keys are the same member to the SDK.
        (b'{"jsonrpc": "2.0", "\\u0069d": 1.5, "method": "ping"}', "refused"),
    ],
)
def test_duplicate_members_nested_ids_and_escaped_keys(raw: bytes, expected: object) -> None:
    ours = our_reading(raw)
    assert ("refused" if isinstance(ours, Refused) else ours) == expected
    assert expected == "refused" or sdk_reading(raw) == expected


def test_head_skips_a_large_body_without_building_it() -> None:
    """An 8 MiB openDiff: `head` builds no Python object for its content (the SDK parses it once)."""
    import tracemalloc

    content = ("x" * 63 + "\n") * (8 * 1024 * 1024 // 64)
    arguments = {"filePath": "/a", "newContent": content}
    body = json.dumps(
        {"method": "tools/call", "params": {"name": "openDiff", "arguments": arguments}, "jsonrpc": "2.0", "id": 5}
    ).encode()
    tracemalloc.start()
    try:
        assert request_id(head(body)) == 5
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, peak  # a copy of the content would be 8 MiB
