"""The discovery file Gemini CLI looks for: `<tmpdir>/gemini/ide/gemini-ide-server-<PID>-<PORT>.json`.

The CLI reads every such file owned by its own user and keeps the ones whose `workspacePath`
contains its working directory, so the file must exist before `gemini` starts, carry `ideInfo`
(Terminus forces `TERM_PROGRAM=Terminus-Sublime`, leaving the file as the only way to recognise
Sublime), hold the bearer token only for our user (0600 from creation, in a 0700 folder), and be
gone when the server is.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence

from ..core.system.private_dirs import UnsafeFolder
from ..core.system.token_files import (
    FolderRefused,
    TokenFileError,
    atomic_write_private,
    ensure_private_dir,
    matching_files,
    remove_stale,
)
from .protocol import IDE_INFO

# Gemini CLI reads only `gemini-ide-server-*` files. With the Gemini CLI integration turned off, the
# window's file takes the second name: the stdio bridge (other agents) still finds it, Gemini CLI never.
GEMINI_PREFIX = "gemini-ide-server"
BRIDGE_ONLY_PREFIX = "sublime-companion-server"
FILE_PATTERN = re.compile(rf"^(?:{GEMINI_PREFIX}|{BRIDGE_ONLY_PREFIX})-(\d+)-(\d+)\.json$")


def node_tmpdir(environ: Mapping[str, str] | None = None, platform: str = sys.platform) -> str:
    """Node's `os.tmpdir()`, which is what Gemini CLI uses (Python's `tempfile` differs)."""
    env = os.environ if environ is None else environ
    if platform == "win32":
        system_root = env.get("SystemRoot") or env.get("windir") or ""
        path = env.get("TEMP") or env.get("TMP") or (system_root + "\\temp")
        if len(path) > 1 and path.endswith("\\") and not path.endswith(":\\"):
            path = path[:-1]
        return path
    path = env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or "/tmp"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def discovery_dir(environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(node_tmpdir(environ), "gemini", "ide")


def file_name(editor_pid: int, port: int, for_gemini: bool = True) -> str:
    return f"{GEMINI_PREFIX if for_gemini else BRIDGE_ONLY_PREFIX}-{editor_pid}-{port}.json"


def workspace_path(folders: Sequence[str]) -> str:
    """The window's folders joined the way the CLI splits them; "" tells it no folder is open."""
    return os.pathsep.join(folders)


def write(
    editor_pid: int,
    port: int,
    folders: Sequence[str],
    token: str,
    directory: str | None = None,
    for_gemini: bool = True,
) -> str:
    """Write (or atomically rewrite) the discovery file and return its path."""
    directory = directory or discovery_dir()
    path = os.path.join(directory, file_name(editor_pid, port, for_gemini))
    payload = {
        "port": port,
        "workspacePath": workspace_path(folders),
        "authToken": token,
        "ideInfo": IDE_INFO,
    }
    try:
        ensure_private_dir(directory)
        atomic_write_private(path, json.dumps(payload, indent=2).encode("utf-8"))
    except UnsafeFolder as exc:
        raise FolderRefused(
            f"Refused to write the discovery file in {exc.folder}: {exc.reason}. Another user could swap their own "
            "file in for this window's, so Gemini CLI is not told about this window. Remove that folder (its owner "
            "or an administrator can), or start Sublime Text (or `serve`) and `gemini` with TMPDIR set to a "
            "folder of your own, then reload the package."
        ) from exc
    except OSError as exc:
        raise TokenFileError(
            f"Cannot write the discovery file in {directory} ({exc.strerror or exc}). Gemini CLI finds this "
            "window through that file: make the folder (and the folders above it) writable for your user, "
            "then reload the package."
        ) from exc
    return path


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def sweep_stale(own_editor_pid: int, directory: str | None = None) -> list[str]:
    """Delete discovery files that can no longer answer; returns the paths removed.

    Only our user's files are considered. A file whose PID is dead is stale. A file with *our*
    editor's PID whose port no longer accepts connections is stale too: it was left by an earlier
    plugin host of this same editor (a crash or a forced reload). So is a file whose PID now
    belongs to a process started after the file was written (the editor crashed and the system gave
    its PID to another program), unless its port still answers. Live files are never touched.
    """
    return remove_stale(our_files(directory or discovery_dir()), own_editor_pid, "discovery file")


def our_files(directory: str) -> Iterator[tuple[str, int, int]]:
    """(path, editor PID, port) of every discovery file in `directory` that belongs to this user.

    Gemini CLI ignores other users' files, and so do we: we neither connect to them nor delete them.
    """
    for path, match in matching_files(directory, FILE_PATTERN):
        if _owned_by_us(path):
            yield path, int(match.group(1)), int(match.group(2))


def _owned_by_us(path: str) -> bool:
    if sys.platform == "win32":
        return True
    try:
        return os.stat(path).st_uid == os.getuid()
    except OSError:
        return False
