"""What an agent asks of the user in the terminal chat, outside a permission: the login method to
use and the agent's own terminal login (acp/asks/auth.py), a form's fields and a URL to open
(acp/asks/elicitation.py). Each is a question on the shared Console (numbered for a choice), answered
on the chat's one reader of stdin; the end of input, or the chat closing, answers None.

The terminal login runs in the foreground: its output goes to the console, and the lines the user
types go to it (through the one reader of stdin, which may already be reading) until it exits.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import threading
import webbrowser
from typing import Any

from ..acp.view import LoginCommand
from .console import Console, off_the_loop
from .editor import visible


class ConsoleQuestions:
    """The ChatView's questions on a Console (a mixin of TerminalView)."""

    console: Console

    def _asked(self) -> None:
        """Something from the agent reached the terminal (TerminalView counts it)."""

    async def _ask(self, context: str, question: str) -> str | None:
        self._asked()
        withdrawn = threading.Event()
        try:
            return await off_the_loop(self.console.ask, context, question, withdrawn)
        except EOFError:
            return None
        except asyncio.CancelledError:  # the chat closes, or the turn was cancelled
            withdrawn.set()
            self.console.withdraw("\nThe agent no longer asks; no answer is needed.\n", withdrawn)
            raise

    async def pick(self, title: str, items: list[str]) -> int | None:
        menu = "\n".join(f"  {n}) {visible(item)}" for n, item in enumerate(items, 1))
        context, question = f"\n{visible(title)}\n{menu}\n", f"Choose 1-{len(items)} (empty: none): "
        while True:
            answer = await self._ask(context, question)
            if answer is None or not answer.strip():
                return None
            if answer.strip().isdigit() and 1 <= int(answer) <= len(items):
                return int(answer) - 1

    async def ask_text(self, title: str, hint: str = "") -> str | None:
        shown = f" [{visible(hint)}]" if hint else ""
        return await self._ask("", f"\n{visible(title)}{shown}: ")

    async def confirm_url(self, text: str, url: str) -> bool | None:
        context = f"\n{visible(text)}\n  {visible(url)}\n"  # in full: the user sees where it goes
        while True:
            answer = await self._ask(context, "Open it in your browser? [y/n]: ")
            if answer is None:
                return None
            if answer.strip().lower() in ("y", "yes", "n", "no"):
                return answer.strip().lower().startswith("y")

    def open_url(self, url: str) -> None:
        # A thread: webbrowser may wait for the browser it starts.
        threading.Thread(target=webbrowser.open, args=(url,), name="companion-browser", daemon=True).start()

    async def run_login(self, command: LoginCommand) -> bool:
        """The login command in the foreground; True when it exits with 0. Its environment is the
        chat's with the method's variables, never printed."""
        self._asked()
        shown = visible(shlex.join(command.argv))
        self.console.say(f"\n[login] {visible(command.title)}: running {shown}; answer it here.\n")
        try:
            child = await asyncio.create_subprocess_exec(
                *command.argv, cwd=command.cwd, env={**os.environ, **command.env}, stdin=asyncio.subprocess.PIPE
            )
        except OSError as exc:
            self.console.say(f"[login] {shown} could not be started: {visible(str(exc))}\n")
            return False
        typed = asyncio.ensure_future(self._typed_into(child))
        try:
            code = await child.wait()
        except asyncio.CancelledError:
            if child.returncode is None:
                child.kill()
            raise
        finally:
            typed.cancel()
        self.console.say(f"[login] finished (exit code {code}).\n")
        return code == 0

    async def _typed_into(self, child: Any) -> None:
        """The lines the user types, to the login command (the chat's reader of stdin has them)."""
        lines = self.console.lines
        if child.stdin is None:
            return
        if lines is None:  # no reader of stdin to take lines from: the command reads none
            child.stdin.close()
            return
        while True:
            try:
                line = await lines.next_line()
            except EOFError:
                child.stdin.close()
                return
            try:
                child.stdin.write((line + "\n").encode())
                await child.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                return
