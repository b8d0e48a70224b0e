"""What an agent asks of the user in a Sublime chat, outside a permission (main thread): a choice in
a quick panel (a login method, a form's enum or boolean), a line in an input panel (a form's text
and numbers), a URL in a dialog that shows it in full before it is opened, the agent's terminal
login in Terminus. Each `answer` is called once with the user's answer, None when dismissed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

import sublime

from ...acp.view import LoginCommand
from .. import terminus


def pick(window: sublime.Window, title: str, items: list[str], answer: Callable[[Any], None]) -> None:
    if not window.is_valid():
        answer(None)
        return
    window.show_quick_panel(items, lambda index: answer(index if index >= 0 else None), placeholder=title)


def ask_text(window: sublime.Window, title: str, hint: str, answer: Callable[[Any], None]) -> None:
    if not window.is_valid():
        answer(None)
        return
    caption = f"{title} ({hint}):" if hint else f"{title}:"
    window.show_input_panel(caption, "", answer, None, lambda: answer(None))


def confirm_url(text: str, url: str, answer: Callable[[Any], None]) -> None:
    """A dialog: the URL in full on a line of its own, opened only on "Open"."""
    answer(sublime.ok_cancel_dialog(f"{text}\n\n{url}\n\nOpen it in your browser?", "Open"))


def open_url(url: str) -> None:
    sublime.run_command("open_url", {"url": url})


def run_login(window: sublime.Window, command: LoginCommand) -> None:
    """The agent's login command in a Terminus tab (its environment additions go to Terminus, never
    to a log); without Terminus, the command is put on the clipboard to run in a terminal."""
    if not window.is_valid():
        return
    shown = shlex.join(command.argv)
    if terminus.terminus_installed():
        window.run_command("terminus_open", terminus.login_args(command.argv, command.cwd, command.title, command.env))
        return
    sublime.set_clipboard(shown)
    names = ", ".join(sorted(command.env))
    variables = f" with the variables {names} set as in the agent's settings" if names else ""
    sublime.message_dialog(
        f"{command.title}: run this in a terminal{variables} (it is on the clipboard), then continue in the chat:"
        f"\n\n{shown}\n\nWith the Terminus package installed, the chat runs it for you."
    )
