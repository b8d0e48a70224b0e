"""Memory bounds against a hostile agent, measured as this process's RSS (psutil) in the style of a
benchmark: generous bounds, one run, no timing. The chat runs in this process, so its RSS is ours.

- Tool-call content is kept only as far as the view needs it (updates.py's caps): 16 tool calls of
  25 MB each held 547 MB for the whole chat before; now what is left after the turn stays small.
- Backpressure (process.py): 30 concurrent 12 MB `fs/read_text_file` from an agent that stops
  reading its stdin took the client to 1.1 GB; now at most MAX_REQUESTS_IN_FLIGHT answers are held.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest

from companion.acp import tool_call_tracker as tool_calls
from companion.acp import updates
from companion.acp.agents import process
from companion.acp.agents.agents import AgentSpec
from companion.acp.review.files import AgentFiles
from companion.acp.session import ChatSession
from companion.acp.view import ToolCall
from tests.acp.conftest import CEILING, AsyncEditor, RecordingView

pytestmark = pytest.mark.anyio

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile_agent.py")
MB = 1024 * 1024


class SizesView(RecordingView):
    """Records each tool call's kept size, not the call: the view's own copies are not measured."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[str, int] = {}

    def tool_call(self, call: ToolCall) -> None:
        self.kept[call.tool_call_id] = updates.kept_size(call)


def rss() -> int:
    """This process's resident memory once freed memory went back to the system (malloc_trim on
    glibc, which otherwise keeps freed heap pages as its own)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass
    return psutil.Process().memory_info().rss


@contextmanager
def peak_rss() -> Iterator[list[int]]:
    """[peak]: the highest RSS seen by a thread sampling it while the block runs."""
    peak = [psutil.Process().memory_info().rss]
    done = threading.Event()

    def sample() -> None:
        me = psutil.Process()
        while not done.wait(0.005):
            peak[0] = max(peak[0], me.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def hostile(workspace: str, behaviour: str, view: RecordingView, **env: str) -> ChatSession:
    spec = AgentSpec("Hostile", (sys.executable, AGENT, behaviour))
    return ChatSession(spec, [workspace], AsyncEditor(), view, env={**os.environ, **env})


@pytest.mark.parametrize(("kind", "mb"), [("text", 25), ("diff", 25), ("diff", 12)])
async def test_16_big_tool_calls_leave_little_held_after_the_turn(workspace: str, kind: str, mb: int) -> None:
    """25 MB: over the cap per call; 16 × 12 MB: each under it, together over the cap in total."""
    view = SizesView()
    session = hostile(workspace, "tool-content", view, HOSTILE_CALLS="16", HOSTILE_MB=str(mb), HOSTILE_KIND=kind)
    before = rss()
    try:
        await session.start()
        assert await session.prompt("go") == "end_turn"
        held = rss() - before
        assert len(view.kept) == 16
        assert max(view.kept.values()) <= updates.KEPT_PER_CALL
    finally:
        await session.close()
    print(f"\n{kind}: 16 tool calls of {mb} MB, held after the turn: {held / MB:.0f} MB")
    assert held < 150 * MB, f"{held / MB:.0f} MB held after the turn (547 MB before the caps)"


async def test_concurrent_big_reads_from_an_agent_that_does_not_read_are_bounded(workspace: str, tmp_path: str) -> None:
    path = os.path.join(workspace, "big.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(("x" * 99 + "\n") * (12 * MB // 100))
    go = os.path.join(str(tmp_path), "go")
    view = RecordingView()
    session = hostile(workspace, "reads", view, HOSTILE_CALLS="30", HOSTILE_PATH=path, HOSTILE_GO=go)
    read_all = asyncio.Event()
    session.files = CountingFiles(session.files, 30, read_all)
    try:
        await session.start()
        assert session.agent is not None
        before = rss()
        with peak_rss() as peak:
            turn = asyncio.ensure_future(session.prompt("read it all"))
            # Until the client either stopped reading the agent or answered all 30 (no backpressure)
            waits = [asyncio.ensure_future(e.wait()) for e in (session.agent.backpressure, read_all)]
            done, pending = await asyncio.wait(waits, timeout=CEILING, return_when=asyncio.FIRST_COMPLETED)
            for waiting in pending:
                waiting.cancel()
            assert done, "the client neither stopped reading the agent nor answered every read"
            open(go, "w").close()  # the agent reads its stdin again
            assert await asyncio.wait_for(turn, CEILING) == "end_turn"
    finally:
        await session.close()
    grew = peak[0] - before
    print(f"\n30 concurrent reads of 12 MB, RSS peak over the start: {grew / MB:.0f} MB")
    assert view.text == ["30 whole answers"]
    assert grew < 400 * MB, f"the client grew by {grew / MB:.0f} MB (1.1 GB without backpressure)"
    assert process.MAX_REQUESTS_IN_FLIGHT * 12 * MB * 4 < 400 * MB  # the bound leaves room for what is allowed


class CountingFiles(AgentFiles):
    """The session's AgentFiles, setting `read_all` once `count` reads were answered."""

    def __init__(self, files: AgentFiles, count: int, read_all: asyncio.Event) -> None:
        super().__init__(files.policy, files.editor, files.read_limit)
        self.left = count
        self.read_all = read_all

    async def read(self, path: str, line: int | None, limit: int | None) -> str:
        text = await super().read(path, line, limit)
        self.left -= 1
        if self.left == 0:
            self.read_all.set()
        return text


def test_the_cap_in_total_counts_memory_not_characters() -> None:
    """Text outside Latin-1 takes 4 bytes a character: 3 calls of 1 Mi emoji are 12 MiB, over a
    10 MiB cap though only 3 Mi characters; the oldest call's content goes."""
    calls = tool_calls.ToolCalls(limit=10 * MB)
    for n in range(3):
        calls[f"c{n}"] = ToolCall(f"c{n}", "call", "other", "completed", output="\N{GRINNING FACE}" * MB)
    assert not calls["c0"].output, "the oldest call kept its content"
    assert calls["c1"].output and calls["c2"].output
