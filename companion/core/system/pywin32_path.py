"""Make pywin32 importable on Windows whether or not the host processed its `.pth` file.

Why: mcp 2.3.0 cannot be imported on Windows without pywin32. `mcp/__init__.py` imports
`mcp.client.stdio` and `mcp.server.stdio`, which import `mcp.os.win32.utilities`, which runs
`import pywintypes, win32api, win32con, win32job` at module level when `sys.platform == "win32"`
(no try/except). Every `from mcp... import` runs `mcp/__init__.py` first.

The pywin32 wheel does not put those modules at its top level: they sit in `win32/` (the `.pyd`
extensions) and `win32/lib/` (`pywintypes.py`, `win32con.py`), and only its `pywin32.pth` adds those
folders to `sys.path` and imports `pywin32_bootstrap` (which adds `pywin32_system32/`, holding
`pywintypesXY.dll`, to the DLL search path). Package Control unpacks the wheel into
`Data/Lib/python314` as it is and never reads `.pth` files (wbond/package_control 4.x,
`package_control/library.py`); whether Sublime's plugin host treats that folder as a site
directory (sublimehq/sublime_text#6255, marked fixed without a build number) is not documented.
So we do, once, what `site.addpackage` would do with that one file: append its folders that exist
and are not on `sys.path` yet, then import `pywin32_bootstrap`. Appending (never inserting) and
reading only pywin32's own `.pth` leaves every other package's libraries as they were. When the host
did process the file, every folder is already there and the import is cached: nothing changes.
"""

from __future__ import annotations

import importlib
import os
import sys

PTH_FILE = "pywin32.pth"
BOOTSTRAP = "pywin32_bootstrap"


def make_importable(platform: str = sys.platform) -> list[str]:
    """On Windows, do what `pywin32.pth` does for every `sys.path` folder holding one; elsewhere
    nothing. Returns the folders it added (empty when there was nothing to do). Never raises: a
    broken pywin32 shows up, with its reason, when the library check imports it (see `doctor`)."""
    if platform != "win32":
        return []
    added: list[str] = []
    for folder in list(sys.path):
        pth = os.path.join(folder or os.curdir, PTH_FILE)
        if os.path.isfile(pth):
            added += _apply(folder, pth)
    return added


def _apply(folder: str, pth: str) -> list[str]:
    try:
        with open(pth, encoding="utf-8") as handle:
            lines = [line.strip() for line in handle]
    except (OSError, UnicodeDecodeError):
        return []
    on_path = {os.path.normcase(os.path.abspath(p)) for p in sys.path if p}
    added: list[str] = []
    imports: list[str] = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        if line.startswith(("import ", "import\t")):
            imports.append(line.split(None, 1)[1].strip())
            continue
        # The file says `win32\lib`; split on both separators so the same code reads it anywhere.
        path = os.path.join(folder, *line.replace("\\", "/").split("/"))
        key = os.path.normcase(os.path.abspath(path))
        if key not in on_path and os.path.isdir(path):
            sys.path.append(path)
            on_path.add(key)
            added.append(path)
    # Only the bootstrap the file names, and only that module: nothing else from the file is executed.
    if BOOTSTRAP in imports:
        try:
            importlib.import_module(BOOTSTRAP)
        except Exception:  # reported by the library check, with the fix
            pass
    return added
