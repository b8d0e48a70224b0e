"""`python -m companion serve`: what a user sees in a terminal, and that Ctrl-C cleans up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from companion.discovery import discovery_dir
from tests.mcp_client import connect
from tests.serve_process import ServeProcess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextmanager
def serve(
    tmp_path: str, workspace: str | None, policy: str, stdin: bool = False, cwd: str | None = None
) -> Iterator[ServeProcess]:
    """`python -m companion serve` on `workspace`, or with no --workspace (then in `cwd`)."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}
    folder = ["--workspace", workspace] if workspace is not None else []
    process = subprocess.Popen(
        [sys.executable, "-m", "companion", "serve", *folder, "--diff-policy", policy],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
    )
    server = ServeProcess(process)
    try:
        yield server
    finally:
        server.stop()


def endpoint(tmp_path: str) -> tuple[str, str, str]:
    directory = discovery_dir({"TMPDIR": str(tmp_path)})
    (name,) = os.listdir(directory)
    path = os.path.join(directory, name)
    with open(path) as f:
        payload = json.load(f)
    return path, f"http://127.0.0.1:{payload['port']}/mcp", payload["authToken"]


def test_serve_without_a_workspace_serves_the_current_folder(tmp_path: str, workspace: str) -> None:
    """README's first command: `python3 dev.py serve` in a project folder."""
    with serve(tmp_path, None, "reject", cwd=workspace) as server:
        server.expect("Discovery file:")
        path, _url, _token = endpoint(tmp_path)
        with open(path) as f:
            assert json.load(f)["workspacePath"] == os.path.realpath(workspace)


@pytest.mark.skipif(sys.platform == "win32", reason="Ctrl-C to a process group is POSIX here")
def test_the_readme_serve_command_serves_the_current_folder_until_ctrl_c(tmp_path: str, workspace: str) -> None:
    """`python3 dev.py serve` as the README gives it, in a project folder; Ctrl-C reaches the whole
    foreground process group, as a terminal sends it."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "dev.py"), "serve", "--diff-policy", "reject"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=workspace,
        start_new_session=True,
    )
    server = ServeProcess(process)
    try:
        server.expect("Discovery file:", timeout=300)  # the first run may install the runtime pins
        path, _url, _token = endpoint(tmp_path)
        with open(path) as f:
            assert json.load(f)["workspacePath"] == os.path.realpath(workspace)
        os.killpg(process.pid, signal.SIGINT)
        server.expect("the discovery file was removed")
        assert process.wait(30) == 0, "".join(server.output)
    finally:
        server.stop()
    assert not os.path.exists(path)
    assert "Traceback" not in "".join(server.output), "".join(server.output)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")
def test_serve_says_where_it_listens_and_ctrl_c_removes_the_discovery_file(tmp_path: str, workspace: str) -> None:
    with serve(tmp_path, workspace, "reject") as server:
        url_line = server.expect("listening on http://127.0.0.1:")
        server.expect("Discovery file:")
        path, url, token = endpoint(tmp_path)
        assert url in url_line and token not in "".join(server.output)
        with open(path) as f:
            assert json.load(f)["workspacePath"] == os.path.realpath(workspace)
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(15) == 0
        server.expect("Stopped")
    assert not os.path.exists(path)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")
def test_ctrl_c_the_moment_the_discovery_file_appears_still_cleans_up(tmp_path: str, workspace: str) -> None:
    """Ctrl-C while the runner is still starting (file written, banner not yet printed) must not leave
    the discovery file behind for Gemini CLI to find."""
    directory = discovery_dir({"TMPDIR": str(tmp_path)})
    with serve(tmp_path, workspace, "reject") as server:
        deadline = time.monotonic() + 30
        while not (os.path.isdir(directory) and os.listdir(directory)):
            assert time.monotonic() < deadline and server.process.poll() is None, "".join(server.output)
            time.sleep(0.001)
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(15) == 0, "".join(server.output)
    assert os.listdir(directory) == []


def test_serve_refuses_a_missing_folder_with_advice(tmp_path: str) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": ROOT}
    done = subprocess.run(
        [sys.executable, "-m", "companion", "serve", "--workspace", os.path.join(str(tmp_path), "nope")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2 and "--workspace" in done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize(("answer", "method"), [("y", "ide/diffAccepted"), ("n", "ide/diffRejected")])
async def test_prompt_mode_shows_a_unified_diff_and_the_answer_decides(
    tmp_path: str, workspace: str, answer: str, method: str
) -> None:
    target = os.path.join(workspace, "hello.txt")
    with open(target, "w") as f:
        f.write("hello\n")
    with serve(tmp_path, workspace, "prompt", stdin=True) as server:
        await anyio.to_thread.run_sync(server.expect, "Discovery file:")
        _, url, token = endpoint(tmp_path)
        async with connect(url, token) as client:
            await client.open_diff(target, "hello\nworld\n")
            await anyio.to_thread.run_sync(server.expect, "+world")
            assert server.process.stdin is not None
            server.process.stdin.write(answer + "\n")
            server.process.stdin.flush()
            outcome = await client.wait_for(method)
    assert outcome["filePath"] == target
    assert "Apply this change" in "".join(server.output)
    with open(target) as f:
        assert f.read() == "hello\n"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("accept", ("ide/diffAccepted", {"filePath": "/w/policy.txt", "content": "proposed\n"})),
        ("reject", ("ide/diffRejected", {"filePath": "/w/policy.txt"})),
    ],
)
async def test_the_diff_policy_decides_every_review_whatever_the_content_says(
    discovery_dir: str, policy: str, expected: tuple[str, dict[str, str]]
) -> None:
    from companion.headless import HeadlessEditor
    from companion.runtime import Runtime

    runtime = Runtime(discovery_directory=discovery_dir)
    try:
        handle = runtime.open_window(HeadlessEditor(policy), [])
        handle.ready.result(30)
        async with connect(handle.url, handle.token) as client:
            result = await client.open_diff("/w/policy.txt", "proposed\n")
            assert result.content == [] and not result.is_error
            method, params = expected
            assert await client.wait_for(method) == params
            # A proposal that asks for the other outcome changes nothing: only the policy decides.
            await client.open_diff("/w/policy.txt", "reject this\n" if policy == "accept" else "accept this\n")
            with anyio.fail_after(20):
                while len(client.of(method)) < 2:
                    await anyio.sleep(0.01)
            await anyio.sleep(0.2)
        assert client.of("ide/diffRejected" if policy == "accept" else "ide/diffAccepted") == []
    finally:
        runtime.stop()
