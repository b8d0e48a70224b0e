"""Missing, outdated or broken libraries: the package loads anyway and says what to do.

Each case runs the package in our fake Sublime inside a Python that imports only the standard
library, this repository and the given library folder (no site-packages), so the libraries really
are absent, as in a fresh `Data/Lib/python314`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from companion import doctor
from companion.gemini_ide.discovery import discovery_dir
from tests.packaging.conftest import REPO, isolated
from tools import libraries as L

CHILD = """
import importlib.util, json, os, threading
BLOCK_MODULE, BLOCK_MODE = {block!r}
if BLOCK_MODE:
    class _Broken:
        def create_module(self, spec):
            raise ImportError(f"_{{BLOCK_MODULE}}_native.cpython-314t-x86_64-linux-gnu.so: cannot open")
        def exec_module(self, module):
            pass
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] != BLOCK_MODULE:
                return None
            if BLOCK_MODE == "missing":
                raise ModuleNotFoundError("No module named 'psutil'", name=name)
            return importlib.util.spec_from_loader(name, _Broken())
    sys.meta_path.insert(0, _Block())

from tests.sublime_fake import control
control.install()
import sublime
control.reset()
window = control.new_window([{workspace!r}])
print("--- load", flush=True)
control.load_plugin()
windows = sys.modules["Gemini Companion.companion.sublime_editor.windows"]
# The loop thread checks the libraries; the main thread then starts the servers or says what is missing.
checked = lambda: windows.registry() is not None or windows.library_problem() is not None
control.pump_until(checked, 60, "the library check")
print("--- loaded", flush=True)
result = {{"started": windows.registry() is not None}}
if result["started"]:
    handle = control.pump_until(lambda: windows.registry().get(window), 30).handle
    control.pump_until(handle.ready.done, 60, "the server to start or fail")
    error = handle.ready.exception()
    result["start_error"] = None if error is None else f"{{type(error).__name__}}: {{error}}"
    result["discovery"] = os.path.basename(handle.discovery_path)
