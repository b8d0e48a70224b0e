"""An accepted `write_file` when the disk fails: no partial file, the old text intact, a clear error.

The faults are injected at the system-call boundary (this machine runs as root, where a read-only
folder cannot be made with chmod, and mounting a full filesystem needs privileges CI lacks).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

import pytest

from companion.core.files.paths import PathPolicy, WorkspaceError
from companion.core.files.writing import existing_format, write_atomically


def fail_with(code: int) -> Callable[..., None]:
    def failing(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    return failing


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("fsync", errno.ENOSPC),  # the disk filled up while the new text was written
        ("replace", errno.EROFS),  # the target's filesystem is read-only
        ("replace", errno.EACCES),  # the target folder is not writable
        ("open", errno.EROFS),  # not even the temporary file can be created
    ],
)
def test_a_failed_write_keeps_the_old_file_and_leaves_nothing_behind(
    tmp_path: str, monkeypatch: pytest.MonkeyPatch, call: str, code: int
) -> None:
    folder = os.path.join(str(tmp_path), "project")
    os.makedirs(folder)
    target_path = os.path.join(folder, "notes.txt")
    with open(target_path, "wb") as f:
        f.write(b"line one\r\nline two\r\n")
    policy = PathPolicy([folder])
    target = policy.resolve(target_path)
    fmt = existing_format(target, "notes.txt")
    if call == "open":  # a read-only filesystem still opens folders and files for reading
        real_open = os.open

        def open_for_reading_only(path: str, flags: int, *args: object, **kwargs: object) -> int:
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise OSError(code, os.strerror(code))
            return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", open_for_reading_only)
    else:
        monkeypatch.setattr(os, call, fail_with(code))
    with pytest.raises(WorkspaceError) as caught:
        write_atomically(policy, target, "replaced\n", fmt, "notes.txt")
    monkeypatch.undo()
    message = str(caught.value)
    assert "notes.txt" in message and "Nothing was written" in message and os.strerror(code) in message
    with open(target_path, "rb") as f:
        assert f.read() == b"line one\r\nline two\r\n"
    assert os.listdir(folder) == ["notes.txt"], "no temporary file may be left behind"


def test_a_new_file_that_cannot_be_written_is_not_created(tmp_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = os.path.join(str(tmp_path), "project")
    os.makedirs(folder)
    policy = PathPolicy([folder])
    target = policy.resolve(os.path.join(folder, "sub", "new.txt"), must_exist=False)
    monkeypatch.setattr(os, "fsync", fail_with(errno.ENOSPC))
    with pytest.raises(WorkspaceError):
        write_atomically(policy, target, "text\n", existing_format(target, "new.txt"), "new.txt")
    monkeypatch.undo()
    assert not os.path.exists(os.path.join(folder, "sub", "new.txt"))
    assert os.listdir(os.path.join(folder, "sub")) == []
