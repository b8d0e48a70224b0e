"""`chat` on a terminal: the lines typed while the agent answers are prompts queued for after the
turn (issue #41). They wait in the one reader of stdin (console.StdinLines) and the chat sends each
at the next `>` once the turn has ended: never during it, since an agent that does not advertise
prompt queueing may cancel its running turn on a second prompt (acp/prompt/prompt_queue.py). `/queue`
lists them, `/unqueue` drops the newest, typed during the turn or at `>`."""

from __future__ import annotations

from ..acp.prompt.prompt_queue import shown
from .console import Console, StdinLines
from .editor import visible

COMMANDS = ("/queue", "/unqueue")
HELP = "sent when the turn ends; /queue lists, /unqueue drops the last"


class QueuedLines:
    def __init__(self, lines: StdinLines, console: Console) -> None:
        self.lines = lines
        self.console = console

    def typed_ahead(self, text: str) -> None:
        """A line typed during a turn (on the stdin reader's thread, the line just queued)."""
        word = text.strip()
        if word in COMMANDS:
            self.lines.drop_last()  # the command itself is no prompt
            self.command(word)
            return
        self.console.say(f"[queued: {visible(shown(text))} — {HELP}]\n")

    def command(self, word: str) -> None:
        """`/queue` or `/unqueue`."""
        if word == "/unqueue":
            dropped = self.lines.drop_last()
            said = f"unqueued: {visible(shown(dropped))}" if dropped is not None else "nothing is queued"
            self.console.say(f"[{said}]\n")
            return
        waiting = self.lines.waiting()
        if not waiting:
            self.console.say("[nothing is queued]\n")
            return
        listed = "\n".join(f"  {n}) {visible(shown(line))}" for n, line in enumerate(waiting, 1))
        self.console.say(f"[queued, {HELP}:]\n{listed}\n")
