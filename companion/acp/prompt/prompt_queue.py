"""Prompts the user sends while a turn runs (issue #41).

An agent that queues prompts itself says so: claude-agent-acp advertises
`agentCapabilities._meta.claudeCode.promptQueueing: true` and answers a second `session/prompt`
after the first, in order. Gemini CLI 0.61.0 advertises nothing, and a second `session/prompt`
during a turn CANCELS the running one (its prompt vanishes from the history: research 40/41 §4).
So a prompt goes to the agent during a turn only when it advertises queueing; otherwise the chat
keeps it (`PromptQueue`) and sends it when the turn ends, and the session itself never lets a
second prompt out while one runs (`TurnGate`), whatever its caller does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
SHOWN_CHARS = 80  # a queued prompt's line shows its start


def queues_prompts(capabilities: dict[str, Any] | None) -> bool:
    """The agent's `agentCapabilities` (as the SDK dumps them) advertise prompt queueing."""
    meta = (capabilities or {}).get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    return isinstance(claude, dict) and claude.get("promptQueueing") is True


class TurnGate:
    """One `session/prompt` at a time unless the agent queues prompts: a second one waits here
    until the running turn has ended (the agent never sees two at once)."""

    def __init__(self) -> None:
        self.queues = False  # the agent's capability, set after `initialize`
        self.running = 0  # turns the agent is answering now
        self._one = asyncio.Lock()

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        if self.queues:
            self.running += 1
            try:
                yield
            finally:
                self.running -= 1
            return
        async with self._one:
            self.running += 1
            try:
                yield
            finally:
                self.running -= 1


@dataclass
class PromptQueue(Generic[T]):
    """The prompts the user sent during a turn, oldest first, each with what goes with it (its
    files); the chat sends the oldest when the turn ends. Up takes the newest back to edit it."""

    items: list[tuple[str, T]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, text: str, extra: T) -> None:
        self.items.append((text, extra))

    def next(self) -> tuple[str, T] | None:
        """The oldest, taken out: the next to send."""
        return self.items.pop(0) if self.items else None

    def take_last(self) -> tuple[str, T] | None:
        """The newest, taken out: to edit it (or to drop it: Cancel Queued Prompt)."""
        return self.items.pop() if self.items else None

    def take_all(self) -> list[tuple[str, T]]:
        items, self.items = self.items, []
        return items

    def lines(self) -> list[str]:
        """One short line per queued prompt, oldest first."""
        return [shown(text) for text, _ in self.items]


def shown(text: str) -> str:
    """A prompt on one short line."""
    line = " ".join(text.split())
    return line if len(line) <= SHOWN_CHARS else line[: SHOWN_CHARS - 1] + "…"
