"""Marshalling from the server loop to Sublime's main thread, where every UI change happens."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import sublime

T = TypeVar("T")


async def on_main(work: Callable[[], T]) -> T:
    """Run `work` on Sublime's main thread and await its result from the server loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def set_result(result: T) -> None:
        if not future.done():
            future.set_result(result)

    def set_exception(error: BaseException) -> None:
        if not future.done():
            future.set_exception(error)

    def run() -> None:
        if loop.is_closed():
            return
        try:
            result = work()
        except BaseException as exc:  # handed to the awaiting coroutine, not lost on the main thread
            loop.call_soon_threadsafe(set_exception, exc)
        else:
            loop.call_soon_threadsafe(set_result, result)

    sublime.set_timeout(run, 0)
    return await future
