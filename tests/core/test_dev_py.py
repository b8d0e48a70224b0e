"""`python3 dev.py`, the contributor's front door: every `companion` subcommand through it, and a
`kill` (SIGTERM, as CI or a process manager sends it) ends the whole tree it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.serve_process import ROOT, ServeProcess

DEV_PY = os.path.join(ROOT, "dev.py")
SCRIPTED_AGENT = os.path.join(ROOT, "tests", "acp", "scripted_agent.py")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="dev.py execs on POSIX; Windows has no SIGTERM tree")


def start(argv: list[str], tmp_path: str, stdin: int = subprocess.DEVNULL) -> ServeProcess:
    """`python3 dev.py ARGV` in a session of its own: a signal sent to it reaches only that process,
    not a process group, as `kill PID` does."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, DEV_PY, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=stdin,
        text=True,
        env=env,
        start_new_session=True,
    )
    return ServeProcess(process)


def assert_tree_gone(tree: list[psutil.Process], server: ServeProcess) -> None:
    _gone, alive = psutil.wait_procs(tree, timeout=5)
    for process in alive:
        process.kill()
    assert not alive, f"still running 5 s after SIGTERM: {alive}; output: {''.join(server.output)}"


@posix_only
def test_sigterm_to_dev_py_serve_stops_the_server_and_removes_its_discovery_file(tmp_path: str) -> None:
    from companion.gemini_ide.discovery import discovery_dir

    workspace = os.path.join(str(tmp_path), "project")
    os.mkdir(workspace)
    server = start(["serve", "--workspace", workspace, "--diff-policy", "reject"], tmp_path)
    try:
        server.expect("Discovery file:", timeout=300)  # the first run may install the runtime pins
        directory = discovery_dir({"TMPDIR": str(tmp_path)})
        assert os.listdir(directory)
        top = psutil.Process(server.process.pid)
        tree = [top, *top.children(recursive=True)]
        os.kill(server.process.pid, signal.SIGTERM)
        assert_tree_gone(tree, server)
        assert os.listdir(directory) == [], "".join(server.output)
    finally:
        server.stop()


@posix_only
def test_sigterm_to_dev_py_chat_stops_the_chat_and_its_agent(tmp_path: str) -> None:
    """The agent never answers (the chat is waiting for it): SIGTERM ends the chat and the agent."""
    workspace = os.path.join(str(tmp_path), "project")
    os.mkdir(workspace)
    pid_file = os.path.join(str(tmp_path), "agent.pid")
    agent = [sys.executable, SCRIPTED_AGENT, "garbage-only", pid_file]
    server = start(["chat", "--workspace", workspace, "--prompt", "hi", "--", *agent], tmp_path)
    try:
        deadline = time.monotonic() + 300  # the first run may install the runtime pins
        while not os.path.exists(pid_file) or not os.path.getsize(pid_file):
            assert time.monotonic() < deadline and server.process.poll() is None, "".join(server.output)
            time.sleep(0.01)
        with open(pid_file) as handle:
            agent_pid = int(handle.read())
        top = psutil.Process(server.process.pid)
        tree = [top, *top.children(recursive=True)]
        assert agent_pid in {process.pid for process in tree}
        os.kill(server.process.pid, signal.SIGTERM)
        assert_tree_gone(tree, server)
    finally:
        server.stop()


@pytest.mark.parametrize("command", ["changes", "bridge", "serve", "chat"])
def test_dev_py_runs_every_companion_subcommand(command: str) -> None:
    """`dev.py COMMAND --help` is the companion's own help: the command reached the companion."""
    result = subprocess.run([sys.executable, DEV_PY, command, "--help"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"companion {command}" in result.stdout, result.stdout
