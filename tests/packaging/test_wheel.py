"""`pip install` of this repository, for the stdio bridge and the headless companion outside Sublime
(Claude Desktop configurations point at the `gemini-companion` console script): the wheel carries
every module they need, and the installed script serves a folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import zipfile

import pytest

from tests.serve_process import ServeProcess
from tools import libraries as L

SUBLIME_ONLY = os.path.join("companion", "sublime_editor")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The wheel built from a copy of the sources (a build in the checkout would leave build/ and
    egg-info behind)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(os.path.join(L.ROOT, name), source)
    shutil.copytree(
        os.path.join(L.ROOT, "companion"), source / "companion", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(source)]
    result = subprocess.run(build, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = [os.path.join(out, name) for name in os.listdir(out) if name.endswith(".whl")]
    return built


def test_the_wheel_holds_every_module_but_the_sublime_adapter(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        packed = {name for name in archive.namelist() if name.startswith("companion/") and name.endswith(".py")}
    expected = set()
    for folder, subfolders, files in os.walk(os.path.join(L.ROOT, "companion")):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        relative = os.path.relpath(folder, L.ROOT)
        if relative == SUBLIME_ONLY or relative.startswith(SUBLIME_ONLY + os.sep):
            continue
        expected |= {os.path.join(relative, name).replace(os.sep, "/") for name in files if name.endswith(".py")}
    assert "companion/workspace/tools.py" in expected
    assert packed == expected


def test_the_installed_console_script_serves_a_folder_and_offers_the_bridge(wheel: str, tmp_path: str) -> None:
    site = os.path.join(str(tmp_path), "site")
    install = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--target", site]
    result = subprocess.run([*install, wheel], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    scripts = os.path.join(site, "Scripts" if os.name == "nt" else "bin")
    script = os.path.join(scripts, "gemini-companion.exe" if os.name == "nt" else "gemini-companion")
    # Only the installed copy of the package is importable (not the checkout); the libraries come
    # from the interpreter the script names, as after `pip install` into any environment.
    env = {**os.environ, "PYTHONPATH": site, "TMPDIR": str(tmp_path)}
    cwd = str(tmp_path)

    where = subprocess.run(
        [sys.executable, "-c", "import companion; print(companion.__file__)"], env=env, cwd=cwd, capture_output=True
    )
    assert where.stdout.decode().startswith(site), where

    bridge = subprocess.run([script, "bridge", "--help"], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert bridge.returncode == 0, bridge.stderr
    assert "--workspace" in bridge.stdout

    workspace = os.path.join(str(tmp_path), "project")
    os.makedirs(workspace)
    serve = ServeProcess(
        subprocess.Popen(
            [script, "serve", "--workspace", workspace, "--diff-policy", "reject"],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    )
    try:
        serve.expect("listening on http://127.0.0.1:")
        discovery_file = serve.expect("Discovery file:").split(":", 1)[1].strip()
        assert os.path.exists(discovery_file)
        if os.name != "nt":
            serve.process.send_signal(signal.SIGINT)
            serve.expect("the discovery file was removed")
            assert serve.process.wait(15) == 0
            assert not os.path.exists(discovery_file)
    finally:
        serve.stop()
