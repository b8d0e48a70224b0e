"""Paths the user writes in settings, read as their shell would: `~` is their home folder.

Sublime passes setting values as they are. A program written as `~/.local/bin/gemini` works in the
user's terminal because the shell expands `~`; our commands run it without a shell (`ask_gemini`,
the bridge's Python) or quoted (`shlex.join` for Terminus), where `~` stays a literal folder name.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence


def expand_program(command: Sequence[str], expanduser: Callable[[str], str] = os.path.expanduser) -> list[str]:
    """`command` with `~` expanded in its program (the first element). Arguments are left alone:
    they are the program's business (a model name may start with `~`)."""
    if not command:
        return []
    return [expanduser(str(command[0])), *(str(part) for part in command[1:])]


def expand_path(path: str, expanduser: Callable[[str], str] = os.path.expanduser) -> str:
    return expanduser(path) if path else path


def find_program(program: str, path: str | None = None, platform: str = sys.platform) -> str | None:
    """The program found on PATH (`path`, else the environment's), never in the current folder.

    Windows' own lookup, and `shutil.which` on Windows, try the current folder before PATH (unless
    NoDefaultCurrentDirectoryInExePath is set): run inside an untrusted clone, `gemini` or `node`
    would be a `node.exe` planted there. An empty or relative PATH entry means the current folder on
    POSIX too. So only absolute PATH entries are searched, and on Windows with PATHEXT by hand,
    since every Python's `shutil.which` there puts the current folder first. A program given with a
    folder (`./x`, `C:\\x\\gemini.cmd`) is the user's explicit choice and is looked up as given."""
    if os.path.dirname(program):
        return shutil.which(program)
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    folders = [folder for folder in entries if folder and os.path.isabs(folder)]
    if platform != "win32":
        return shutil.which(program, path=os.pathsep.join(folders)) if folders else None
    extensions = [ext for ext in os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").split(";") if ext]
    has_extension = any(program.lower().endswith(ext.lower()) for ext in extensions)
    names = [program] if has_extension else [program + ext for ext in extensions]
    for folder in folders:
        for name in names:
            candidate = os.path.join(folder, name)
            if os.path.exists(candidate) and not os.path.isdir(candidate):  # as shutil.which checks
                return candidate
    return None
