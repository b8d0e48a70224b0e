"""The headless tools a newcomer meets first: `doctor`, `--version`, and the exit statuses every
`--help` gives (issue 38)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from companion import __version__
from tests.serve_process import ROOT


def companion(*args: str, env: dict[str, str] | None = None, cwd: str = ROOT) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    argv = [sys.executable, "-m", "companion", *args]
    return subprocess.run(argv, env=environment, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_version_names_the_release() -> None:
    result = companion("--version")
    assert (result.returncode, result.stdout) == (0, f"Gemini Companion {__version__}\n")


@pytest.mark.parametrize("command", ["serve", "bridge", "changes", "doctor"])
def test_every_help_gives_the_exit_statuses(command: str) -> None:
    result = companion(command, "--help")
    assert result.returncode == 0, result.stderr
    statuses = result.stdout.split("exit status:\n")[1]
    assert "  0  " in statuses and "  1  " in statuses and "  2  " in statuses


@pytest.fixture
def tools_env(tmp_path: str) -> dict[str, str]:
    """A temporary folder of its own and a PATH with only Python's folder and a stand-in `gemini`."""
    bin_dir = os.path.join(str(tmp_path), "bin")
    os.mkdir(bin_dir)
    gemini = os.path.join(bin_dir, "gemini")
    with open(gemini, "w") as handle:
        handle.write("#!/bin/sh\necho 0.61.0\n")
    os.chmod(gemini, 0o755)
    home = os.path.join(str(tmp_path), "home")
    os.mkdir(home)
    tmpdir = os.path.join(str(tmp_path), "tmp")
    os.mkdir(tmpdir)
    return {"TMPDIR": tmpdir, "PATH": bin_dir, "HOME": home, "GEMINI_CLI_HOME": home}


@pytest.mark.skipif(sys.platform == "win32", reason="folder modes and a /bin/sh stand-in are POSIX")
def test_doctor_reports_an_open_discovery_folder_with_its_fix_then_nothing(
    tmp_path: str, tools_env: dict[str, str]
) -> None:
    folder = os.path.join(tools_env["TMPDIR"], "gemini", "ide")
    os.makedirs(folder, mode=0o755)
    os.chmod(folder, 0o755)
    workspace = str(tmp_path)
    result = companion("doctor", "--workspace", workspace, "--json", env=tools_env)
    assert result.returncode == 1, result.stderr
    facts = json.loads(result.stdout)
    assert facts["discovery_folder"] == folder and facts["discovery_mode"] == "755"
    assert {"name": "gemini", "path": os.path.join(tools_env["PATH"], "gemini"), "version": "0.61.0"} in facts["agents"]
    assert any(f"chmod 700 {folder}" in problem for problem in facts["problems"])
    assert any("trust" in problem for problem in facts["problems"])  # gemini is here and the folder is new to it
    os.chmod(folder, stat.S_IRWXU)
    report = companion("doctor", "--workspace", workspace, env=tools_env)
    assert report.stdout.startswith(f"Gemini Companion {__version__} (headless doctor)\n")
    assert f"- Discovery folder: {folder}: present; owner: you; mode: 700" in report.stdout
    assert f"- gemini: {os.path.join(tools_env['PATH'], 'gemini')} (0.61.0)" in report.stdout
    assert "chmod" not in report.stdout
    assert "Problems and fixes:\n1. Gemini CLI has not been told to trust" in report.stdout


def test_doctor_refuses_a_missing_folder_in_one_line(tmp_path: str) -> None:
    result = companion("doctor", "--workspace", os.path.join(str(tmp_path), "nope"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")


@pytest.mark.skipif(sys.platform == "win32", reason="a /bin/sh stand-in is POSIX (Windows' rule: test_user_paths)")
def test_doctor_in_an_untrusted_clone_never_runs_a_program_planted_there(
    tmp_path: str, tools_env: dict[str, str]
) -> None:
    """The attack: a clone holds its own `node`; doctor, run inside it, must not run it. Windows looks
    in the current folder first; POSIX does for an empty PATH entry, which stands in for it here."""
    clone = os.path.join(str(tmp_path), "clone")
    os.mkdir(clone)
    marker = os.path.join(str(tmp_path), "planted-program-ran")
    planted = os.path.join(clone, "node")
    with open(planted, "w") as handle:
        handle.write(f"#!/bin/sh\ntouch '{marker}'\necho v99.0.0-planted\n")
    os.chmod(planted, 0o755)
    env = {**tools_env, "PATH": os.pathsep + tools_env["PATH"]}
    result = companion("doctor", "--workspace", clone, "--json", env=env, cwd=clone)
    assert not os.path.exists(marker), result.stdout
    assert "planted" not in result.stdout
