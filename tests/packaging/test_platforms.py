"""The window server starts on each platform's plugin host with the libraries Package Control
installs there, and the import trace of that start-up is what dependencies.json lists.

Each platform is simulated by `simulated_host.py` (read its docstring for what is real and what is a
stand-in): this machine's wheels of the whole metadata closure sit in one folder laid out as
`Data/Lib/python314`, plus, for Windows, the real pywin32 Windows wheel unpacked as Package Control
unpacks it (`win32/`, `win32/lib/`, `pywin32_system32/`, `pywin32.pth`). The server starts through
the runtime, as the plugin host starts it, and answers an authenticated `initialize`. Then the first
chat loads the ACP SDK (never before it), and on this machine's OS a turn with the scripted agent ends.

Because the folder holds the *whole* Requires-Dist closure, a library imported on some code path
is loaded whether or not dependencies.json lists it, and one that is listed but never imported shows
up as not loaded: the closure is measured, not reasoned.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from tests.acp.scripted_agent import REPLY
from tests.packaging.conftest import REPO, pinned_requirements, pip_install_target
from tools import dev_install
from tools import libraries as L

HOST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simulated_host.py")
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def unused_requirements() -> list[str]:
    """The libraries of the metadata closure dependencies.json leaves out, at our pins."""
    pins = L.runtime_pins()
    return [f"{name}=={pins[L.canonical(name)]}" for name in L.NOT_IMPORTED]


def download_pywin32(folder: str) -> str:
    """The pinned pywin32 Windows wheel for the Python running the tests (pywintypes.py loads the
    DLL named after the running version, so the wheel must match it)."""
    tag = PYTHON.replace(".", "")
    command = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
        "--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp", "--abi", f"cp{tag}",
        "--platform", "win_amd64", "--dest", folder, f"pywin32=={L.runtime_pins()['pywin32']}",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        try:
            L.check_reachable()
        except L.Unreachable as exc:
            pytest.skip(f"pip could not download pywin32 and PyPI is unreachable: {exc}")
        pytest.fail(f"pip download pywin32 failed although PyPI is reachable:\n{result.stderr}")
    return next(os.path.join(folder, n) for n in os.listdir(folder) if n.startswith("pywin32-"))


@pytest.fixture(scope="session")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """'full': the whole metadata closure; 'windows': the same plus pywin32 as Package Control
    unpacks it; 'listed-windows': only what main's dependencies.json listed before pywin32 (the
    state Windows users were in)."""
    root = tmp_path_factory.mktemp("platform-libs")
    full = str(root / "full")
    pip_install_target(full, pinned_requirements() + unused_requirements())
    windows = str(root / "windows")
    shutil.copytree(full, windows)
    wheels = str(root / "wheels")
    os.makedirs(wheels)
    dev_install.unpack(download_pywin32(wheels), windows)
    without_pywin32 = str(root / "without-pywin32")
    pip_install_target(without_pywin32, pinned_requirements())
    return {"full": full, "windows": windows, "without-pywin32": without_pywin32}


def run_host(tmp_path: Any, platform: str, lib: str, preload: list[str], **options: Any) -> dict[str, Any]:
    workspace, discovery = tmp_path / "workspace", tmp_path / "discovery"
    workspace.mkdir()
    discovery.mkdir(mode=0o700)
    config = {
        "platform": platform, "lib": lib, "repo": REPO, "workspace": str(workspace), "discovery": str(discovery),
        "process_pth": False, "preload": preload, "report": str(tmp_path / "report.json"), **options,
    }  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-B", HOST, str(tmp_path / "config.json")],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    report["stderr"] = result.stderr
    return report


@pytest.fixture(scope="session")
def preload(libs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The standard modules the start-up imports on this machine, as this machine: the simulated
    hosts import them before becoming another platform."""
    report = run_host(tmp_path_factory.mktemp("native"), L.current_platform(), libs["full"], [])
    assert report["error"] is None, report["error"]
    assert report["stand_ins"] == [], "this machine's own start-up needed a stand-in"
    return report["stdlib"]


def lib_for(platform: str, libs: dict[str, str]) -> str:
    return libs["windows"] if platform == "windows-x64" else libs["full"]


def record_owners(lib: str) -> dict[str, str]:
    """Absolute file path -> canonical distribution name, from the RECORD files in `lib`."""
    owners: dict[str, str] = {}
    for info in os.listdir(lib):
        if not info.endswith(".dist-info"):
            continue
        with open(os.path.join(lib, info, "METADATA"), encoding="utf-8") as handle:
            name = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("Name:"))
        with open(os.path.join(lib, info, "RECORD"), encoding="utf-8") as handle:
            for row in handle:
                path = row.rsplit(",", 2)[0]
                owners[os.path.normpath(os.path.join(lib, path))] = L.canonical(name)
    return owners


def loaded_distributions(report: dict[str, Any], lib: str) -> set[str]:
    owners = record_owners(lib)
    return {owners[path] for path in report["modules"].values() if path in owners}


