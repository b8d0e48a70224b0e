"""Fixtures for the core: a real runtime with one window server, and an editor the test drives."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from companion.diffs import Review
from companion.runtime import Runtime, WindowHandle


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class ScriptedEditor:
    """The Editor port with the user played by the test: it records what it is asked to show and
    close; the test decides a review by calling `review.accept(...)` / `review.reject()`."""

    def __init__(self) -> None:
        self.shown: list[tuple[Review, str, int]] = []  # (review, proposal shown, revision)
        self.closed: list[Review] = []
        self.edits: dict[int, str] = {}  # review id -> text the user typed into the proposal
        self.buffers: dict[str, str] = {}  # path -> unsaved buffer text
        self.written: dict[str, str] = {}

    async def show_review(self, review: Review) -> None:
        self.shown.append((review, review.proposal, review.revision))

    async def close_review(self, review: Review) -> str:
        self.closed.append(review)
        return self.edits.get(review.id, review.proposal)

    async def unsaved_text(self, path: str) -> str | None:
        return self.buffers.get(path)

    async def write_through_buffer(self, path: str, text: str) -> bool:
        if path not in self.buffers:
            return False
        self.written[path] = text
        return True


@pytest.fixture
def discovery_dir(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "discovery")
    return path


@pytest.fixture
def workspace(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "workspace")
    os.makedirs(path)
    return path


@pytest.fixture
def editor() -> ScriptedEditor:
    return ScriptedEditor()


@pytest.fixture
def runtime(discovery_dir: str) -> Iterator[Runtime]:
    rt = Runtime(discovery_directory=discovery_dir)
    yield rt
    rt.stop()


@pytest.fixture
def window(runtime: Runtime, editor: ScriptedEditor, workspace: str) -> WindowHandle:
    handle = runtime.open_window(editor, [workspace])
    handle.ready.result(30)
    return handle
