"""The path policy shared by every workspace tool.

A path given by a client (absolute, `file://` URI, or relative to a window folder) is accepted only
when its *resolved* location (symlinks followed, `..` collapsed) lies inside one of the window's
folders. Refused, each with a message that says why: `..` that climbs out of the folder, absolute
paths elsewhere, symlinks (of the file or of a parent folder) that point out, and anything that is
not a regular file or a folder (devices, FIFOs, sockets).

Relative paths: with one folder they are relative to it. With several, a first component equal to
a folder's label (its name, as `list_files` prints it) selects that folder; otherwise the first
folder that holds the path, else the first folder.
"""

from __future__ import annotations

import os
import stat
import sys
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class WorkspaceError(Exception):
    """A workspace request that cannot be served; the message is shown to the client as is."""


def real_path(path: str) -> str:
    """`os.path.realpath`, with a race turned into a refusal. Before Python 3.13 realpath raises
    when a link it saw is replaced meanwhile (readlink on what is now a folder: EINVAL)."""
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise WorkspaceError(f"{path} changed while it was being checked ({exc.strerror or exc}); try again.") from None


@dataclass(frozen=True)
class Resolved:
    """A path that passed the policy."""

    path: str  # the real path (symlinks resolved): the one to open
    requested: str  # the absolute path as the client named it (before resolving symlinks)
    folder: str  # the real path of the window folder that contains it
    exists: bool

    @property
    def relative(self) -> str:
        rel = os.path.relpath(self.path, self.folder)
        return "" if rel == "." else rel.replace(os.sep, "/")


def folder_labels(folders: Sequence[str]) -> list[str]:
    """How each folder is named in listings: its base name, made unique with " (2)", " (3)", …"""
    labels: list[str] = []
    for folder in folders:
        base = os.path.basename(os.path.normpath(folder)) or folder
        label, n = base, 1
        while label in labels:
            n += 1
            label = f"{base} ({n})"
        labels.append(label)
    return labels


def is_inside(path: str, folder: str, pathmod: Any = os.path) -> bool:
    """True when `path` is `folder` or below it (both absolute and normalised), by the case rules of
    the OS (`pathmod`: ntpath or posixpath): Windows ignores case (UNC and `\\?\\` paths alike); macOS
    and Linux compare exactly, since a case-sensitive volume may hold both `proj` and `Proj` and
    treating them as one would let a path escape the workspace."""
    p, f = pathmod.normcase(path), pathmod.normcase(folder).rstrip(pathmod.sep)
    return p == f or p.startswith(f + pathmod.sep)


def path_from_argument(argument: str) -> str:
    """Turn a `file://` URI into a path; other strings are returned unchanged."""
    if not argument.lower().startswith("file:"):
        return argument
    parsed = urllib.parse.urlsplit(argument)
    if parsed.netloc not in ("", "localhost"):
        raise WorkspaceError(f"Refused {argument!r}: only local file:// URIs are accepted (no host).")
    from urllib.request import url2pathname  # here: it pulls in http.client, ssl and email (slow to import)

    path = url2pathname(parsed.path)
    if not path:
        raise WorkspaceError(f"Refused {argument!r}: the URI has no path.")
    if "\x00" in path:  # `%00` decodes to NUL, which no file name can hold
        raise WorkspaceError(f"Refused {argument!r}: the URI encodes a NUL character (%00); send the file's real path.")
    return path


class PathPolicy:
    """Resolves client paths against the window's folders."""

    def __init__(self, folders: Sequence[str]) -> None:
        self.folders = [os.path.abspath(f) for f in folders]
        self.real_folders = [os.path.realpath(f) for f in self.folders]
        self.labels = folder_labels(self.folders)

    def resolve(self, argument: str, *, kind: str = "file", must_exist: bool = True) -> Resolved:
        """Check `argument` and return where it points.

        `kind` is "file" (a regular file), "folder" or "any" (either). With `must_exist=False` a
        missing path is allowed (a new file): its nearest existing parent must be inside.
        """
        if not isinstance(argument, str) or not argument.strip():
            raise WorkspaceError("The path must be a non-empty string.")
        if "\x00" in argument:
            raise WorkspaceError("Refused the path: it contains a NUL character.")
        if not self.folders:
            raise WorkspaceError(
                "This window has no folder open, so no path is inside the workspace. "
                "Open a folder in Sublime Text (File > Open Folder) and try again."
            )
        raw = path_from_argument(argument)
        requested = self._absolute(raw, argument)
        real = real_path(requested)
        folder = self._containing_folder(real)
        if folder is None:
            if self._containing_folder(requested, real=False) or self._containing_folder(requested):
                raise WorkspaceError(
                    f"Refused {argument!r}: it is a symbolic link (or inside one) that points outside the "
                    f"workspace, to {real}. Only files inside the window's folders are served; to reach that "
                    "file, the user can add its folder to the Sublime Text window (Project > Add Folder)."
                )
            raise WorkspaceError(
                f"Refused {argument!r}: it is outside the window's folders ({self._describe()}). Use a path inside "
                "them (list_files shows them), or ask the user to add that folder to the window."
            )
        try:
            st = os.stat(real)
        except FileNotFoundError:
            if must_exist:
                raise WorkspaceError(f"{argument!r} does not exist in the workspace.") from None
            return Resolved(real, requested, folder, exists=False)
        except NotADirectoryError:
            raise WorkspaceError(f"{argument!r} does not exist: a parent of it is a file.") from None
        except OSError as exc:
            raise WorkspaceError(f"Cannot access {argument!r}: {exc.strerror or exc}.") from None
        if stat.S_ISDIR(st.st_mode):
            if kind == "file":
                raise WorkspaceError(f"{argument!r} is a folder, not a file.")
        elif stat.S_ISREG(st.st_mode):
            if kind == "folder":
                raise WorkspaceError(f"{argument!r} is a file, not a folder.")
        else:
            raise WorkspaceError(
                f"Refused {argument!r}: it is a {special_kind(st.st_mode)}, not a regular file; "
                "only regular files and folders are served."
            )
        return Resolved(real, requested, folder, exists=True)

    def _absolute(self, raw: str, argument: str) -> str:
        if os.path.isabs(raw):
            return os.path.normpath(raw)
        if sys.platform == "win32" and (raw.startswith(("\\", "/")) or os.path.splitdrive(raw)[0]):
            raise WorkspaceError(f"Refused {argument!r}: give a full path with its drive, or a folder-relative one.")
        base, rest = self._base_for(raw)
        joined = os.path.normpath(os.path.join(base, rest))
        if not is_inside(joined, base):
            raise WorkspaceError(
                f"Refused {argument!r}: '..' leads outside the workspace folder {base}. Use a path inside it."
            )
        return joined

    def _base_for(self, raw: str) -> tuple[str, str]:
        if len(self.folders) == 1:
            return self.folders[0], raw
        parts = raw.replace("\\", "/").split("/", 1)
        if parts[0] in self.labels:
            index = self.labels.index(parts[0])
            return self.folders[index], parts[1] if len(parts) > 1 else ""
        for folder in self.folders:
            if os.path.lexists(os.path.join(folder, raw)):
                return folder, raw
        return self.folders[0], raw

    def _containing_folder(self, path: str, real: bool = True) -> str | None:
        candidates = self.real_folders if real else self.folders
        for index, folder in enumerate(candidates):
            if is_inside(path, folder):
                return self.real_folders[index]
        return None

    def _describe(self) -> str:
        return ", ".join(self.folders)


def special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"
