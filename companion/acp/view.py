"""The ChatView port: what a chat shows and asks (the headless terminal today, a Sublime view later).
Called on the chat's event loop; an implementation with a UI thread marshals there and never blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Choice:
    """One of the agent's permission options, under its own name."""

    option_id: str
    name: str
    kind: str  # allow_once, allow_always, reject_once, reject_always


class ChatView(Protocol):
    def agent_text(self, text: str) -> None:
        """A chunk of the agent's reply."""
        ...

    def thought(self, text: str) -> None:
        """A chunk of the agent's reasoning."""
        ...

    def tool_call(self, tool_call_id: str, title: str, kind: str, status: str) -> None:
        """A tool call started or changed status."""
        ...

    def notice(self, text: str) -> None:
        """Something the user must know that is not the model's text (applied without review, a
        refused request, an agent's informational message)."""
        ...

    async def choose(self, title: str, choices: list[Choice]) -> str | None:
        """Ask about a permission that is not an edit; the chosen option id, None for no answer."""
        ...
