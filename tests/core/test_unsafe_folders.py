"""A discovery or lock folder another user owns (or can replace) is refused (issue #24, 5).

Its owner could rename their own file over ours: the agent would then connect to their server, see
every proposal and answer it. Nothing token-bearing is written there, the window's other agent keeps
working, and the refusal says which folder, whose it is, and what to do. The tests run as root (the
suite's machines) or as any user who may chown to "nobody"; elsewhere they are skipped.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from companion import doctor
from companion.claude_ide import lockfile
from companion.core.system import token_files
from companion.gemini_ide import discovery
from companion.runtime import Runtime
from tests.claude_client import ClaudeClient
from tests.mcp_client import connect
from tests.scripted_editor import ScriptedEditor
from tests.serve_process import ROOT, ServeProcess

NOBODY = 65534
pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() != 0, reason="needs POSIX owners and chown to another user (root)"
)


def theirs(path: Path, mode: int = 0o755) -> Path:
    """A folder of another user ("nobody"), with `mode`."""
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)
    return path


def everything_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("mode", [0o755, 0o777, 0o1777])
def test_a_discovery_folder_of_another_user_is_refused_and_nothing_is_written(tmp_path: Path, mode: int) -> None:
    folder = theirs(tmp_path / "gemini" / "ide", mode)
    with pytest.raises(token_files.FolderRefused) as refused:
        discovery.write(1, 2, ["/w"], "secret-token", str(folder))
    assert everything_under(folder) == []
    message = str(refused.value)
    assert str(folder) in message and "nobody (uid 65534)" in message
    assert "Remove that folder" in message and "TMPDIR" in message
    assert stat.S_IMODE(os.stat(folder).st_mode) == mode  # not ours to narrow


def test_a_parent_of_another_user_is_refused_before_anything_is_created_in_it(tmp_path: Path) -> None:
    """`<tmp>/gemini` is theirs (and open to all): they could rename our `ide` away and put theirs."""
    parent = theirs(tmp_path / "gemini", 0o777)
    with pytest.raises(token_files.FolderRefused, match="nobody"):
        discovery.write(1, 2, ["/w"], "secret-token", str(parent / "ide"))
    assert everything_under(parent) == []


def test_a_lock_folder_that_links_to_another_users_folder_is_refused(tmp_path: Path) -> None:
    target = theirs(tmp_path / "elsewhere", 0o777)
    config = tmp_path / "claude-config"
    config.mkdir()
    (config / "ide").symlink_to(target)
    with pytest.raises(token_files.FolderRefused) as refused:
        lockfile.write(1, 2, ["/w"], "secret-token", str(config / "ide"))
    assert everything_under(target) == []
    message = str(refused.value)
    assert f"a link to {target}" in message and "nobody (uid 65534)" in message
    assert "CLAUDE_CONFIG_DIR" in message and "Remove that folder" in message


def test_a_parent_open_to_every_user_without_the_sticky_bit_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # ours, but anyone may rename what is in it
    with pytest.raises(token_files.FolderRefused, match="writable by every user"):
        lockfile.write(1, 2, ["/w"], "secret-token", str(shared / "ide"))
    assert everything_under(shared) == []


def test_an_open_folder_of_ours_is_narrowed_and_used(tmp_path: Path) -> None:
    folder = tmp_path / "ide"
    folder.mkdir()
    os.chmod(folder, 0o777)
    path = lockfile.write(1, 2, ["/w"], "secret-token", str(folder))
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and os.path.exists(path)


def test_a_refused_discovery_folder_keeps_claude_code_served(tmp_path: Path) -> None:
    folder = theirs(tmp_path / "tmp" / "gemini" / "ide", 0o777)
    lock_dir = tmp_path / "claude" / "ide"
    runtime = Runtime(discovery_directory=str(folder), lock_directory=str(lock_dir))
    try:
        handle = runtime.open_window(ScriptedEditor(), [str(tmp_path)], claude=True)
        handle.ready.result(30)
        assert handle.discovery_path == "" and everything_under(folder) == []
        assert "Refused to write the discovery file" in handle.discovery_problem
        assert handle.lock_path and os.path.exists(handle.lock_path)
        client = runtime.submit(lambda: ClaudeClient.connect(handle.port, handle.claude_token)).result(30)
        runtime.submit(client.close).result(30)
    finally:
        runtime.stop()


def test_a_refused_lock_folder_keeps_gemini_served(tmp_path: Path) -> None:
    lock_dir = theirs(tmp_path / "claude" / "ide", 0o777)
    runtime = Runtime(discovery_directory=str(tmp_path / "discovery"), lock_directory=str(lock_dir))
    try:
        handle = runtime.open_window(ScriptedEditor(), [str(tmp_path)], claude=True)
        handle.ready.result(30)
        assert handle.lock_path == "" and handle.lock_refused and everything_under(lock_dir) == []
        assert "Refused to write Claude Code's lock file" in handle.lock_problem
        assert os.path.exists(handle.discovery_path)

        async def gemini_connects() -> None:
            async with connect(handle.url, handle.token) as client:
                await client.wait_for("ide/contextUpdate")

        runtime.submit(gemini_connects).result(30)
    finally:
        runtime.stop()


def test_a_folder_that_turns_unsafe_takes_our_file_back_out(tmp_path: Path) -> None:
    lock_dir = tmp_path / "claude" / "ide"
    runtime = Runtime(discovery_directory=str(tmp_path / "discovery"), lock_directory=str(lock_dir))
    try:
        handle = runtime.open_window(ScriptedEditor(), [str(tmp_path)], claude=True)
        handle.ready.result(30)
        written = handle.lock_path
        os.chown(lock_dir, NOBODY, NOBODY)  # handed to another user while the window is open
        handle.set_folders([str(tmp_path / "other")]).result(30)
        assert handle.lock_path == "" and handle.lock_refused and not os.path.exists(written)
    finally:
        runtime.stop()


def test_the_doctor_shows_the_refusal_instead_of_a_missing_file() -> None:
    facts = doctor.Facts(
        build="4213",
        platform="linux x64",
        python="3.14",
        server_state="listening",
        url="http://127.0.0.1:1/mcp",
        discovery=doctor.DiscoveryCheck(""),
        workspace_path="/w",
        clients=[],
        paused=False,
        last_context=[],
        libraries=doctor.library_versions(),
        terminus_installed=True,
        discovery_problem="Refused to write the discovery file in /tmp/gemini/ide: it belongs to nobody (uid 65534)",
    )
    found = doctor.problems(facts)
    assert any(p.startswith("Refused to write the discovery file in /tmp/gemini/ide") for p in found)
    assert not any("discovery file is missing" in p for p in found)


def test_serve_says_which_agent_cannot_find_it_and_why(tmp_path: Path) -> None:
    theirs(tmp_path / "tmp" / "gemini", 0o777)
    theirs(tmp_path / "claude", 0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {
        **os.environ,
        "TMPDIR": str(tmp_path / "tmp"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "PYTHONPATH": ROOT,
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "companion", "serve", "--workspace", str(workspace), "--diff-policy", "reject"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    server = ServeProcess(process)
    try:
        gemini = server.expect("warning: Gemini CLI cannot find this companion")
        assert f"{tmp_path / 'tmp' / 'gemini'} above it belongs to nobody (uid 65534)" in gemini
        assert "TMPDIR" in gemini
        claude = server.expect("warning: Claude Code cannot find this companion")
        assert f"{tmp_path / 'claude' / 'ide'}" in claude and "CLAUDE_CONFIG_DIR" in claude
    finally:
        server.stop()
    assert everything_under(tmp_path / "tmp" / "gemini") == [] and everything_under(tmp_path / "claude") == []
    output = "".join(server.output)
    assert "Discovery file:" not in output
    # In serve's words (no package to reload), each said once (the runtime's log said it again).
    assert "reload the package" not in output and "Sublime Text" not in output, output
    assert output.count("Refused to write the discovery file") == 1, output
    assert output.count("Refused to write Claude Code's lock file") == 1, output
