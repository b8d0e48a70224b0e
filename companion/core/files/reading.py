"""`read_file`: a file's text, or its open buffer's text when it has unsaved changes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from .fdpath import open_file
from .paths import Resolved, WorkspaceError, special_kind
from .textfile import TextFormat, decode

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO swapped in after the check must not hang
_BINARY = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class ReadResult:
    text: str
    unsaved: bool  # the text comes from the editor's buffer, which differs from the file on disk
    format: TextFormat | None  # how the file is stored (None for buffer text)


def read_bytes(target: Resolved, limit: int | None, name: str, setting: str = "read_file_limit_kb") -> bytes:
    """The bytes of a regular file, refusing anything else and anything over `limit` bytes (the
    `setting` a refusal names)."""
    fd = open_file(target, os.O_RDONLY | _NONBLOCK | _BINARY, name)  # never follows a swapped-in link
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WorkspaceError(f"Refused {name}: it is a {special_kind(st.st_mode)}, not a regular file.")
        if limit is not None and st.st_size > limit:
            raise WorkspaceError(
                f"{name} is {_size(st.st_size)}, over the read limit of {_size(limit)} "
                f"(setting `{setting}`); it was not read."
            )
        data = read_at_most(fd, st.st_size + 1 if limit is None else limit + 1)
        if limit is not None and len(data) > limit:
            raise WorkspaceError(f"{name} grew over the read limit of {_size(limit)} while being read.")
        return data
    finally:
        os.close(fd)


def read_at_most(fd: int, count: int) -> bytes:
    """Up to `count` bytes from `fd`, in 1 MiB reads (a file that grows meanwhile stops at `count`)."""
    return b"".join(iter_at_most(fd, count))


def iter_at_most(fd: int, count: int) -> Iterator[bytes]:
    """`read_at_most` one 1 MiB chunk at a time, for callers that stream instead of holding it all."""
    remaining = count
    while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
        remaining -= len(chunk)
        yield chunk


def read_text(
    target: Resolved, buffer_text: str | None, limit: int, name: str, setting: str = "read_file_limit_kb"
) -> ReadResult:
    if buffer_text is not None:
        size = len(buffer_text.encode("utf-8", errors="surrogatepass"))
        if size > limit:
            raise WorkspaceError(
                f"The unsaved buffer of {name} is {_size(size)}, over the read limit of {_size(limit)} "
                f"(setting `{setting}`); it was not read."
            )
        return ReadResult(buffer_text, True, None)
    data = read_bytes(target, limit, name, setting)
    text, fmt = decode(data, name)
    return ReadResult(text, False, fmt)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"
