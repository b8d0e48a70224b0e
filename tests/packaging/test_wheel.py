"""`pip install` of this repository, for the stdio bridge and the headless companion outside Sublime
(Claude Desktop configurations can point at the `gemini-companion` console script): the wheel
carries every module they need, and the installed script serves a folder and bridges a window."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from dataclasses import dataclass

import mcp_types as types
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from companion.gemini_ide.discovery import discovery_dir
from companion.headless.editor import HeadlessEditor
from companion.mcp_tools.factory import tool_factory
from companion.mcp_tools.settings import WorkspaceToolSettings
from companion.runtime import Runtime
from tests.serve_process import ServeProcess
from tools import libraries as L

TOOLS = WorkspaceToolSettings()

SUBLIME_ONLY = os.path.join("companion", "sublime_editor")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The wheel built from a copy of the sources (a build in the checkout would leave build/ and
    egg-info behind)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(os.path.join(L.ROOT, name), source)
    shutil.copytree(
        os.path.join(L.ROOT, "companion"), source / "companion", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(source)]
    result = subprocess.run(build, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "License classifiers are deprecated" not in result.stderr and "license` as a TOML table" not in result.stderr
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
    assert "companion/mcp_tools/tools.py" in expected
    assert packed == expected


def test_the_wheel_carries_the_mit_licence(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
        licences = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licences, names
        assert archive.read(licences[0]).decode().startswith("MIT License")
    assert "License-Expression: MIT" in text


@dataclass
class Installed:
    script: str  # the gemini-companion console script
    env: dict[str, str]  # only the installed copy of the package is importable, not the checkout
    tmpdir: str


@pytest.fixture
def installed(wheel: str, tmp_path: str) -> Installed:
    """The wheel installed with pip into a fresh folder. The libraries come from the interpreter the
    script names, as after `pip install` into any environment."""
    site = os.path.join(str(tmp_path), "site")
    install = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--target", site]
    result = subprocess.run([*install, wheel], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    scripts = os.path.join(site, "Scripts" if os.name == "nt" else "bin")
    script = os.path.join(scripts, "gemini-companion.exe" if os.name == "nt" else "gemini-companion")
    tmpdir = os.path.join(str(tmp_path), "tmp")
    os.makedirs(tmpdir)
    env = {**os.environ, "PYTHONPATH": site, "TMPDIR": tmpdir, "PYTHONUNBUFFERED": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import companion; print(companion.__file__)"], env=env, cwd=tmpdir, capture_output=True
    )
    assert where.stdout.decode().startswith(site), where
    return Installed(script, env, tmpdir)


def test_the_installed_console_script_names_itself_in_its_help(installed: Installed) -> None:
    result = subprocess.run([installed.script, "--help"], capture_output=True, text=True, env=installed.env, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("usage: gemini-companion"), result.stdout


def test_the_installed_console_script_serves_a_folder(installed: Installed, tmp_path: str) -> None:
    workspace = os.path.join(str(tmp_path), "project")
    os.makedirs(workspace)
    serve = ServeProcess(
        subprocess.Popen(
            [installed.script, "serve", "--workspace", workspace, "--diff-policy", "reject"],
            env=installed.env,
            cwd=installed.tmpdir,
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
            serve.expect("Stopped; the discovery file and the lock file were removed.")
            assert serve.process.wait(15) == 0
            assert not os.path.exists(discovery_file)
    finally:
        serve.stop()


def test_the_installed_console_script_bridges_a_window_for_a_stdio_client(installed: Installed, tmp_path: str) -> None:
    """What a Claude Desktop configuration with `gemini-companion bridge` does: find the window of
    the current folder, then list, read and (approved) write through it."""
    workspace = os.path.realpath(os.path.join(str(tmp_path), "project"))
    os.makedirs(workspace)
    with open(os.path.join(workspace, "hello.txt"), "w") as handle:
        handle.write("hello\n")
    runtime = Runtime(discovery_directory=discovery_dir({"TMPDIR": installed.tmpdir}))
    try:
        window = runtime.open_window(HeadlessEditor("accept"), [workspace], tool_factory=tool_factory(TOOLS))
        window.ready.result(30)
        params = StdioServerParameters(command=installed.script, args=["bridge"], env=installed.env, cwd=workspace)

        async def use_the_bridge() -> list[str]:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                results = [
                    await session.call_tool("list_files", {"recursive": True}),
                    await session.call_tool("read_file", {"path": "hello.txt"}),
                    await session.call_tool("write_file", {"path": "new/made.txt", "content": "made\n"}),
                ]
            texts = ["".join(b.text for b in r.content if isinstance(b, types.TextContent)) for r in results]
            assert not any(r.is_error for r in results), texts
            return texts

        listed, read, written = asyncio.run(use_the_bridge())
    finally:
        runtime.stop()
    assert listed.splitlines() == ["hello.txt"] and read == "hello\n" and written.startswith("Accepted"), written
    with open(os.path.join(workspace, "new", "made.txt")) as handle:
        assert handle.read() == "made\n"
