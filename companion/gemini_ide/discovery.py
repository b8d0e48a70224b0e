"""The discovery file Gemini CLI looks for: `<tmpdir>/gemini/ide/gemini-ide-server-<PID>-<PORT>.json`.

The CLI reads every such file owned by its own user and keeps the ones whose `workspacePath`
contains its working directory, so the file must exist before `gemini` starts, carry `ideInfo`
(Terminus forces `TERM_PROGRAM=Terminus-Sublime`, leaving the file as the only way to recognise
Sublime), hold the bearer token only for our user (0600 from creation, in a 0700 folder), and be
gone when the server is.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ..private_dirs import UnsafeFolder, check_above, check_own
from ..processes import create_time, pid_alive
from .protocol import IDE_INFO

log = logging.getLogger("gemini_companion")

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


def ensure_private_dir(path: str) -> None:
    """Create the folder 0700 (each missing level), and narrow it to 0700 (it is ours).

    Raises UnsafeFolder, before anything is created in it, for a folder another user owns or can
    replace (see private_dirs)."""
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        ensure_private_dir(parent)  # makedirs would create missing parents with mode 0777 & ~umask
    check_above(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_own(path)
    if sys.platform != "win32" and os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o700)


class DiscoveryError(OSError):
    """The discovery file cannot be written; the message names the folder and what to do."""


class FolderRefused(DiscoveryError):
    """The folder for a token-bearing file is not safe (see private_dirs); nothing was written."""


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
        raise DiscoveryError(
            f"Cannot write the discovery file in {directory} ({exc.strerror or exc}). Gemini CLI finds this "
            "window through that file: make the folder (and the folders above it) writable for your user, "
            "then reload the package."
        ) from exc
    return path


def atomic_write_private(path: str, data: bytes) -> None:
    # The temporary name does not match FILE_PATTERN, so the CLI never reads a half-written file.
    temp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
    if os.path.lexists(temp):
        os.unlink(temp)
    fd = os.open(temp, flags | os.O_EXCL, 0o600)  # 0600 from the first byte, never chmod after
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


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


def remove_stale(files: Iterable[tuple[str, int, int]], own_editor_pid: int, what: str) -> list[str]:
    """Delete those of `files` ((path, PID, port) each) that `is_stale`; returns the paths removed."""
    removed: list[str] = []
    for path, pid, port in files:
        if not is_stale(path, pid, port, own_editor_pid):
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except OSError as exc:
            log.debug("could not remove stale %s %s: %s", what, path, exc)
    return removed


# Process start times and file times come from different clocks and roundings (Windows: 15.6 ms
# ticks; Linux: clock ticks since boot); a process is "newer than its file" only beyond this.
CLOCK_SLACK_SECONDS = 2.0


def is_stale(path: str, pid: int, port: int, own_editor_pid: int) -> bool:
    """The discovery file at `path` can no longer lead a client to a live server (see sweep_stale)."""
    if not pid_alive(pid):
        return True
    if pid == own_editor_pid:
        return not port_answers(port)
    if pid_reused_since(path, pid):
        return not port_answers(port)
    return False


def pid_reused_since(path: str, pid: int) -> bool:
    """The process with `pid` started after `path` was written: it is not the editor that wrote it."""
    started = create_time(pid)
    try:
        written = os.stat(path).st_mtime
    except OSError:
        return False
    return started is not None and started > written + CLOCK_SLACK_SECONDS


def our_files(directory: str) -> Iterator[tuple[str, int, int]]:
    """(path, editor PID, port) of every discovery file in `directory` that belongs to this user.

    Gemini CLI ignores other users' files, and so do we: we neither connect to them nor delete them.
    """
    for path, match in matching_files(directory, FILE_PATTERN):
        if _owned_by_us(path):
            yield path, int(match.group(1)), int(match.group(2))


def matching_files(directory: str, pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    """(path, match) of each name in `directory` that `pattern` matches; none if it cannot be listed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match:
            yield os.path.join(directory, name), match


def _owned_by_us(path: str) -> bool:
    if sys.platform == "win32":
        return True
    try:
        return os.stat(path).st_uid == os.getuid()
    except OSError:
        return False


def port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
