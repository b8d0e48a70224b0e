"""Events on the GET stream are encoded exactly as sse-starlette encodes them, without its
regular-expression scan of data that has no line break (companion/gemini_ide/sse_lines.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sse_starlette.event import ServerSentEvent

from companion.gemini_ide import sse_lines
from companion.runtime import Runtime
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor


class AsShipped(ServerSentEvent):
    _LINE_SEP_EXPR = re.compile(r"\r\n|\r|\n")  # sse-starlette 3.7.0's own pattern (sse_starlette/event.py)


@pytest.fixture
def as_shipped() -> Iterator[None]:
    """sse-starlette's own pattern in place, as before any window server started; restored after."""
    saved = ServerSentEvent._LINE_SEP_EXPR
    ServerSentEvent._LINE_SEP_EXPR = AsShipped._LINE_SEP_EXPR
    yield
    ServerSentEvent._LINE_SEP_EXPR = saved


texts = st.lists(st.sampled_from(["a", "é", " ", "\n", "\r", "\r\n", ":", '"', "\\n"]), max_size=20).map("".join)


@settings(deadline=None, database=None, max_examples=500)
@given(texts, st.none() | texts, st.none() | texts, st.none() | texts)
def test_every_event_is_encoded_as_sse_starlette_encodes_it(
    data: str, event: str | None, event_id: str | None, comment: str | None
) -> None:
    sse_lines.install()
    sse_lines.install()  # idempotent
    ours = ServerSentEvent(data, event=event, id=event_id, comment=comment).encode()
    assert ours == AsShipped(data, event=event, id=event_id, comment=comment).encode()


@pytest.mark.anyio
async def test_a_window_server_streams_an_8_mib_outcome_without_the_scan(
    as_shipped: None, runtime: Runtime, editor: ScriptedEditor, workspace: str
) -> None:
    """Every window server installs it; the 8 MiB ide/diffAccepted arrives whole."""
    window = runtime.open_window(editor, [workspace])
    await anyio.to_thread.run_sync(window.ready.result, 30)
    assert isinstance(ServerSentEvent._LINE_SEP_EXPR, sse_lines._LineBreaks)
    content = ("x" * 63 + "\n") * (8 * 1024 * 1024 // 64)
    target = os.path.join(workspace, "big.txt")
    async with connect(window.url, window.token) as client:
        assert (await client.open_diff(target, content)).content == []
        review = await anyio.to_thread.run_sync(editor.wait_shown)
        review.accept(content + "the user's line\n")
        accepted = await client.wait_for("ide/diffAccepted")
    assert accepted == {"filePath": target, "content": content + "the user's line\n"}
