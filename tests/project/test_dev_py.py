"""`python3 dev.py`, the contributor's front door: every `companion` subcommand through it, and a
`kill` (SIGTERM, as CI or a process manager sends it) ends the whole tree it started."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from types import ModuleType

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


# -- `dev.py test`: the plan first, a question before a system change, Ctrl-C, the shared root --


def load_dev_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_py_under_test", DEV_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plan_names_each_system_change_and_changes_nothing(tmp_path: str) -> None:
    dev = load_dev_py()
    if dev.find_python(exactly=(3, 14), required=False) or dev._why_no_debian_root():
        pytest.skip("no Debian root would be built on this machine: the plan has no system change to name")
    root = os.path.join(str(tmp_path), "py314")
    env = {**os.environ, "PY314_ROOT": root}
    result = subprocess.run(
        [sys.executable, DEV_PY, "test", "--plan"], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "dev.py test will run:"
    assert any("ruff and pyright" in line for line in lines) and any("Python 3.10" in line for line in lines)
    changes = lines[lines.index("system changes (as root):") + 1 :]
    expected = ["build a Debian unstable root", "bind-mount /proc, /sys, /dev, /dev/pts"]
    if not shutil.which("debootstrap"):
        expected.insert(0, "apt-get install debootstrap")
    assert [next(e for e in expected if e in line) for line in changes] == expected, result.stdout
    assert not os.path.exists(root) and not os.path.exists(root + ".lock")


def test_a_system_change_is_asked_about_on_a_terminal_and_refused_by_default() -> None:
    dev = load_dev_py()
    plan = dev.Plan()
    plan.system_changes.append("apt-get install debootstrap")
    master, slave = os.openpty()
    with open(slave, encoding="utf-8") as terminal:
        os.write(master, b"\n")  # Enter: the default, no
        assert dev.go_ahead(plan, yes=False, stdin=terminal, env={}) is False
        os.write(master, b"y\n")
        assert dev.go_ahead(plan, yes=False, stdin=terminal, env={}) is True
        assert dev.go_ahead(plan, yes=True, stdin=terminal, env={}) is True  # --yes: nothing read
        assert dev.go_ahead(plan, yes=False, stdin=terminal, env={"CI": "true"}) is True
    os.close(master)
    read_end, write_end = os.pipe()
    with open(read_end, encoding="utf-8") as pipe:  # no terminal (CI): the printed plan was the notice
        assert dev.go_ahead(plan, yes=False, stdin=pipe, env={}) is True
    os.close(write_end)


def test_targeted_runs_install_node_clients_only_for_tests_that_use_them() -> None:
    dev = load_dev_py()
    assert not dev.needs_node(["tests/project/test_dev_py.py", "-x"])
    assert not dev.needs_node(
        ["tests/project/test_dev_py.py::test_targeted_runs_install_node_clients_only_for_tests_that_use_them"]
    )
    assert dev.needs_node(["tests/acp/test_terminal_chat.py"])  # its conftest starts the real agents
    assert dev.needs_node(["tests/mcp_tools/test_windows_shim.py"])
    assert dev.needs_node([]) and dev.needs_node(["-k", "chat"])  # no path: the whole suite


@posix_only
def test_ctrl_c_in_a_test_run_prints_one_line_and_no_traceback(tmp_path: str) -> None:
    test_file = os.path.join(str(tmp_path), "test_waits.py")
    with open(test_file, "w") as handle:
        handle.write(
            "import threading\n\ndef test_waits():\n    print('started', flush=True)\n    threading.Event().wait()\n"
        )
    run = start(["test", test_file, "-s", "-p", "no:cacheprovider"], tmp_path)
    try:
        run.expect("started", timeout=120)
        os.killpg(run.process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the foreground group
        assert run.process.wait(30) == 130
    finally:
        run.stop()
    output = "".join(run.output)
    assert "Traceback" not in output, output
    assert output.count("dev.py test: interrupted (Ctrl-C)") == 1, output


@posix_only
def test_a_second_run_waits_for_the_python_314_root_and_says_so(tmp_path: str) -> None:
    dev = load_dev_py()
    dev.PY314_ROOT = os.path.join(str(tmp_path), "py314")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, dev.PY314_ROOT + ".lock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    said = threading.Event()

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            said.set()
            return super().write(text)

    out = Out()
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"

        def second_run() -> None:
            with dev.debian_root_lock(out):
                pass

        waiting = threading.Thread(target=second_run)
        waiting.start()
        assert said.wait(30)
        assert waiting.is_alive()  # it waits while the first run holds the root
        assert "Another `dev.py test` is using the Python 3.14 root" in out.getvalue()
        assert "PY314_ROOT" in out.getvalue()
    finally:
        holder.communicate(b"")  # the first run ends
    waiting.join(30)
    assert not waiting.is_alive()


HOLD_LOCK = """import fcntl, sys
with open(sys.argv[1], "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
"""
