"""Load correctness on Claude Code's side (no timing): many Claude Code clients at once, each with
its own reviews, while the selection moves and a Gemini CLI session works in the same window.

20 WebSocket clients × 25 openDiffs each, every review decided by the scripted user as it is shown
(accepted with an edit naming the review, or rejected by turns); meanwhile the active file's
selection moves through 60 files. Every call must get exactly its own outcome and text, every
client must end on the final selection and never see an older one after a newer one, and
afterwards the window holds no review and no connection.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest

from companion.core.context import Position
from companion.core.reviews import Review
from companion.runtime import Runtime
from tests.claude_client import ClaudeClient
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor

CLIENTS, CALLS, MOVES = 20, 25, 60


class DecidingEditor(ScriptedEditor):
    """Accepts even-numbered reviews with an edit naming them, rejects the others, at once."""

    async def show_review(self, review: Review) -> None:
        await super().show_review(review)
        number = int(os.path.basename(review.file_path).split("-")[-1].split(".")[0])
        if number % 2 == 0:
            review.accept(review.proposal + f"edited {review.file_path}\n")
        else:
            review.reject()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_many_claude_clients_get_exactly_their_outcomes_and_the_final_selection(tmp_path: Any) -> None:
    workspace = str(tmp_path / "ws")
    os.makedirs(workspace)
    editor = DecidingEditor()
    runtime = Runtime(discovery_directory=str(tmp_path / "discovery"), lock_directory=str(tmp_path / "claude"))
    try:
        window = runtime.open_window(editor, [workspace], claude=True)
        window.ready.result(30)
        clients = await asyncio.gather(
            *(ClaudeClient.connect(window.port, window.claude_token) for _ in range(CLIENTS))
        )
        while len(window.claude_clients) < CLIENTS:
            await asyncio.sleep(0.02)
        wrong: list[str] = []

        async def work(index: int, client: ClaudeClient) -> None:
            for call in range(CALLS):
                path = os.path.join(workspace, f"c{index}-{call}.txt")
                arguments = {"new_file_path": path, "new_file_contents": f"{index}/{call}\n", "tab_name": path}
                answer = await client.call("openDiff", arguments, timeout=60)
                expected = (
                    ["FILE_SAVED", f"{index}/{call}\nedited {path}\n"] if call % 2 == 0 else ["DIFF_REJECTED", path]
                )
                if answer != expected:
                    wrong.append(f"{path}: {answer!r}")

        def move_selection() -> None:  # the user's thread, as Sublime's would be
            for move in range(1, MOVES + 1):
                path = os.path.join(workspace, f"selected-{move}.py")
                window.context.activate(path, Position(move, 2), "x", anchor=Position(move, 1))
                threading.Event().wait(0.03)

        async with connect(window.url, window.token) as gemini:  # a Gemini CLI session beside them
            mover = asyncio.get_running_loop().run_in_executor(None, move_selection)
            await asyncio.gather(*(work(i, c) for i, c in enumerate(clients)), mover)
            await asyncio.sleep(0.5)  # the last selection's debounce
            assert gemini.of("ide/diffAccepted") == [] and gemini.of("ide/diffRejected") == []
        assert wrong == []
        final = os.path.join(workspace, f"selected-{MOVES}.py")
        for client in clients:
            lines = [n["params"]["selection"]["start"]["line"] for n in client.notifications]
            assert lines == sorted(lines), "a client saw an older selection after a newer one"
            assert client.notifications[-1]["params"]["filePath"] == final
        assert len(window.server.reviews) == 0 and window.claude is not None
        assert window.claude.tabs == {}
        await asyncio.gather(*(c.close() for c in clients))
        while window.claude_clients:
            await asyncio.sleep(0.02)
        assert window.claude.connections == set()
    finally:
        runtime.stop()
