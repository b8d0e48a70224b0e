"""Events on the GET stream are encoded exactly as sse-starlette encodes them, without its
regular-expression scan of data that has no line break and without its StringIO's copies
(companion/gemini_ide/sse_lines.py)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import anyio
import pytest
import sse_starlette.event
from hypothesis import given, settings
from hypothesis import strategies as st
from sse_starlette.event import ServerSentEvent

from companion.gemini_ide import sse_lines
from companion.runtime import Runtime
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor


def _shipped_event_class() -> type[ServerSentEvent]:
    """sse-starlette's class as it ships: its module run afresh from its own file, so whatever a window
    server swapped in the imported class is not in this one."""
    spec = importlib.util.spec_from_file_location("sse_starlette_event_as_shipped", sse_starlette.event.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ServerSentEvent


AsShipped = _shipped_event_class()


@pytest.fixture
def as_shipped() -> Iterator[None]:
    """sse-starlette's own pattern and encode in place, as before any window server started; restored after."""
    saved = ServerSentEvent._LINE_SEP_EXPR, ServerSentEvent.encode
    ServerSentEvent._LINE_SEP_EXPR = AsShipped._LINE_SEP_EXPR
    ServerSentEvent.encode = AsShipped.encode
    yield
    ServerSentEvent._LINE_SEP_EXPR, ServerSentEvent.encode = saved


texts = st.lists(st.sampled_from(["a", "é", " ", "\n", "\r", "\r\n", ":", '"', "\\n"]), max_size=20).map("".join)


@settings(deadline=None, database=None, max_examples=500)
@given(
    st.none() | texts,
    st.none() | texts,
    st.none() | texts,
    st.none() | texts,
    st.none() | st.integers(min_value=0),
    st.none() | st.sampled_from(["\r\n", "\n", "\r"]),
)
def test_every_event_is_encoded_as_sse_starlette_encodes_it(
    data: str | None, event: str | None, event_id: str | None, comment: str | None, retry: int | None, sep: str | None
) -> None:
    sse_lines.install()
    sse_lines.install()  # idempotent
    fields = {"event": event, "id": event_id, "comment": comment, "retry": retry, "sep": sep}
    assert ServerSentEvent(data, **fields).encode() == AsShipped(data, **fields).encode()


def test_a_retry_that_is_not_an_integer_is_refused_as_sse_starlette_refuses_it() -> None:
    sse_lines.install()
    with pytest.raises(TypeError, match="retry argument must be int"):
        ServerSentEvent("x", retry="5").encode()  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_window_server_streams_an_8_mib_outcome_without_the_scan(
    as_shipped: None, runtime: Runtime, editor: ScriptedEditor, workspace: str
) -> None:
    """Every window server installs it; the 8 MiB ide/diffAccepted arrives whole."""
    window = runtime.open_window(editor, [workspace])
    await anyio.to_thread.run_sync(window.ready.result, 30)
    assert isinstance(ServerSentEvent._LINE_SEP_EXPR, sse_lines._LineBreaks)
    assert ServerSentEvent.encode is sse_lines._encode  # pyright: ignore[reportPrivateUsage]
    content = ("x" * 63 + "\n") * (8 * 1024 * 1024 // 64)
    target = os.path.join(workspace, "big.txt")
    async with connect(window.url, window.token) as client:
        assert (await client.open_diff(target, content)).content == []
        review = await anyio.to_thread.run_sync(editor.wait_shown)
        review.accept(content + "the user's line\n")
        accepted = await client.wait_for("ide/diffAccepted")
    assert accepted == {"filePath": target, "content": content + "the user's line\n"}