window.run_command("gemini_companion_status")
find_doctor = lambda: next((v for v in window.views() if v.settings().get("gemini_companion.doctor")), None)
doctor = control.pump_until(find_doctor, 30, "the doctor's report")
result["doctor"] = doctor.substr(sublime.Region(0, doctor.size()))
result["status"] = control.status_messages()
result["errors"] = control.errors()
result["psutil_imported"] = "psutil" in sys.modules
result["ppid"] = os.getppid()
control.unload_plugin()
control.settle()
result["threads_after_unload"] = sorted(
    t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.name.startswith("sublime-fake")
)
control.shutdown()
print("RESULT " + json.dumps(result), flush=True)
"""


def run_package(tmp_path: str, libs: list[str], block: tuple[str, str] = ("", "")) -> tuple[dict, str]:
    workspace = os.path.join(str(tmp_path), "project")
    os.makedirs(workspace, exist_ok=True)
    env = {**os.environ, "TMPDIR": os.path.join(str(tmp_path), "tmp")}
    code = CHILD.format(block=block, workspace=workspace)
    proc = subprocess.run(isolated([*libs, REPO], code), capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, f"the package raised:\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    result = json.loads(next(line for line in lines if line.startswith("RESULT "))[len("RESULT ") :])
    console = "\n".join(lines[lines.index("--- load") + 1 : lines.index("--- loaded")])
    return result, console


def fake_dist(folder: str, name: str, version: str) -> None:
    info = os.path.join(folder, f"{name.replace('-', '_')}-{version}.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as handle:
        handle.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def test_no_libraries_at_all_one_status_message_console_names_them_doctor_lists_them(tmp_path: str) -> None:
    empty = os.path.join(str(tmp_path), "Lib")
    os.makedirs(empty)
    result, console = run_package(tmp_path, [empty])
    needed = [n for n in doctor.LIBRARIES if n not in doctor.OPTIONAL]
    assert not result["started"] and result["errors"] == []
    assert len(result["status"]) == 1, result["status"]
    assert "Satisfy Libraries" in result["status"][0] and "mcp" in result["status"][0]
    assert f"Missing: {', '.join(needed)}" in console, console
    assert "Package Control: Satisfy Libraries" in console and doctor.REPOSITORY_URL in console
    assert "MISSING" in result["doctor"] and f"Libraries missing: {', '.join(needed)}." in result["doctor"]
    assert doctor.REPOSITORY_URL in result["doctor"]
    assert result["threads_after_unload"] == []


def test_one_missing_and_one_outdated_library_are_named_and_nothing_else(tmp_path: str) -> None:
    lib = os.path.join(str(tmp_path), "Lib")
    os.makedirs(lib)
    pins = L.runtime_pins()
    for name in doctor.LIBRARIES:
        if name == "mcp":
            fake_dist(lib, name, "2.2.0")  # Package Control never downgrades: an old mcp may stay
        elif name != "starlette":
            fake_dist(lib, name, pins[L.canonical(name)])
    result, console = run_package(tmp_path, [lib])
    assert not result["started"] and len(result["status"]) == 1
    assert "(starlette, mcp)" in result["status"][0], result["status"]
    assert "Missing: starlette\n" in console + "\n" and "Wrong version: mcp 2.2.0 (needs ==2.3.0)" in console
    assert "Libraries missing: starlette; wrong version: mcp 2.2.0 (needs ==2.3.0)." in result["doctor"]


def test_pydantic_core_not_the_one_pydantic_needs_is_reported(tmp_path: str) -> None:
    lib = os.path.join(str(tmp_path), "Lib")
    os.makedirs(lib)
    pins = L.runtime_pins()
    for name in doctor.LIBRARIES:
        fake_dist(lib, name, "2.99.0" if name == "pydantic-core" else pins[L.canonical(name)])
    with open(os.path.join(lib, f"pydantic-{pins['pydantic']}.dist-info", "METADATA"), "a") as handle:
        handle.write(f"Requires-Dist: pydantic-core=={pins['pydantic-core']}\n")
    result, console = run_package(tmp_path, [lib])
    assert not result["started"]
    assert f"Wrong version: pydantic-core 2.99.0 (needs =={pins['pydantic-core']})" in console


@pytest.mark.parametrize("block", ["missing", "broken"])
def test_without_a_working_psutil_the_companion_still_runs(closure_lib: str, tmp_path: str, block: str) -> None:
    """PID checks fall back to the standard library: the editor PID is the plugin host's parent, a
    dead editor's discovery file is swept and a live one is kept."""
    folder = discovery_dir({"TMPDIR": os.path.join(str(tmp_path), "tmp")})
    os.makedirs(folder, mode=0o700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        stale = os.path.join(folder, f"gemini-ide-server-{dead.pid}-1.json")
        alive = os.path.join(folder, f"gemini-ide-server-{live.pid}-2.json")
        for path in (stale, alive):
            with open(path, "w") as handle:
                handle.write("{}")
        result, _ = run_package(tmp_path, [closure_lib], ("psutil", block))
        assert live.poll() is None
    finally:
        live.kill()
        live.wait()
    assert result["started"] and result["errors"] == [] and result["status"] == []
    assert result["start_error"] is None and not result["psutil_imported"]
    assert result["discovery"].startswith(f"gemini-ide-server-{result['ppid']}-"), result
    assert "- Server: listening" in result["doctor"], result["doctor"]
    assert not os.path.exists(stale) and os.path.exists(alive)


def test_a_library_that_is_installed_but_does_not_import_fails_the_server_with_the_reason(
    closure_lib: str, tmp_path: str
) -> None:
    """Metadata says it is there, the import fails (a wheel for another platform or Python): the
    server reports the ImportError at once, and the doctor shows it, instead of "starting" forever."""
    result, _ = run_package(tmp_path, [closure_lib], ("opentelemetry", "broken"))
    assert result["started"] and result["errors"] == []
    assert result["start_error"] == ("ImportError: _opentelemetry_native.cpython-314t-x86_64-linux-gnu.so: cannot open")
    assert "- Server: failed: _opentelemetry_native.cpython-314t" in result["doctor"], result["doctor"]
    assert result["threads_after_unload"] == []


# Package Control installs the libraries, or changes them, while the package is loaded: the libraries
# of `source` arrive in `lib` once the package has said what is missing; or, once the servers run,
# the version of `bump` changes on disk (its modules stay imported).
LIFE_CHILD = """
import glob, json, os, shutil, threading
from tests.sublime_fake import control
control.install()
import sublime
control.reset()
window = control.new_window([{workspace!r}])
control.load_plugin()
lifecycle = sys.modules["Gemini Companion.companion.sublime_editor.lifecycle"]
windows = sys.modules["Gemini Companion.companion.sublime_editor.windows"]
lifecycle.LIBRARY_CHECK_MS = 200
result = {{}}
if {source!r}:
    control.pump_until(lambda: windows.library_problem() is not None, 60, "the library check")
    result["waiting_status"] = control.status_messages()
    for entry in os.listdir({source!r}):
        copy = shutil.copytree if os.path.isdir(os.path.join({source!r}, entry)) else shutil.copy2
        copy(os.path.join({source!r}, entry), os.path.join({lib!r}, entry))
handle = control.pump_until(lambda: windows.registry() and windows.registry().get(window), 60, "a start").handle
control.pump_until(handle.ready.done, 60, "the server")
result["started_error"] = None if handle.ready.exception() is None else str(handle.ready.exception())
result["discovery_existed"] = os.path.exists(handle.discovery_path)
if {bump!r}:
    (info,) = glob.glob(os.path.join({lib!r}, {bump!r} + "-*.dist-info"))
    os.rename(info, os.path.join({lib!r}, {bump!r} + "-99.0.0.dist-info"))
    with open(os.path.join({lib!r}, {bump!r} + "-99.0.0.dist-info", "METADATA")) as handle_:
        text = handle_.read()
    with open(os.path.join({lib!r}, {bump!r} + "-99.0.0.dist-info", "METADATA"), "w") as handle_:
        handle_.write("\\n".join("Version: 99.0.0" if l.startswith("Version:") else l for l in text.split("\\n")))
    if {expect_stop!r}:
        control.pump_until(lambda: windows.registry() is None, 60, "the servers to stop")
        # Stopping returns at once (the main thread never waits for the loop thread): the loop
        # thread deletes the discovery file a moment later.
        control.pump_until(lambda: not os.path.exists(handle.discovery_path), 30, "the discovery file to go")
    else:
        control.pump(2.0)  # ten looks at 200 ms
        result["still_running"] = windows.registry() is not None and windows.upgraded() == []
    result["discovery_after"] = os.path.exists(handle.discovery_path)
window.run_command("gemini_companion_status")
find_doctor = lambda: next((v for v in window.views() if v.settings().get("gemini_companion.doctor")), None)
doctor = control.pump_until(find_doctor, 30, "the doctor's report")
result["doctor"] = doctor.substr(sublime.Region(0, doctor.size()))
result["status"] = control.status_messages()
result["errors"] = control.errors()
control.unload_plugin()
control.settle()
control.shutdown()
print("RESULT " + json.dumps(result), flush=True)
"""


def run_life(tmp_path: str, lib: str, source: str = "", bump: str = "", expect_stop: bool = True) -> tuple[dict, str]:
    workspace = os.path.join(str(tmp_path), "project")
    os.makedirs(workspace, exist_ok=True)
    env = {**os.environ, "TMPDIR": os.path.join(str(tmp_path), "tmp")}
    code = LIFE_CHILD.format(workspace=workspace, source=source, lib=lib, bump=bump, expect_stop=expect_stop)
    proc = subprocess.run(isolated([lib, REPO], code), capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"the package raised:\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    return result, proc.stdout


def test_libraries_installed_after_the_package_loaded_start_it_without_a_restart(
    closure_lib: str, tmp_path: str
) -> None:
    """A first install where the libraries arrive after the package (or Satisfy Libraries later): the
    package says what is missing, never to restart, and starts by itself once they are there."""
    lib = os.path.join(str(tmp_path), "Lib")
    os.makedirs(lib)
    result, console = run_life(tmp_path, lib, source=closure_lib)
    (waiting,) = result["waiting_status"]
    assert "starts by itself" in waiting and "restart" not in waiting.lower(), waiting
    assert "no restart needed" in console and "restart Sublime Text" not in console
    assert "the libraries are installed now; starting" in console
    assert result["started_error"] is None and result["discovery_existed"]
    assert "- Server: listening" in result["doctor"] and "Problems and fixes\n\nNone found." not in console
    assert result["errors"] == []


def test_a_library_changed_under_the_running_servers_stops_them_and_asks_for_a_restart(
    closure_lib: str, tmp_path: str
) -> None:
    lib = os.path.join(str(tmp_path), "Lib")
    shutil.copytree(closure_lib, lib)
    result, console = run_life(tmp_path, lib, bump="anyio")
    assert result["started_error"] is None and result["discovery_existed"]
    assert not result["discovery_after"]  # stopped: Gemini CLI no longer finds a half-upgraded window
    assert result["status"][-1] == "Gemini Companion: libraries changed while Sublime Text runs; restart Sublime Text"
    assert "anyio 4.16.0 → 99.0.0" in console and "Restart Sublime Text." in console
    assert (
        "Package Control changed libraries while Sublime Text was running (anyio 4.16.0 → 99.0.0)" in (result["doctor"])
    )
    assert result["errors"] == []


def test_a_library_the_companion_does_not_use_changing_leaves_it_running(closure_lib: str, tmp_path: str) -> None:
    """Another package's library (in the same Data/Lib/python314) is upgraded: none of ours changed."""
    lib = os.path.join(str(tmp_path), "Lib")
    shutil.copytree(closure_lib, lib)
    fake_dist(lib, "another-package-lib", "1.0.0")
    result, _console = run_life(tmp_path, lib, bump="another_package_lib", expect_stop=False)
    assert result["still_running"] and result["discovery_after"]
    assert "restart" not in " ".join(result["status"]).lower() and result["errors"] == []


def test_an_outdated_library_already_imported_needs_a_restart_and_the_fix_says_so() -> None:
    assert "pytest" in sys.modules and "pyright" not in sys.modules
    assert doctor.loaded_libraries(["pytest", "pyright", "not-a-library"]) == ["pytest"]
    assert "restart Sublime Text" in doctor.library_fix(restart=True)
    assert "no restart needed" in doctor.library_fix(restart=False)
