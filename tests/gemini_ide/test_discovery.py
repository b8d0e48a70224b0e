"""The discovery file: where Gemini CLI looks, what it reads, who may read it, when it goes."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from companion.core.system import token_files
from companion.gemini_ide import discovery

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TMPDIR": "/var/folders/xy/T/"}, "/var/folders/xy/T"),  # macOS sets it with a trailing slash
        ({"TMPDIR": "/custom"}, "/custom"),
        ({"TMP": "/from-tmp"}, "/from-tmp"),
        ({"TEMP": "/from-temp"}, "/from-temp"),
        ({"TMPDIR": "", "TMP": "/second"}, "/second"),
        ({"TMP": "/tmp-first", "TEMP": "/temp-second"}, "/tmp-first"),  # Node: TMP before TEMP (Python: TEMP)
        ({}, "/tmp"),
        ({"TMPDIR": "/"}, "/"),
    ],
)
def test_tmpdir_follows_node_on_posix(env: dict[str, str], expected: str) -> None:
    assert discovery.node_tmpdir(env, platform="linux") == expected


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TEMP": "C:\\Users\\me\\AppData\\Local\\Temp\\"}, "C:\\Users\\me\\AppData\\Local\\Temp"),
        ({"TMP": "D:\\tmp"}, "D:\\tmp"),
        ({"TEMP": "C:\\"}, "C:\\"),  # a drive root keeps its backslash
        ({"SystemRoot": "C:\\Windows"}, "C:\\Windows\\temp"),
        ({"windir": "C:\\WINNT"}, "C:\\WINNT\\temp"),
        ({"TEMP": "C:\\temp-first", "TMP": "C:\\tmp-second"}, "C:\\temp-first"),  # TEMP before TMP here
    ],
)
def test_tmpdir_follows_node_on_windows(env: dict[str, str], expected: str) -> None:
    assert discovery.node_tmpdir(env, platform="win32") == expected


def test_the_file_has_what_the_cli_reads(tmp_path: str) -> None:
    folders = [os.path.join(str(tmp_path), "a"), os.path.join(str(tmp_path), "b")]
    path = discovery.write(4242, 51234, folders, "tok", str(tmp_path))
    assert os.path.basename(path) == "gemini-ide-server-4242-51234.json"
    with open(path) as handle:
        payload = json.load(handle)
    assert payload == {
        "port": 51234,
        "workspacePath": os.pathsep.join(folders),
        "authToken": "tok",
        "ideInfo": {"name": "sublimetext", "displayName": "Sublime Text"},
    }


def test_a_window_without_folders_says_so_with_an_empty_workspace(tmp_path: str) -> None:
    path = discovery.write(1, 2, [], "t", str(tmp_path))
    with open(path) as handle:
        assert json.load(handle)["workspacePath"] == ""


def test_the_default_directory_is_under_node_tmpdir(monkeypatch: pytest.MonkeyPatch, tmp_path: str) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path) + "/")
    assert discovery.discovery_dir() == os.path.join(str(tmp_path), "gemini", "ide")


@posix_only
def test_directory_0700_and_file_0600_from_the_moment_of_creation(
    tmp_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = os.path.join(str(tmp_path), "gemini", "ide")
    seen: list[tuple[int, int]] = []
    real_replace = os.replace

    def watching_replace(src: str, dst: str) -> None:
        # The content is complete here and nothing can read it yet but us: check both modes now.
        seen.append((stat.S_IMODE(os.stat(src).st_mode), stat.S_IMODE(os.stat(os.path.dirname(src)).st_mode)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", watching_replace)
    old_umask = os.umask(0)  # even a permissive umask must not widen the modes
    try:
        path = discovery.write(1, 2, ["/w"], "secret", directory)
    finally:
        os.umask(old_umask)
    assert seen == [(0o600, 0o700)]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.join(str(tmp_path), "gemini")).st_mode) == 0o700


@posix_only
def test_no_moment_exists_where_the_file_or_its_folder_is_readable_by_others(
    tmp_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file and folder is checked the instant it is created (before a single byte is written),
    with a umask that would leave anything created without an explicit mode wide open; a
    chmod-after-create implementation fails here, and so does writing the final name directly."""
    directory = os.path.join(str(tmp_path), "gemini", "ide")
    created: list[tuple[str, int]] = []
    real_open, real_mkdir = os.open, os.mkdir

    def watching_open(path: str, flags: int, mode: int = 0o777, *args: object, **kwargs: object) -> int:
        fd = real_open(path, flags, mode, *args, **kwargs)  # type: ignore[arg-type]
        if flags & os.O_CREAT:
            assert flags & os.O_EXCL, "a file created without O_EXCL may be someone else's (a planted link)"
            created.append((os.path.basename(path), stat.S_IMODE(os.fstat(fd).st_mode)))
        return fd

    def watching_mkdir(path: str, mode: int = 0o777, *args: object, **kwargs: object) -> None:
        real_mkdir(path, mode, *args, **kwargs)  # type: ignore[arg-type]
        created.append((os.path.basename(path) + "/", stat.S_IMODE(os.stat(path).st_mode)))

    def refusing_chmod(path: object, mode: int, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"chmod({path!r}, {oct(mode)}) after creation: the modes must be right from the start")

    monkeypatch.setattr(os, "open", watching_open)
    monkeypatch.setattr(os, "mkdir", watching_mkdir)
    monkeypatch.setattr(os, "chmod", refusing_chmod)
    old_umask = os.umask(0)
    try:
        path = discovery.write(1, 2, ["/w"], "secret", directory)
        discovery.write(1, 2, ["/w", "/v"], "secret", directory)  # the atomic rewrite too
    finally:
        os.umask(old_umask)
    assert [mode for _, mode in created] == [0o700, 0o700, 0o600, 0o600], created
    assert all(not name.startswith("gemini-ide-server-") for name, _ in created), (
        "the final name must only ever appear complete, through a rename"
    )
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@posix_only
def test_an_existing_open_directory_of_ours_is_narrowed_to_0700(tmp_path: str) -> None:
    directory = os.path.join(str(tmp_path), "ide")
    os.makedirs(directory, mode=0o755)
    os.chmod(directory, 0o777)
    discovery.write(1, 2, [], "t", directory)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_rewrite_is_atomic_and_leaves_no_temporary_file(tmp_path: str) -> None:
    path = discovery.write(1, 2, ["/one"], "t", str(tmp_path))
    path2 = discovery.write(1, 2, ["/one", "/two"], "t", str(tmp_path))
    assert path == path2
    with open(path) as handle:
        assert json.load(handle)["workspacePath"] == os.pathsep.join(["/one", "/two"])
    assert os.listdir(str(tmp_path)) == [os.path.basename(path)]


