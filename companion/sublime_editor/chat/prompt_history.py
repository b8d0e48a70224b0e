"""A chat's sent prompts, for Up/Down in its prompt."""

from __future__ import annotations

HISTORY_SIZE = 100


class History:
    """Sent prompts, newest last; `back`/`forward` walk them, keeping what was being typed."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.position = 0
        self.draft = ""

    def add(self, text: str) -> None:
        if not self.entries or self.entries[-1] != text:
            self.entries.append(text)
            del self.entries[:-HISTORY_SIZE]
        self.position = len(self.entries)
        self.draft = ""

    def back(self, current: str) -> str | None:
        if self.position == 0:
            return None
        if self.position == len(self.entries):
            self.draft = current
        self.position -= 1
        return self.entries[self.position]

    def forward(self) -> str | None:
        if self.position >= len(self.entries):
            return None
        self.position += 1
        return self.draft if self.position == len(self.entries) else self.entries[self.position]
