"""On Windows, the program behind npm's `gemini.cmd`, so a prompt is never read by cmd.exe.

Windows runs a `.bat`/`.cmd` through cmd.exe whatever arguments it is given, and cmd.exe does not
read Python's argument quoting: Python's subprocess docs, "Security Considerations" (gh-114539):
"On Windows, batch files (*.bat or *.cmd) may be launched by the operating system in a system shell
regardless of the arguments passed to this library. This could result in arguments being parsed
according to shell rules, but without any escaping added by Python." (the BatBadBut family,
CVE-2024-24576). `npm install -g @google/gemini-cli` puts `gemini.cmd` on PATH, and it is what
`shutil.which("gemini")` finds there: it tries the PATHEXT extensions (`.CMD` is one, `.PS1` is not)
and a bare `gemini` only if its extension were in PATHEXT (CPython 3.13 Lib/shutil.py L1552–L1566).

npm writes that file with its `cmd-shim` package, from one template since cmd-shim 4.1.0 (npm 7,
commit c039646, 2021) through 9.0.2: `lib/index.js` L89–L119 in cmd-shim 8.0.0 (npm 11.19.1):
a fixed head that sets `dp0` to the file's folder, then for a script with a `#!` line
    IF EXIST "%dp0%\\<prog>.exe" ( SET "_prog=%dp0%\\<prog>.exe" ) ELSE ( SET "_prog=<prog>" ... )
    endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & [set PATHEXT=...& ]"%_prog%" <args> "%dp0%\\<script>" %*
and for a file without one `"%dp0%\\<target>"  %*`. We read the file (capped), match that template
exactly, and run the same program on the same script ourselves, so no shell ever sees the prompt.
Anything else (another shim writer, a hand-written batch file, `@SET` variables the program needs)
raises NotResolved whatever the prompt: which of cmd.exe's characters are safe is not ours to guess.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable

BATCH_EXTENSIONS = (".bat", ".cmd")  # what CreateProcess hands to cmd.exe
SHIM_LIMIT = 64 * 1024  # cmd-shim's files are under 1 KiB; anything this big is not one

# cmd-shim's head, byte for byte (L89–L96): `dp0` is `%~dp0`, the batch file's folder.
_HEAD = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n"
# A path or program name in which cmd.exe would expand or split nothing.
_NAME = r'[^"%!^&|<>\r\n]+'
_PATHEXT = r"SET PATHEXT=%PATHEXT:;\.JS;=;%"  # `.JS` off PATHEXT, so `node` is not a node.js file
_VIA_PROGRAM = re.compile(
    r"(?P<variables>(?:@SET [^\r\n]*\r\n)*)\r\n"
    rf'IF EXIST "%dp0%\\(?P<program>{_NAME})\.exe" \(\r\n'
    r'  SET "_prog=%dp0%\\(?P=program)\.exe"\r\n'
    r"\) ELSE \(\r\n"
    r'  SET "_prog=(?P=program)"\r\n'
    rf"(?:  {_PATHEXT}\r\n)?"
    r"\)\r\n\r\n"
    rf"endLocal & goto #_undefined_# 2>NUL \|\| title %COMSPEC% & (?i:(?:{_PATHEXT}) & )?"
    rf'"%_prog%" (?P<args>[^"\r\n]*) "%dp0%\\(?P<script>{_NAME})" %\*\r\n\Z'
)
_DIRECT = re.compile(rf'"%dp0%\\(?P<target>{_NAME})" +%\*\r\n\Z')
# The `#!` line's own options (`node --no-warnings`): only ones cmd.exe and the C runtime split alike.
_PLAIN_ARG = re.compile(r"[\w\-=.,:/+@]+\Z")


class NotResolved(Exception):
    """The batch file is not an npm shim we can run without cmd.exe; the message says why."""


def is_batch(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in BATCH_EXTENSIONS


def direct_argv(program: str, platform: str, which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """What runs `program` (a path `which` found) with no shell between us and it: `[program]`,
    or on Windows, for npm's batch shim, `[node, script, *its #! options]`. Raises NotResolved."""
    if platform != "win32" or not is_batch(program):
        return [program]
    text = _read_shim(program)
    folder = os.path.dirname(program)
    if not text.startswith(_HEAD):
        raise NotResolved("it is not a shim written by npm 7 or newer")
    body = text[len(_HEAD) :]
    direct = _DIRECT.match(body)
    if direct is not None:
        return [_runnable(_under(folder, direct.group("target")))]
    via = _VIA_PROGRAM.match(body)
    if via is None:
        raise NotResolved("it is not a shim written by npm 7 or newer")
    if via.group("variables"):
        raise NotResolved("it sets environment variables for its program (`@SET`), which only cmd.exe would apply")
    args = via.group("args").split()
    if not all(_PLAIN_ARG.match(arg) for arg in args):
        raise NotResolved(f"its program's options ({via.group('args').strip()}) are for cmd.exe to read")
    script = _under(folder, via.group("script"))
    if not os.path.isfile(script):
        raise NotResolved(f"the script it runs, {script}, does not exist")
    return [_interpreter(folder, via.group("program"), which), *args, script]


def _read_shim(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(SHIM_LIMIT + 1)
    except OSError as exc:
        raise NotResolved(f"it could not be read ({exc.strerror or exc})") from None
    if len(data) > SHIM_LIMIT:
        raise NotResolved("it is not a shim written by npm 7 or newer")
    try:
        return data.decode("utf-8")  # cmd-shim writes it as UTF-8 (writeFile(..., 'utf8'))
    except UnicodeDecodeError:
        raise NotResolved("it is not a shim written by npm 7 or newer") from None


def _under(folder: str, relative: str) -> str:
    """`%dp0%\\<relative>` as a path: cmd-shim writes Windows separators and may climb with `..`."""
    return os.path.normpath(os.path.join(folder, *relative.split("\\")))


def _interpreter(folder: str, program: str, which: Callable[[str], str | None]) -> str:
    """The shim's own rule: `<prog>.exe` beside it if that exists, else `<prog>` from PATH."""
    beside = _under(folder, program + ".exe")
    if os.path.isfile(beside):
        return beside
    found = which(program)
    if found is None:
        raise NotResolved(f"the program it runs, {program}, is not on PATH")
    return _runnable(found)


def _runnable(path: str) -> str:
    """`path`, unless it is another batch file (cmd.exe again) or missing."""
    if is_batch(path):
        raise NotResolved(f"the program it runs, {path}, is a batch file too")
    if not os.path.isfile(path):
        raise NotResolved(f"the program it runs, {path}, does not exist")
    return path
