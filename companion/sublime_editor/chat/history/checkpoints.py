"""Checkpoints of a Sublime chat (issue #30): one before every prompt, the turn's change set after it.

The settings are read on the main thread (`read_config`); everything else is called on the loop
thread and never blocks it: each checkpoint runs on a worker thread (`asyncio.to_thread`), never on
Sublime's main thread nor on the async worker every package shares. The first checkpoint is taken
when the chat opens, while the agent starts (later ones then only look at what changed). A
checkpoint that fails costs the chat one warning, then it goes on without checkpoints.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import sublime

from ....core.history.change_set import FileChange
from ....core.history.checkpoint_store import GONE_DAYS
from ....core.history.checkpoints import MAX_FILE_BYTES, MAX_FILES, Limits
from ....core.history.turns import Turns
from ... import mcp_tools as workspace_tools
from ... import settings

log = logging.getLogger("gemini_companion")
T = TypeVar("T")


@dataclass(frozen=True)
class CheckpointConfig:
    cache_folder: str
    limits: Limits
    gone_days: int = GONE_DAYS  # checkpoint_days_after_folders_gone


def _positive(key: str, default: int) -> int:
    value = settings.settings().get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def read_config(window: sublime.Window) -> CheckpointConfig | None:
    """The window's checkpoint settings (main thread), or None when `chat_checkpoints` is off.
    Left out, as the workspace listing leaves them out: the window's folder/file exclude patterns,
    `.gitignore` (unless `list_files_use_gitignore` is off), and `context_exclude`."""
    return config(window) if settings.get("chat_checkpoints", True) else None


def config(window: sublime.Window) -> CheckpointConfig:
    """The checkpoint limits and where checkpoints are kept, whether chats take them or not (main thread)."""
    patterns = workspace_tools.exclude_patterns(window) if window.is_valid() else {}
    context_exclude = [str(p) for p in settings.get("context_exclude", []) if isinstance(p, str)]
    limits = Limits(
        max_file_bytes=_positive("checkpoint_max_file_bytes", MAX_FILE_BYTES),
        max_files=_positive("checkpoint_max_files", MAX_FILES),
        file_excludes=[*patterns.get("file_exclude_patterns", []), *context_exclude],
        folder_excludes=list(patterns.get("folder_exclude_patterns", [])),
        use_gitignore=settings.get("list_files_use_gitignore", True),
    )
    gone_days = _positive("checkpoint_days_after_folders_gone", GONE_DAYS)
    return CheckpointConfig(settings.cache_folder(), limits, gone_days)


class ChatCheckpoints:
    """A chat's Turns, driven from the loop thread. `on_busy(True/False)` brackets each checkpoint
    (for the status bar); `warn(text)` is said once, when checkpoints stop working."""

    def __init__(
        self,
        config: CheckpointConfig,
        folders: Sequence[str],
        on_busy: Callable[[bool], None],
        warn: Callable[[str], None],
    ) -> None:
        self.config = config
        self.folders = list(folders)
        self.turns: Turns | None = None
        self.failed = False
        self._on_busy = on_busy
        self._warn = warn
        self._first: asyncio.Task[Any] | None = None
        self.closed = False

    def open(self) -> None:
        """Start the first checkpoint now, on a worker thread (the agent starts meanwhile)."""
        self._first = asyncio.ensure_future(self._run(self._first_checkpoint))

    def _first_checkpoint(self) -> Turns:
        # realpath, and the folders' watch: a worker's job
        turns = Turns(self.config.cache_folder, self.folders, self.config.limits, True, self.config.gone_days)
        # The slow first read of every file; not a prompt's checkpoint (prompt N of the chat is the
        # Nth begin(), which Restore checkpoint counts on): the first prompt's own only looks at what changed.
        turns.checkpointer.take()
        self.turns = turns
        if self.closed:  # the chat ended meanwhile (close() may not have seen self.turns)
            turns.close()
        return turns

    async def begin(self) -> list[str]:
        """The checkpoint before a prompt (after the first one, if it is still being taken); returns
        the notes the prompt must carry to the agent (what the user reverted since its last turn)."""
        if self._first is not None:
            first, self._first = self._first, None
            await first
        if self.turns is None:
            return []
        turns = self.turns
        await self._run(turns.begin)
        return await self._run(turns.take_notes) or []

    async def end(
        self,
        agent: str,
        writes: dict[str, bool],
        digests: Mapping[str, str] | None = None,
        changed: Sequence[str] = (),
    ) -> list[FileChange] | None:
        """The turn's change set (None without checkpoints). `digests`, `changed`: TurnWrites.take_turn's,
        so a file rewritten after the agent wrote it is not credited to the agent, and a reviewed file
        whose bytes are not the accepted ones is listed "changed after your review"."""
        if self.turns is None:
            return None
        return await self._run(self.turns.end, agent, writes, digests, changed)

    def close(self) -> None:
        """The chat ended: stop watching its folders (the first checkpoint, if still being taken,
        stops when it is done)."""
        self.closed = True
        if self.turns is not None:
            self.turns.close()

    async def _run(self, call: Callable[..., T], *args: Any) -> T | None:
        if self.failed:
            return None
        self._on_busy(True)
        try:
            return await asyncio.to_thread(call, *args)
        except Exception as exc:  # any failure: the chat goes on, without checkpoints
            log.warning("chat checkpoint failed: %r", exc)
            self.failed = True
            self.turns = None
            reason = " ".join(str(exc).split()) or type(exc).__name__
            self._warn(
                f"No checkpoints in this chat from now on ({reason}); its turns cannot be reviewed or reverted. "
                "Check the cache folder's space and permissions, or turn the setting chat_checkpoints off."
            )
            return None
        finally:
            self._on_busy(False)
