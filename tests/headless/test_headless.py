"""`python -m companion serve`: what a user sees in a terminal, and that Ctrl-C cleans up."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio
import pytest

from companion.gemini_ide.discovery import discovery_dir
from companion.headless.editor import HeadlessEditor
from companion.runtime import Runtime, WindowHandle
from tests.mcp_client import connect
from tests.serve_process import ROOT, ServeProcess, endpoint, serve


@contextmanager
def window_of(editor: HeadlessEditor, discovery_dir: str) -> Iterator[WindowHandle]:
    """A runtime with one window server (no folder) answered by `editor`; stopped afterwards."""
    runtime = Runtime(discovery_directory=discovery_dir)
    try:
        handle = runtime.open_window(editor, [])
        handle.ready.result(30)
        yield handle
    finally:
        runtime.stop()


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
        server.expect("Stopped; the discovery file and the lock file were removed.")
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
    from companion.headless.editor import HeadlessEditor
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


@pytest.mark.anyio
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP", "SIGQUIT"])
async def test_a_stop_signal_during_a_prompt_exits_cleanly_and_removes_the_discovery_file(
    tmp_path: str, workspace: str, signal_name: str
) -> None:
    """The prompt thread is blocked reading a piped stdin: the process still ends with code 0,
    without Python's fatal stdin error, and the discovery file is gone (closing the terminal is SIGHUP)."""
    target = os.path.join(workspace, "wait.txt")
    with serve(tmp_path, workspace, "prompt", stdin=True) as server:
        await anyio.to_thread.run_sync(server.expect, "Discovery file:")
        discovery, url, token = endpoint(tmp_path)
        async with connect(url, token) as client:
            await client.open_diff(target, "text\n")
            await anyio.to_thread.run_sync(server.expect, "+text")
            server.process.send_signal(getattr(signal, signal_name))
            code = await anyio.to_thread.run_sync(lambda: server.process.wait(30))
    output = "".join(server.output)
    assert code == 0, output
    assert "Fatal Python error" not in output and "Traceback" not in output, output
    assert "Stopped; the discovery file and the lock file were removed." in output
    assert not os.path.exists(discovery)


class Terminal:
    """The prompt's terminal: what was printed, and answers the test gives when asked."""

    def __init__(self) -> None:
        self.printed: list[str] = []
        self.questions: list[str] = []
        self.answers: queue.Queue[str] = queue.Queue()

    def write(self, text: str) -> None:
        self.printed.append(text)

    def flush(self) -> None:
        pass

    def ask(self, question: str) -> str:
        self.questions.append(question)
        return self.answers.get(timeout=60)


def settle_until(predicate: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.anyio
async def test_one_prompter_asks_in_order_and_close_diff_drops_waiting_reviews(discovery_dir: str) -> None:
    """2 000 pending reviews used to hold 2 000 threads and every proposal forever."""
    terminal = Terminal()
    editor = HeadlessEditor("prompt", out=terminal, ask=terminal.ask)  # type: ignore[arg-type]
    threads_before = threading.active_count()
    with window_of(editor, discovery_dir) as handle:
        async with connect(handle.url, handle.token) as client:
            paths = [f"/w/file{i}.txt" for i in range(200)]
            for path in paths:
                await client.open_diff(path, f"{path}\n")
            await anyio.to_thread.run_sync(settle_until, lambda: len(editor.shown) == 200 and terminal.questions)
            assert [t.name for t in threading.enumerate()].count("companion-prompt") == 1
            # The loop and the test's own workers: not one thread per review.
            assert threading.active_count() < threads_before + 16
            assert terminal.questions == [f"Apply this change to {paths[0]}? [y]es / [n]o: "]
            for path in paths[1:150]:  # closed while waiting their turn: never asked, not kept
                await client.close_diff(path)
            assert [r.file_path for r in editor.shown] == [paths[0], *paths[150:]]
            terminal.answers.put("y")
            assert (await client.wait_for("ide/diffAccepted"))["filePath"] == paths[0]
            await anyio.to_thread.run_sync(settle_until, lambda: len(terminal.questions) == 2)
            assert paths[150] in terminal.questions[1]
            for _ in paths[150:]:
                terminal.answers.put("n")
            await anyio.to_thread.run_sync(settle_until, lambda: len(client.of("ide/diffRejected")) == 50)
            assert [p["filePath"] for p in client.of("ide/diffRejected")] == paths[150:]
        assert editor.shown == []


@pytest.mark.anyio
async def test_a_newer_proposal_during_the_prompt_is_shown_before_it_can_be_approved(discovery_dir: str) -> None:
    terminal = Terminal()
    editor = HeadlessEditor("prompt", out=terminal, ask=terminal.ask)  # type: ignore[arg-type]
    with window_of(editor, discovery_dir) as handle:
        async with connect(handle.url, handle.token) as client:
            await client.open_diff("/w/a.txt", "first\n")
            await anyio.to_thread.run_sync(settle_until, lambda: len(terminal.questions) == 1)
            await client.open_diff("/w/a.txt", "second\n")
            terminal.answers.put("y")  # answers the question asked about "first"
            await anyio.to_thread.run_sync(settle_until, lambda: len(terminal.questions) == 2)
            assert "+second" in "".join(terminal.printed)
            assert client.of("ide/diffAccepted") == []  # not approved until seen
            terminal.answers.put("y")
            assert await client.wait_for("ide/diffAccepted") == {"filePath": "/w/a.txt", "content": "second\n"}


@pytest.mark.anyio
@pytest.mark.parametrize("policy", ["accept", "reject"])
async def test_decided_reviews_are_not_kept(discovery_dir: str, policy: str) -> None:
    editor = HeadlessEditor(policy)
    with window_of(editor, discovery_dir) as handle:
        async with connect(handle.url, handle.token) as client:
            for i in range(20):
                await client.open_diff(f"/w/{i}.txt", "x" * 100_000)
        assert editor.shown == []


@pytest.mark.parametrize("port", ["99999", "-1", "eighty"])
def test_a_port_out_of_range_is_named_with_the_valid_range(port: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "companion", "serve", "--port", port],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert result.returncode == 2
    assert "give a port from 1 to 65535" in result.stderr or "give one from 1 to 65535" in result.stderr, result.stderr
    assert "usage: python -m companion" in result.stderr  # the name it was run as


@pytest.mark.parametrize(("argv", "code", "says"), [(["bogus"], 2, "unknown command 'bogus'"), (["--help"], 0, "")])
def test_dev_py_names_an_unknown_command_and_help_succeeds(argv: list[str], code: int, says: str) -> None:
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "dev.py"), *argv], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == code
    assert says in result.stderr
    assert "python3 dev.py serve" in result.stdout + result.stderr