def assert_served(report: dict[str, Any]) -> None:
    assert report["error"] is None, f"{report['error']}\n{report['stderr']}"
    assert report["initialize"]["status"] == 200, report["initialize"]
    assert report["initialize"]["body"]["result"]["serverInfo"]["name"] == "gemini-companion-sublime"
    assert report["discovery_file"].startswith("gemini-ide-server-"), report["discovery_file"]
    assert report["library_problems"] == [], report["library_problems"]
    assert report["claude_upgrade"] == 101, "Claude Code's WebSocket handshake was not accepted"
    assert report["sdk_before_chat"] == [], "the ACP SDK was imported before the first chat (at start-up)"


def assert_chatted(report: dict[str, Any], platform: str) -> None:
    """Where the simulated host's platform is this machine's OS, a real turn with the scripted agent ended."""
    if platform.split("-")[0] != L.current_platform().split("-")[0]:
        assert "chat" not in report, "a turn ran on a simulated OS"
        return
    assert report["chat"]["stop_reason"] == "end_turn", report["chat"]
    assert REPLY in report["chat"]["shown"], report["chat"]


@pytest.mark.parametrize("platform", L.PLATFORMS)
def test_the_server_starts_with_what_package_control_installs(
    platform: str, libs: dict[str, str], preload: list[str], tmp_path: Any
) -> None:
    report = run_host(tmp_path, platform, lib_for(platform, libs), preload)
    assert_served(report)
    assert_chatted(report, platform)

    traced = loaded_distributions(report, lib_for(platform, libs))
    listed = {L.canonical(n) for n in L.dependencies(platform)}
    later = {L.canonical(n) for n in L.LATER}  # imported on a later path: test_closure.py traces it
    assert not traced & later, f"in LATER, yet imported at start-up or by the first chat: {sorted(traced & later)}"
    assert traced == listed - later, (
        f"imported but not listed: {sorted(traced - listed)}; listed, never imported: {sorted(listed - later - traced)}"
    )
    # NOT_IMPORTED holds exactly what the metadata requires and neither the trace nor LATER imports.
    closure = L.metadata_closure(platform)
    unused = {L.canonical(n) for n in L.NOT_IMPORTED}
    assert closure - traced - later == unused & closure, (
        f"never imported, yet not in NOT_IMPORTED: {sorted(closure - traced - later - unused)}; "
        f"in NOT_IMPORTED, yet imported: {sorted(unused & (traced | later))}"
    )


def test_not_imported_names_only_what_some_platform_requires() -> None:
    required = set().union(*(L.metadata_closure(p) for p in L.PLATFORMS))
    stale = {L.canonical(n) for n in L.NOT_IMPORTED} - required
    assert not stale, f"NOT_IMPORTED names what no platform's metadata requires: {stale}"


def test_later_names_only_libraries_every_platform_installs() -> None:
    later = {L.canonical(n) for n in L.LATER}
    for platform in L.PLATFORMS:
        assert later <= {L.canonical(n) for n in L.dependencies(platform)}, platform
    assert not later & {L.canonical(n) for n in L.NOT_IMPORTED}


@pytest.mark.parametrize("process_pth", [False, True], ids=["pth-ignored", "pth-processed"])
def test_windows_imports_mcp_with_pywin32_from_the_wheel_layout(
    process_pth: bool, libs: dict[str, str], preload: list[str], tmp_path: Any
) -> None:
    report = run_host(tmp_path, "windows-x64", libs["windows"], preload, process_pth=process_pth)
    assert_served(report)
    # mcp's real Windows branch ran, with pywin32's modules from the wheel's folders.
    assert "mcp.os.win32.utilities" in report["modules"]
    for module, folder in (
        ("win32api", "win32"),
        ("win32con", os.path.join("win32", "lib")),
        ("pywintypes", "pywin32_system32"),
    ):
        assert os.path.dirname(report["modules"][module]) == os.path.join(libs["windows"], folder), module
    # pywin32_bootstrap ran once: its DLL folder was given to Windows once.
    assert report["dll_directories"] == [os.path.join(libs["windows"], "pywin32_system32")]
    # Folders are appended after the library folder and the package, never put before them.
    path = report["path"]
    assert path.index(libs["windows"]) < path.index(os.path.join(libs["windows"], "win32"))
    assert len(path) == len(set(path)), "a folder was added twice"


def test_windows_without_the_pth_needs_make_importable(libs: dict[str, str], preload: list[str], tmp_path: Any) -> None:
    """The simulation is strict enough to catch the defect: without our `.pth` step and without a
    host that processes `.pth` files, mcp's import of pywintypes fails as it does on Windows."""
    report = run_host(tmp_path, "windows-x64", libs["windows"], preload, skip_make_importable=True)
    assert report["error"] is not None and "No module named 'pywintypes'" in report["error"], report["error"]


def test_windows_without_pywin32_says_what_is_missing(libs: dict[str, str], preload: list[str], tmp_path: Any) -> None:
    """The libraries dependencies.json listed before pywin32: the server cannot start, and the
    doctor names pywin32 as missing instead of showing a traceback."""
    report = run_host(tmp_path, "windows-x64", libs["without-pywin32"], preload)
    assert report["error"] is not None and "pywintypes" in report["error"], report["error"]
    assert report["library_problems"] == ["missing: pywin32"], report["library_problems"]
