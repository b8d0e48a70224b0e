"""The stdio bridge as Claude Desktop uses it: the SDK's stdio client runs `python -m companion bridge`,
which finds the headless companion (`python -m companion serve`, a separate process) through its
discovery file and forwards the workspace tools."""

from __future__ import annotations

import json
import os
import sys
import time

import anyio
import psutil
import pytest

from tests.mcp_tools.conftest import bridge, serve, text_of
from tests.mcp_tools.standin import install

pytestmark = pytest.mark.anyio

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="symlinks/FIFOs/shebang launchers are POSIX here")


def write_bytes(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


async def test_offers_the_workspace_tools_but_not_the_diff_tools_of_gemini_cli(tmpdir_env: str, workspace: str) -> None:
    with serve(tmpdir_env, workspace, "reject"):
        async with bridge(tmpdir_env, workspace) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {"list_files", "read_file", "write_file", "ask_gemini", "get_diagnostics"}
            result = await session.call_tool("openDiff", {"filePath": os.path.join(workspace, "a"), "newContent": ""})
    assert result.is_error and "Gemini CLI only" in text_of(result)


async def test_lists_and_reads_the_workspace_of_the_current_folder(tmpdir_env: str, workspace: str) -> None:
    write_bytes(os.path.join(workspace, "src", "main.py"), b"print('hi')\n")
    write_bytes(os.path.join(workspace, "README.md"), "héllo\r\n".encode())
    write_bytes(os.path.join(workspace, "build", "out.o"), b"\x00\x01")
    write_bytes(os.path.join(workspace, ".gitignore"), b"build/\n")
    os.mkdir(os.path.join(workspace, ".git"))
    with serve(tmpdir_env, workspace, "reject"):
        # The bridge runs in a sub-folder, like Gemini CLI it picks the window whose folder contains it.
        async with bridge(tmpdir_env, os.path.join(workspace, "src")) as session:
            listing = text_of(await session.call_tool("list_files", {"recursive": True}))
            by_relative = await session.call_tool("read_file", {"path": "README.md"})
            by_uri = await session.call_tool("read_file", {"path": "file://" + os.path.join(workspace, "src/main.py")})
            binary = await session.call_tool("read_file", {"path": "build/out.o"})
    assert listing.splitlines() == [".gitignore", "README.md", "src/main.py"]
    assert text_of(by_relative) == "héllo\r\n" and not by_relative.is_error
    assert text_of(by_uri) == "print('hi')\n"
    assert binary.is_error and "binary" in text_of(binary)


async def test_accepted_write_keeps_crlf_and_creates_new_files_in_new_folders(tmpdir_env: str, workspace: str) -> None:
    target = os.path.join(workspace, "notes.txt")
    write_bytes(target, b"one\r\ntwo\r\n")
    with serve(tmpdir_env, workspace, "accept"):
        async with bridge(tmpdir_env, workspace) as session:
            changed = await session.call_tool("write_file", {"path": "notes.txt", "content": "one\nTWO\nthree\n"})
            created = await session.call_tool("write_file", {"path": "new/deep/file.py", "content": "x = 1\n"})
    assert not changed.is_error and text_of(changed).startswith("Accepted"), text_of(changed)
    assert read_bytes(target) == b"one\r\nTWO\r\nthree\r\n"
    assert not created.is_error and "created" in text_of(created)
    assert read_bytes(os.path.join(workspace, "new", "deep", "file.py")) == b"x = 1\n"


async def test_rejected_write_leaves_the_file_untouched(tmpdir_env: str, workspace: str) -> None:
    target = os.path.join(workspace, "keep.txt")
    write_bytes(target, b"original\n")
    before = os.stat(target)
    with serve(tmpdir_env, workspace, "reject"):
        async with bridge(tmpdir_env, workspace) as session:
            result = await session.call_tool("write_file", {"path": "keep.txt", "content": "replaced\n"})
            new = await session.call_tool("write_file", {"path": "never/made.txt", "content": "x"})
    assert not result.is_error and text_of(result).startswith("Rejected"), text_of(result)
    assert read_bytes(target) == b"original\n"
    assert os.stat(target).st_mtime_ns == before.st_mtime_ns
    assert text_of(new).startswith("Rejected") and not os.path.exists(os.path.join(workspace, "never"))


@posix_only
async def test_every_escape_is_refused_for_reading_and_writing(tmpdir_env: str, workspace: str, outside: str) -> None:
    secret = os.path.join(outside, "secret.txt")
    os.symlink(secret, os.path.join(workspace, "link-out.txt"))
    os.symlink(outside, os.path.join(workspace, "dir-out"))
    os.mkfifo(os.path.join(workspace, "pipe"))
    escapes = {
        "../outside/secret.txt": "'..' leads outside",
        secret: "outside the window's folders",
        "file://" + secret: "outside the window's folders",
        "link-out.txt": "symbolic link",
        "dir-out/secret.txt": "symbolic link",
        "pipe": "FIFO",
    }
    with serve(tmpdir_env, workspace, "accept"):
        async with bridge(tmpdir_env, workspace) as session:
            for path, reason in escapes.items():
                read = await session.call_tool("read_file", {"path": path})
                assert read.is_error and reason in text_of(read), (path, text_of(read))
                assert "top secret" not in text_of(read)
                write = await session.call_tool("write_file", {"path": path, "content": "pwned\n"})
                assert write.is_error and reason in text_of(write), (path, text_of(write))
            new_via_link = await session.call_tool("write_file", {"path": "dir-out/new.txt", "content": "pwned\n"})
            listed = await session.call_tool("list_files", {"path": "dir-out"})
    assert new_via_link.is_error and "symbolic link" in text_of(new_via_link)
    assert listed.is_error and "symbolic link" in text_of(listed)
    assert read_bytes(secret) == b"top secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


@posix_only
async def test_ask_gemini_runs_the_cli_on_path_in_the_workspace_and_returns_its_answer(
    tmpdir_env: str, workspace: str, tmp_path: str
) -> None:
    bin_dir = os.path.join(str(tmp_path), "bin")
    install(bin_dir)
    log = os.path.join(str(tmp_path), "standin.log")
    env = {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "STANDIN_LOG": log}
    with serve(tmpdir_env, workspace, "reject", "--ask-model", "gemini-2.5-flash", env=env):
        async with bridge(tmpdir_env, workspace) as session:
            answer = await session.call_tool("ask_gemini", {"prompt": "What does main.py do?"})
            failed = await session.call_tool("ask_gemini", {"prompt": "fail"})
            crashed = await session.call_tool("ask_gemini", {"prompt": "crash"})
    assert not answer.is_error and text_of(answer) == "echo: What does main.py do?"
    with open(log) as handle:
        first = json.loads(handle.readline())
    assert first["argv"] == ["--prompt=What does main.py do?", "-o", "json", "-m", "gemini-2.5-flash"]
    assert os.path.realpath(first["cwd"]) == workspace
    assert (
        failed.is_error and text_of(failed) == "The Gemini CLI failed (exit code 1): Quota exceeded for model gemini-x"
    )
    assert crashed.is_error and "exit code 3" in text_of(crashed) and "something broke badly" in text_of(crashed)


async def test_ask_gemini_without_the_cli_says_how_to_install_it(
    tmpdir_env: str, workspace: str, tmp_path: str
) -> None:
    missing = os.path.join(str(tmp_path), "no-such-gemini")
    with serve(tmpdir_env, workspace, "reject", "--gemini-command", missing):
        async with bridge(tmpdir_env, workspace) as session:
            result = await session.call_tool("ask_gemini", {"prompt": "hello"})
    assert result.is_error
    assert "was not found" in text_of(result) and "gemini_command" in text_of(result)


def wait_dead(pids: list[int], timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


async def wait_for_file(path: str, timeout: float = 30) -> str:
    with anyio.fail_after(timeout):
        while not (os.path.exists(path) and read_bytes(path).strip()):
            await anyio.sleep(0.05)
    return read_bytes(path).decode()


@posix_only
async def test_ask_gemini_timeout_kills_the_cli_and_what_it_started(
    tmpdir_env: str, workspace: str, tmp_path: str
) -> None:
    bin_dir = os.path.join(str(tmp_path), "bin")
    install(bin_dir)
    pids_file = os.path.join(str(tmp_path), "pids")
    env = {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "STANDIN_PIDS": pids_file}
    with serve(tmpdir_env, workspace, "reject", "--ask-timeout", "3", env=env):
        async with bridge(tmpdir_env, workspace) as session:
            result = await session.call_tool("ask_gemini", {"prompt": "hang"})
    assert result.is_error and "did not answer within 3 s" in text_of(result)
    pids = [int(p) for p in (await wait_for_file(pids_file)).split()]
    assert wait_dead(pids) == []


@posix_only
async def test_a_cancelled_ask_gemini_kills_the_cli(tmpdir_env: str, workspace: str, tmp_path: str) -> None:
    bin_dir = os.path.join(str(tmp_path), "bin")
    install(bin_dir)
    pids_file = os.path.join(str(tmp_path), "pids")
    env = {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "STANDIN_PIDS": pids_file}
    with serve(tmpdir_env, workspace, "reject", env=env):
        async with bridge(tmpdir_env, workspace) as session:
            async with anyio.create_task_group() as group:
                group.start_soon(session.call_tool, "ask_gemini", {"prompt": "hang"})
                pids = [int(p) for p in (await wait_for_file(pids_file)).split()]
                group.cancel_scope.cancel()  # the client gives up: notifications/cancelled goes down the chain
            assert wait_dead(pids) == []
            # The bridge and the window are still usable afterwards.
            assert text_of(await session.call_tool("list_files", {})) == "(no files)"


async def test_answers_a_clear_error_while_no_window_serves_and_reconnects_when_one_does(
    tmpdir_env: str, workspace: str
) -> None:
    write_bytes(os.path.join(workspace, "a.txt"), b"alpha\n")
    async with bridge(tmpdir_env, workspace) as session:
        # Sublime is not running: the tools are still listed, calls say what to do.
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"list_files", "read_file", "write_file", "ask_gemini"} <= names
        before = await session.call_tool("read_file", {"path": "a.txt"})
        assert before.is_error and f"No Sublime Text window has {workspace} open" in text_of(before)
        with serve(tmpdir_env, workspace, "reject"):
            during = await session.call_tool("read_file", {"path": "a.txt"})
            assert not during.is_error and text_of(during) == "alpha\n"
        gone = await session.call_tool("read_file", {"path": "a.txt"})
        assert gone.is_error and "No Sublime Text window" in text_of(gone)
        with serve(tmpdir_env, workspace, "reject"):  # a new server: new port, new token
            back = await session.call_tool("read_file", {"path": "a.txt"})
            assert not back.is_error and text_of(back) == "alpha\n"


async def test_a_window_that_died_without_cleaning_up_is_a_clear_error(tmpdir_env: str, workspace: str) -> None:
    write_bytes(os.path.join(workspace, "a.txt"), b"alpha\n")
    async with bridge(tmpdir_env, workspace) as session:
        with serve(tmpdir_env, workspace, "reject") as server:
            assert text_of(await session.call_tool("read_file", {"path": "a.txt"})) == "alpha\n"
            server.process.kill()  # no cleanup: its discovery file stays behind
            server.process.wait()
            result = await session.call_tool("read_file", {"path": "a.txt"})
    assert result.is_error and "did not answer" in text_of(result), text_of(result)


async def test_port_option_picks_that_window(tmpdir_env: str, workspace: str, tmp_path: str) -> None:
    other = os.path.join(str(tmp_path), "other")
    write_bytes(os.path.join(other, "b.txt"), b"beta\n")
    write_bytes(os.path.join(workspace, "a.txt"), b"alpha\n")
    with serve(tmpdir_env, workspace, "reject"), serve(tmpdir_env, other, "reject") as second:
        port = second.output[0].rsplit(":", 1)[1].split("/")[0]
        async with bridge(tmpdir_env, workspace, "--port", port) as session:
            listing = text_of(await session.call_tool("list_files", {}))
        async with bridge(tmpdir_env, other, "--port", "1") as session:
            missing = await session.call_tool("list_files", {})
    assert listing == "b.txt"
    assert missing.is_error and "port 1" in text_of(missing)


async def test_a_disabled_tool_is_not_offered(tmpdir_env: str, workspace: str) -> None:
    with serve(tmpdir_env, workspace, "accept", "--disable-tool", "write_file", "--disable-tool", "ask_gemini"):
        async with bridge(tmpdir_env, workspace) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            result = await session.call_tool("write_file", {"path": "x.txt", "content": "x"})
    assert names == {"list_files", "read_file", "get_diagnostics"}
    assert result.is_error and not os.path.exists(os.path.join(workspace, "x.txt"))
