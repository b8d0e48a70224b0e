"""Which `terminal/create` the user allowed (DESIGN.md: a command the user has not allowed never
runs). An honest agent asks `session/request_permission` for an execute call before it runs the
command through the client; a hostile one skips the ask. So a terminal runs only when:
- the user allowed (once) an execute call earlier in this turn that names this command line (its
  `rawInput.command`, one of its `rawInput.commands`, or its title), and no other terminal used
  that permission yet; or
- the user chose an "always allow" for an execute call in this chat; or
- the user allows it now, asked here through the chat's own permission question.
Otherwise TerminalRefused (nothing runs), also when nobody answers before the turn or chat ends.
No SDK import here: session.py records the answers and asks through its view.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..view import Choice
from .terminals import TerminalRefused

ALLOW = Choice("allow", "Allow", "allow_once")
REJECT = Choice("reject", "Reject", "reject_once")

Ask = Callable[[str, list[Choice]], Awaitable[str | None]]


def command_line(command: str, args: Sequence[str] | None) -> str:
    """The command as the user reads it: the program then its arguments, one space apart."""
    return _normalised(" ".join([command, *(args or [])]))


def _normalised(text: str) -> str:
    return " ".join(text.split()).strip("`").strip()


def _named(call: dict[str, Any]) -> set[str]:
    """The command lines an execute call names (agents put it in rawInput or the title)."""
    raw = call.get("rawInput")
    raw = raw if isinstance(raw, dict) else {}
    named: list[Any] = [raw.get("command"), call.get("title")]
    commands = raw.get("commands")
    named += commands if isinstance(commands, list) else []
    found = set()
    for value in named:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = " ".join(value)  # an argv
        if isinstance(value, str) and value.strip():
            found.add(_normalised(value))
    return found


class TerminalPermits:
    """The user's answers to a chat's execute permissions, spent by its terminals."""

    def __init__(self) -> None:
        self.always = False  # the user chose "always allow" for an execute call in this chat
        self._once: list[set[str]] = []  # this turn's allowed-once calls not spent yet: their command lines

    def turn_started(self) -> None:
        """A permission is for the turn that asked it."""
        self._once.clear()

    def answered(self, call: dict[str, Any], kind: str | None, choices: list[Choice], option_id: str | None) -> None:
        """The user answered a permission request for `call`."""
        chosen = next((c for c in choices if c.option_id == option_id), None)
        if kind != "execute" or chosen is None:
            return
        if chosen.kind == "allow_always":
            self.always = True
        elif chosen.kind == "allow_once":
            self._once.append(_named(call))

    def _take(self, line: str) -> bool:
        if self.always:
            return True
        for index, named in enumerate(self._once):
            if line in named:
                del self._once[index]  # one permission, one terminal
                return True
        return False

    async def check(self, command: str, args: Sequence[str] | None, cwd: str, ask: Ask) -> None:
        """Return when the user allowed this command; TerminalRefused (nothing run) otherwise."""
        line = command_line(command, args)
        if self._take(line):
            return
        answer = await ask(f"The agent wants to run: {line} in {cwd}", [ALLOW, REJECT])
        if answer != ALLOW.option_id:
            said = "rejected running it" if answer is not None else "did not answer before the turn ended"
            raise TerminalRefused(
                f"the user {said}: {line} (ask session/request_permission for an execute tool call "
                "naming the command before terminal/create)"
            )
