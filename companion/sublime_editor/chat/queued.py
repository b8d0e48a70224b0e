"""The prompts a chat keeps while its agent answers (issue #41), shown as one card in the
transcript: "queued: …", with how to edit (Up in the empty prompt) or cancel (Escape) them. The
chat (sessions.py) sends the oldest when the turn ends; acp/prompt/prompt_queue.py says why an agent
that does not advertise prompt queueing must never get one during a turn. Main thread."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ...acp.prompt.images import Image
from ...acp.prompt.prompt_queue import PromptQueue
from ...acp.prompt.resources import Resource
from .view import ChatPanel

CARD = "queued"
# What goes with a queued prompt: the files given with it, and the mentions Send to Agent and Send
# Image File put in the prompt (mention -> its file, its image), as they were when it was sent.
Extra = tuple[Sequence[Resource], dict[str, Resource], dict[str, Image]]


class QueuedPrompts:
    def __init__(self, panel: ChatPanel) -> None:
        self.panel = panel
        self.queue: PromptQueue[Extra] = PromptQueue()

    def __len__(self) -> int:
        return len(self.queue)

    def add(self, text: str, extra: Extra) -> None:
        self.queue.add(text, extra)
        self._show()

    def next(self) -> tuple[str, Extra] | None:
        found = self.queue.next()
        self._show()
        return found

    def take_last(self) -> tuple[str, Extra] | None:
        found = self.queue.take_last()
        self._show()
        return found

    def take_all(self) -> list[tuple[str, Extra]]:
        found = self.queue.take_all()
        self._show()
        return found

    def _show(self) -> None:
        if not self.queue:
            self.panel.remove_card(CARD)
            return
        lines = "<br>".join(f"queued: {html.escape(line)}" for line in self.queue.lines())
        how = "sent when the turn ends · Up in the empty prompt edits the last · Escape cancels it"
        self.panel.card(CARD, f'{lines}<br><span class="dim">{how}</span>')