@pytest.mark.parametrize(("command", "says"), [("serve", "could not start"), ("bridge", "cannot start")])
def test_a_python_without_the_libraries_gets_one_line_with_the_fix(tmp_path: str, command: str, says: str) -> None:
    """-I -S: no site-packages, only this repository on the path."""
    argv = [command, "--workspace", str(tmp_path)]
    code = f"import sys; sys.path.insert(0, {ROOT!r}); from companion.cli import main; sys.exit(main({argv!r}))"
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert says in lines[0] and "is missing from this Python" in lines[0] and "python3 dev.py serve" in lines[0]


def test_a_port_in_use_is_named_with_the_flag_that_fixes_it(tmp_path: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "companion", "serve", "--port", str(port), "--workspace", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(tmp_path)},
        )
    assert result.returncode == 1
    assert f"port {port} is already in use; pass another --port" in result.stderr, result.stderr


def test_serve_refuses_an_empty_workspace_instead_of_serving_the_current_folder(tmp_path: str) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": ROOT}
    done = subprocess.run(
        [sys.executable, "-m", "companion", "serve", "--workspace", ""],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=str(tmp_path),
    )
    assert done.returncode == 2
    assert done.stderr == (
        "error: --workspace is empty; give the folder to serve, or leave --workspace out to serve the current one.\n"
    )
    assert not os.path.exists(discovery_dir({"TMPDIR": str(tmp_path)}))


def test_a_second_serve_on_the_same_folder_is_warned_about(tmp_path: str, workspace: str) -> None:
    with serve(tmp_path, workspace, "reject") as first:
        first.expect("Discovery file:")
        pid = first.process.pid
        with serve(tmp_path, workspace, "reject") as second:
            warning = second.expect("warning: another companion")
            second.expect("Discovery file:")
    assert f"(PID {pid}, port " in warning and os.path.realpath(workspace) in warning
    assert "warning" not in "".join(first.output)


@pytest.mark.anyio
@pytest.mark.parametrize(("policy", "done"), [("accept", "accepted"), ("reject", "rejected")])
async def test_serve_says_what_its_diff_policy_decided_one_line_each(
    tmp_path: str, workspace: str, policy: str, done: str
) -> None:
    target = os.path.join(workspace, "hello.txt")
    with serve(tmp_path, workspace, policy) as server:
        await anyio.to_thread.run_sync(server.expect, "Discovery file:")
        _, url, token = endpoint(tmp_path)
        async with connect(url, token) as client:
            await client.open_diff(target, "hello\n")
            await client.wait_for("ide/diffAccepted" if policy == "accept" else "ide/diffRejected")
            line = await anyio.to_thread.run_sync(server.expect, f"{done} the change")
    assert line == f"{done} the change to {target} (--diff-policy {policy})\n"


@pytest.mark.skipif(sys.platform == "win32", reason="folder modes are POSIX")
def test_an_unsafe_temporary_folder_is_one_warning_in_serve_words(tmp_path: str, workspace: str) -> None:
    """A TMPDIR every user can write to (no sticky bit): the discovery file is refused, said once."""
    open_folder = os.path.join(str(tmp_path), "open")
    os.mkdir(open_folder)
    os.chmod(open_folder, 0o777)
    with serve(open_folder, workspace, "reject") as server:
        server.expect("Press Ctrl-C to stop.")
        server.process.send_signal(signal.SIGINT)
        server.process.wait(15)
    output = "".join(server.output)
    assert output.count("Refused to write the discovery file") == 1, output
    warning = next(line for line in server.output if "Refused to write the discovery file" in line)
    assert warning.startswith("warning: Gemini CLI cannot find this companion: ")
    assert "reload the package" not in warning and warning.endswith("then start `serve` again.\n")
