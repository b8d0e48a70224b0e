"""The path policy: what a client's path may point to, and the reason it is refused otherwise."""

from __future__ import annotations

import os
import sys

import pytest

from companion.core.files.paths import PathPolicy, WorkspaceError, folder_labels

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="symlinks and FIFOs need POSIX here")


def touch(path: str, text: str = "x") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def refused(policy: PathPolicy, argument: str, reason: str, **kwargs: object) -> None:
    with pytest.raises(WorkspaceError) as info:
        policy.resolve(argument, **kwargs)  # type: ignore[arg-type]
    assert reason in str(info.value), str(info.value)


def test_relative_absolute_and_uri_forms_name_the_same_file(workspace: str) -> None:
    target = touch(os.path.join(workspace, "src", "a b.py"))
    policy = PathPolicy([workspace])
    uri = "file://" + target.replace(" ", "%20")
    for argument in ("src/a b.py", target, uri, "src/../src/a b.py", "./src/a b.py"):
        resolved = policy.resolve(argument)
        assert resolved.path == target and resolved.exists and resolved.relative == "src/a b.py"


def test_dot_dot_out_of_the_folder_is_refused(workspace: str) -> None:
    touch(os.path.join(workspace, "a.txt"))
    name = os.path.basename(workspace)
    policy = PathPolicy([workspace])
    refused(policy, "../outside/secret.txt", "'..' leads outside")
    assert policy.resolve(f"../{name}/a.txt").relative == "a.txt"  # out and back in is not an escape
    refused(policy, "src/../../x", "'..' leads outside")


def test_absolute_paths_and_uris_elsewhere_are_refused(workspace: str, outside: str) -> None:
    policy = PathPolicy([workspace])
    secret = os.path.join(outside, "secret.txt")
    refused(policy, secret, "outside the window's folders")
    refused(policy, "file://" + secret, "outside the window's folders")
    refused(policy, "file://otherhost" + secret, "only local file:// URIs")
    refused(policy, os.path.join(workspace, "..", "outside", "secret.txt"), "outside the window's folders")


@posix_only
def test_symlinks_that_point_out_are_refused_and_links_inside_are_followed(workspace: str, outside: str) -> None:
    secret = os.path.join(outside, "secret.txt")
    inner = touch(os.path.join(workspace, "real.txt"))
    os.symlink(secret, os.path.join(workspace, "file-link"))
    os.symlink(outside, os.path.join(workspace, "dir-link"))
    os.symlink(os.path.join(outside, "missing.txt"), os.path.join(workspace, "dangling"))
    os.symlink(inner, os.path.join(workspace, "inner-link"))
    policy = PathPolicy([workspace])
    refused(policy, "file-link", "symbolic link")
    refused(policy, "dir-link/secret.txt", "symbolic link")
    refused(policy, "dir-link/new.txt", "symbolic link", must_exist=False)  # no new files through it either
    refused(policy, "dangling", "symbolic link", must_exist=False)
    assert policy.resolve("inner-link").path == inner


@posix_only
def test_fifos_sockets_and_devices_are_refused(workspace: str) -> None:
    import socket

    os.mkfifo(os.path.join(workspace, "pipe"))
    sock = socket.socket(socket.AF_UNIX)
    short = os.path.join(workspace, "s")
    try:
        sock.bind(short)
    except OSError:  # path too long for AF_UNIX on some systems: the FIFO case still runs
        short = ""
    os.symlink("/dev/null", os.path.join(workspace, "null-link"))
    policy = PathPolicy([workspace])
    try:
        refused(policy, "pipe", "named pipe (FIFO)", kind="any")
        if short:
            refused(policy, "s", "socket", kind="any")
        refused(policy, "null-link", "symbolic link")  # /dev/null is outside anyway
        # A workspace folder *is* /dev: a device inside the workspace is still refused.
        if os.path.exists("/dev/null"):
            refused(PathPolicy(["/dev"]), "null", "character device")
    finally:
        sock.close()


def test_missing_files_folders_and_empty_arguments(workspace: str) -> None:
    touch(os.path.join(workspace, "dir", "f.txt"))
    policy = PathPolicy([workspace])
    refused(policy, "nope.txt", "does not exist")
    refused(policy, "dir", "is a folder")
    refused(policy, "dir/f.txt", "is a file, not a folder", kind="folder")
    refused(policy, "dir/f.txt/child", "a parent of it is a file", must_exist=False)
    refused(policy, "", "non-empty")
    refused(policy, "a\x00b", "NUL")
    refused(policy, f"file://{workspace}/a%00b.txt", "encodes a NUL character (%00)", must_exist=False)
    new = policy.resolve("dir/new/deeper.txt", must_exist=False)
    assert not new.exists and new.path == os.path.join(workspace, "dir", "new", "deeper.txt")
    refused(PathPolicy([]), "a.txt", "no folder open")


def test_several_folders_are_addressed_by_their_label(tmp_path: str) -> None:
    first = os.path.realpath(os.path.join(str(tmp_path), "one", "app"))
    second = os.path.realpath(os.path.join(str(tmp_path), "two", "app"))
    third = os.path.realpath(os.path.join(str(tmp_path), "lib"))
    touch(os.path.join(first, "a.txt"))
    touch(os.path.join(second, "a.txt"))
    touch(os.path.join(third, "only-here.txt"))
    policy = PathPolicy([first, second, third])
    assert folder_labels([first, second, third]) == ["app", "app (2)", "lib"]
    assert policy.resolve("app/a.txt").path == os.path.join(first, "a.txt")
    assert policy.resolve("app (2)/a.txt").path == os.path.join(second, "a.txt")
    assert policy.resolve("only-here.txt").path == os.path.join(third, "only-here.txt")  # found in a later folder
    assert policy.resolve(os.path.join(second, "a.txt")).folder == second
    assert policy.resolve("new.txt", must_exist=False).path == os.path.join(first, "new.txt")


@posix_only
def test_a_window_folder_opened_through_a_symlink_accepts_both_spellings(tmp_path: str, workspace: str) -> None:
    target = touch(os.path.join(workspace, "a.txt"))
    alias = os.path.join(str(tmp_path), "alias")
    os.symlink(workspace, alias)
    policy = PathPolicy([alias])
    for argument in ("a.txt", os.path.join(alias, "a.txt"), target):
        assert policy.resolve(argument).path == target
    refused(policy, os.path.join(alias, "..", "outside", "secret.txt"), "outside the window's folders")
