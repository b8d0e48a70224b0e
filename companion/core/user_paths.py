"""Paths the user writes in settings, read as their shell would: `~` is their home folder.

Sublime passes setting values as they are. A program written as `~/.local/bin/gemini` works in the
user's terminal because the shell expands `~`; our commands run it without a shell (`ask_gemini`,
the bridge's Python) or quoted (`shlex.join` for Terminus), where `~` stays a literal folder name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence


def expand_program(command: Sequence[str], expanduser: Callable[[str], str] = os.path.expanduser) -> list[str]:
    """`command` with `~` expanded in its program (the first element). Arguments are left alone:
    they are the program's business (a model name may start with `~`)."""
    if not command:
        return []
    return [expanduser(str(command[0])), *(str(part) for part in command[1:])]


def expand_path(path: str, expanduser: Callable[[str], str] = os.path.expanduser) -> str:
    return expanduser(path) if path else path