def test_remove_is_idempotent(tmp_path: str) -> None:
    path = discovery.write(1, 2, [], "t", str(tmp_path))
    discovery.remove(path)
    discovery.remove(path)
    assert not os.path.exists(path)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_sweep_removes_files_of_dead_editors_and_never_live_ones(tmp_path: str) -> None:
    directory = str(tmp_path)
    dead = discovery.write(dead_pid(), 1111, [], "t", directory)
    live_other = discovery.write(os.getppid(), 2222, [], "t", directory)
    unrelated = os.path.join(directory, "notes.json")
    with open(unrelated, "w") as handle:
        handle.write("{}")
    removed = discovery.sweep_stale(own_editor_pid=os.getpid(), directory=directory)
    assert removed == [dead]
    assert os.path.exists(live_other) and os.path.exists(unrelated)


def test_sweep_removes_our_own_editors_file_whose_port_is_dead_but_keeps_a_live_one(tmp_path: str) -> None:
    directory = str(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        stale = discovery.write(os.getpid(), closed_port, [], "t", directory)
        live = discovery.write(os.getpid(), listener.getsockname()[1], [], "t", directory)
        assert discovery.sweep_stale(os.getpid(), directory) == [stale]
        assert os.path.exists(live)
    finally:
        listener.close()


@posix_only
def test_another_users_files_are_never_swept_nor_connected_to(tmp_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from companion.bridge import read_endpoints

    directory = str(tmp_path)
    theirs = discovery.write(dead_pid(), 1111, [directory], "their-token", directory)
    if os.geteuid() == 0:
        os.chown(theirs, 65534, 65534)  # a real file of another user ("nobody")
    else:
        monkeypatch.setattr(os, "getuid", lambda: os.stat(theirs).st_uid + 1)  # we become another user
    assert discovery.sweep_stale(os.getpid(), directory) == []
    assert os.path.exists(theirs)
    assert read_endpoints(directory) == []


def test_sweep_of_a_missing_directory_is_harmless(tmp_path: str) -> None:
    assert discovery.sweep_stale(os.getpid(), os.path.join(str(tmp_path), "absent")) == []


def test_a_starting_runtime_sweeps_stale_files_and_leaves_live_ones(tmp_path: str) -> None:
    from companion.runtime import Runtime
    from tests.scripted_editor import ScriptedEditor

    directory = os.path.join(str(tmp_path), "ide")
    stale = discovery.write(dead_pid(), 1111, ["/gone"], "t", directory)
    live = discovery.write(os.getppid(), 2222, ["/other-editor"], "t", directory)
    runtime = Runtime(discovery_directory=directory)
    try:
        handle = runtime.open_window(ScriptedEditor(), [])
        handle.ready.result(30)
        assert not os.path.exists(stale)
        expected = [os.path.basename(live), os.path.basename(handle.discovery_path)]
        assert sorted(os.listdir(directory)) == sorted(expected)
    finally:
        runtime.stop()
    assert os.listdir(directory) == [os.path.basename(live)]


@dataclass
class Crash:
    """A process started just now (as if it got a crashed editor's PID), a port nothing listens
    on, and one that answers."""

    pid: int
    closed_port: int
    answering_port: int


@contextmanager
def after_a_crash() -> Iterator[Crash]:
    newcomer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            closed_port = probe.getsockname()[1]
        yield Crash(newcomer.pid, closed_port, listener.getsockname()[1])
    finally:
        listener.close()
        newcomer.kill()
        newcomer.wait()


def written_an_hour_ago(*paths: str) -> None:
    an_hour_ago = time.time() - 3600
    for path in paths:
        os.utime(path, (an_hour_ago, an_hour_ago))


def test_a_pid_reused_after_a_crash_does_not_keep_the_file_alive(tmp_path: str) -> None:
    """The editor crashed and the system gave its PID to a new process: the file is stale although
    the PID is alive, unless its port still answers."""
    directory = str(tmp_path)
    with after_a_crash() as crash:
        # Files written before that process started: not written by it.
        stale = discovery.write(crash.pid, crash.closed_port, [], "t", directory)
        answering = discovery.write(crash.pid, crash.answering_port, [], "t", directory)
        written_an_hour_ago(stale, answering)
        assert token_files.pid_reused_since(stale, crash.pid)
        assert discovery.sweep_stale(os.getpid(), directory) == [stale]
        assert os.path.exists(answering)
        # A file written after its process started is that process's own: never swept for its age.
        other_port = crash.closed_port + 1 if crash.closed_port < 65535 else 1
        own = discovery.write(crash.pid, other_port, [], "t", directory)
        assert not token_files.pid_reused_since(own, crash.pid)


def test_the_bridge_prefers_the_window_that_answers_over_a_crashed_one(tmp_path: str) -> None:
    from companion.bridge import choose_endpoint, read_endpoints

    directory, workspace = str(tmp_path), os.path.realpath(str(tmp_path))
    with after_a_crash() as crash:
        crashed = discovery.write(crash.pid, crash.closed_port, [workspace], "t", directory)
        written_an_hour_ago(crashed)
        live = discovery.write(os.getpid(), crash.answering_port, [workspace], "t", directory)
        endpoints = read_endpoints(directory)
        assert [e.file for e in endpoints] == [live, crashed]  # a reused PID ranks as dead
        chosen = choose_endpoint(endpoints, workspace, None)
        assert chosen is not None and chosen.file == live
        # Even ranked first, a file whose server does not answer loses to one that does.
        chosen = choose_endpoint(list(reversed(endpoints)), workspace, None)
        assert chosen is not None and chosen.file == live
