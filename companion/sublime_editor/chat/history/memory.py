"""The last chat session per folder and agent, for "Continue Last Chat": a small JSON file in
Sublime's cache folder, read and written on a thread of its own (never Sublime's main thread, nor
the async worker every package shares)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

import sublime

from ... import settings

FILE_NAME = "chat sessions.json"
_lock = threading.Lock()  # one writer at a time: a read-modify-write of the whole file


def _path() -> str:
    return os.path.join(settings.cache_folder(), FILE_NAME)


def _key(folder: str, agent: str) -> str:
    return f"{os.path.normcase(os.path.abspath(folder))}\n{agent}"


def _read(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}
    )


def remember_later(folder: str, agent: str, session_id: str) -> None:
    """Note `session_id` as the last session of `agent` in `folder` (returns at once)."""
    path = _path()

    def write() -> None:
        with _lock:
            data = _read(path)
            data[_key(folder, agent)] = session_id
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                temporary = path + ".tmp"
                with open(temporary, "w", encoding="utf-8") as handle:
                    json.dump(data, handle)
                os.replace(temporary, path)
            except OSError:
                pass  # Continue Last Chat then starts a new chat; nothing else depends on it

    threading.Thread(target=write, name="gemini-companion-chat-memory", daemon=True).start()


def recall_later(folder: str, agent: str, then: Callable[[str | None], None]) -> None:
    """The last session id of `agent` in `folder` (None: none), given to `then` on the main thread."""
    path = _path()

    def read() -> None:
        with _lock:
            found = _read(path).get(_key(folder, agent))
        sublime.set_timeout(lambda: then(found))

    threading.Thread(target=read, name="gemini-companion-chat-memory", daemon=True).start()
