"""The adapter on the fake Sublime, seen by other agents: SDK clients over HTTP (with a client name of
their own), and the SDK's stdio client driving `python -m companion bridge` as a subprocess.

Clients run on their own threads and loops; the test thread plays Sublime's main thread and pumps it
while it waits for their answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import mcp_types as types
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.sublime_editor.conftest import (  # noqa: F401  (fixtures re-exported for this folder)
    Companion,
    ThreadedClient,
    clients,
    companion,
    editor,
    workspace,
    write,
)
from tests.sublime_fake import control, sublime

T = TypeVar("T")
TOOLS = {"list_files", "read_file", "write_file", "ask_gemini", "get_diagnostics"}


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def tool_names(client: ThreadedClient) -> set[str]:
    result = client.result(client.call(lambda c: c.session.list_tools()))
    return {tool.name for tool in result.tools} - {"openDiff", "closeDiff"}


def call_tool(client: ThreadedClient, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return client.result(client.call(lambda c: c.session.call_tool(name, arguments)))


def start_tool(client: ThreadedClient, name: str, arguments: dict[str, Any]) -> concurrent.futures.Future[Any]:
    """A tool call that blocks on the user (write_file): its future, while the test plays the user."""
    return client.call(lambda c: c.session.call_tool(name, arguments))


def proposal_view(window: sublime.Window, timeout: float = 30) -> sublime.View:
    def find() -> sublime.View | None:
        views = [v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"]
        return views[0] if views else None

    return control.pump_until(find, timeout, "the review's proposal view")


def banner(view: sublime.View) -> str:
    (phantom,) = control.phantoms(view, "gemini_companion.banner")
    return phantom["content"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThreadedStdio:
    """The SDK's stdio client running a bridge subprocess, on its own thread and loop."""

    def __init__(self, params: StdioServerParameters, name: str = "claude-desktop-test") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[ClientSession] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(params, name), name="sdk-stdio", daemon=True)
        self._thread.start()
        control.pump_until(self._ready.done, 60, "the bridge to start")
        self.session = self._ready.result(0)

    def _run(self, params: StdioServerParameters, name: str) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main(params, name))
        finally:
            self._loop.close()
            self._done.set()

    async def _main(self, params: StdioServerParameters, name: str) -> None:
        self._stop = asyncio.Event()
        try:
            with open(os.devnull, "w") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write, client_info=types.Implementation(name=name, version="0")) as session,
                ):
                    await session.initialize()
                    self._ready.set_result(session)
                    await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)

    def call(self, make: Callable[[ClientSession], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(make(self.session), self._loop)

    def result(self, future: concurrent.futures.Future[T], timeout: float = 60) -> T:
        control.pump_until(future.done, timeout, "the bridge's answer")
        return future.result(0)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return self.result(self.call(lambda s: s.call_tool(name, arguments)))

    def close(self) -> None:
        if self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        control.pump_until(self._done.is_set, 30, "the bridge to stop")


@pytest.fixture
def stdio_clients() -> Iterator[Callable[[StdioServerParameters], ThreadedStdio]]:
    opened: list[ThreadedStdio] = []

    def make(params: StdioServerParameters) -> ThreadedStdio:
        client = ThreadedStdio(params)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()
