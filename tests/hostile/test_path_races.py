"""A folder of the workspace swapped for a symlink to the outside, over and over, while read_file and
write_file run: nothing is read from outside, nothing is written there, no temporary file is left.

The race is between the policy's check and the open: the swapper flips `<workspace>/sub` between
the real folder and a symlink to `<outside>` as fast as it can, while the same code the tools run
(`PathPolicy.resolve`, then `read_bytes` / `write_atomically`) works on `sub/file.txt`.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable

import pytest

from companion.core.files.paths import PathPolicy, WorkspaceError
from companion.core.files.reading import read_bytes
from companion.core.files.textfile import NEW_FILE
from companion.core.files.writing import write_atomically

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the descriptor walk is POSIX; see fdpath")

SECRET = b"SECRET-OUTSIDE\n"
SECONDS = 3.0  # per operation: tens of thousands of tries on a shared 2-core machine


def _renameat2() -> Callable[[str, str], None] | None:
    """Linux's atomic exchange of two names (renameat2 RENAME_EXCHANGE), or None where absent."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is None:
        return None

    def exchange(a: str, b: str) -> None:
        if function(-100, a.encode(), -100, b.encode(), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error))

    return exchange


EXCHANGE = _renameat2()


class Swapper:
    """Flips `<workspace>/sub` between the real folder and a symlink to `outside`. On Linux with an
    atomic exchange `sub` never stops existing (the strongest attacker); elsewhere by renames."""

    def __init__(self, workspace: str, outside: str) -> None:
        self.sub = os.path.join(workspace, "sub")
        self.parked = os.path.join(workspace, ".sub-parked")
        self.outside = outside
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if EXCHANGE is not None:
            os.symlink(self.outside, self.parked)
            while not self.stop.is_set():
                EXCHANGE(self.sub, self.parked)  # sub -> outside
                EXCHANGE(self.sub, self.parked)  # sub is the real folder again
                self.swaps += 1
            os.unlink(self.parked)
            return
        while not self.stop.is_set():
            os.rename(self.sub, self.parked)
            os.symlink(self.outside, self.sub)
            os.unlink(self.sub)
            while True:
                try:
                    os.rename(self.parked, self.sub)
                    break
                except OSError:
                    # A write found `sub` missing and created it (as write_file does for a new
                    # folder): throw that one away and put the real folder back.
                    shutil.rmtree(self.sub, ignore_errors=True)
            self.swaps += 1

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def layout(tmp_path: str) -> tuple[str, str]:
    workspace, outside = os.path.join(tmp_path, "workspace"), os.path.join(tmp_path, "outside")
    os.makedirs(os.path.join(workspace, "sub"))
    os.makedirs(outside)
    with open(os.path.join(workspace, "sub", "file.txt"), "wb") as handle:
        handle.write(b"inside\n")
    with open(os.path.join(outside, "file.txt"), "wb") as handle:
        handle.write(SECRET)
    return workspace, outside


def hammer(operation: Callable[[int], None]) -> tuple[int, int]:
    """Run `operation(try_number)` for SECONDS; returns (tries, successes). A WorkspaceError is a
    refusal (the swap was seen); anything else fails the test."""
    tries = successes = 0
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        tries += 1
        try:
            operation(tries)
        except WorkspaceError:
            continue
        successes += 1
    return tries, successes


def test_reads_never_return_outside_bytes_while_a_folder_is_swapped(tmp_path: str) -> None:
    workspace, outside = layout(str(tmp_path))
    policy = PathPolicy([workspace])

    def read(attempt: int) -> None:
        data = read_bytes(policy.resolve("sub/file.txt"), None, "sub/file.txt")
        assert data == b"inside\n", f"read outside bytes after {attempt} tries"

    with Swapper(workspace, outside) as swapper:
        tries, served = hammer(read)
    print(f"{tries} reads, {served} served, {swapper.swaps} swaps")
    assert swapper.swaps > 100 and served > 0


def test_writes_never_land_outside_nor_leave_temporary_files_while_a_folder_is_swapped(tmp_path: str) -> None:
    workspace, outside = layout(str(tmp_path))
    policy = PathPolicy([workspace])

    def write(attempt: int) -> None:
        target = policy.resolve("sub/file.txt", must_exist=False)
        write_atomically(policy, target, f"write {attempt}\n", NEW_FILE, "sub/file.txt")

    with Swapper(workspace, outside) as swapper:
        tries, written = hammer(write)
    print(f"{tries} writes, {written} written, {swapper.swaps} swaps")
    assert swapper.swaps > 100 and written > 0
    assert os.listdir(outside) == ["file.txt"], "a file was created outside the workspace"
    with open(os.path.join(outside, "file.txt"), "rb") as handle:
        assert handle.read() == SECRET, "the outside file was overwritten"
    leftovers = [
        os.path.join(folder, name)
        for root in (workspace, outside)
        for folder, _, names in os.walk(root)
        for name in names
        if name.endswith(".tmp")
    ]
    assert leftovers == [], leftovers
