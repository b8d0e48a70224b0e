"""Start a window server as another platform's plugin host would, and report what it imported.

Run as `python -I -S -B simulated_host.py CONFIG.json` (see `tests/packaging/test_platforms.py`).
CONFIG names the platform (one of tools/libraries.PLATFORMS), the library folder (a
`Data/Lib/python314` as Package Control fills it), this repository, a workspace, a discovery folder,
whether the host processes `.pth` files in the library folder, and the standard-library modules to
import first. The report (JSON, written to CONFIG's `report`) says whether the server started and
answered an authenticated `initialize`, which file every loaded module came from, and every
stand-in the simulation had to provide.

What is simulated, and why it is enough to judge imports:
- The standard library is this machine's: the modules the start-up imports on this machine
  (`preload`) are imported before the platform changes, so asyncio, socket and ssl keep working.
  The few standard modules and attributes only the other platform has (`msvcrt`, `_winapi`,
  `ctypes.windll`, `signal.SIGBREAK`, ...) are stand-ins, each recorded.
- Then `sys.platform`, `os.name`-independent platform facts (`platform.system()`,
  `platform.machine()`) and, on Windows, `os.add_dll_directory` read as the target's, and every
  library module and every module of the package is imported for real, as the target: each
  `if sys.platform == "win32":` in a library takes the target's branch.
- A compiled module the target has but this machine cannot load (a `.pyd`, or a platform part such
  as `psutil._psutil_windows` that this machine's wheel lacks) is a stand-in module. Loading a
  Windows binary follows Windows' rule for its DLL imports: each DLL of the library folder the
  binary names must already be loaded or sit in its own folder or a folder given to
  `os.add_dll_directory`, or the import fails with Windows' message. Calling a stand-in function
  raises `SimulatedOnly`, so code that needs a real result fails loudly instead of running on.

The server then runs on this machine's event loop and sockets.

Then the first chat: no module of the ACP SDK (`acp`) may be loaded before it (the SDK loads on the
first chat, not at start-up). Where the target's `sys.platform` is this machine's (the Linux
platforms here), a real turn runs on the runtime's loop thread with the scripted agent
(tests/acp/scripted_agent.py, itself run from the library folder alone); elsewhere the agent's
process calls would be another platform's (CREATE_NEW_PROCESS_GROUP, psutil's compiled part), so
the chat's modules are imported as the target, which is what the import trace needs.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import itertools
import json
import os
import sys
import traceback
import types
from collections.abc import Sequence
from typing import Any

SYSTEMS = {"linux": ("linux", "Linux"), "osx": ("darwin", "Darwin"), "windows": ("win32", "Windows")}
MACHINES = {
    "x64": {"win32": "AMD64", "darwin": "x86_64", "linux": "x86_64"},
    "arm64": {"darwin": "arm64", "linux": "aarch64"},
}
WINDOWS_BINARY = (".pyd", ".dll")

# Attributes Windows' standard library has and this machine's lacks, that a library reads at import.
WINDOWS_ONLY_ATTRIBUTES = {
    "ctypes": ("windll", "oledll", "WinDLL", "OleDLL", "WINFUNCTYPE", "HRESULT", "FormatError", "WinError"),
    "signal": ("SIGBREAK", "CTRL_C_EVENT", "CTRL_BREAK_EVENT"),
    "sys": ("getwindowsversion",),
}
# Values a library checks at import time against its own version (psutil refuses a C extension
# built for another psutil).
VERSION_CHECKS = {"psutil": "version"}

stand_ins: list[str] = []
dll_directories: list[str] = []
loaded_dlls: set[str] = set()
_values = itertools.count(1)


class SimulatedOnly(Exception):
    """A stand-in was called: the simulation cannot run another platform's compiled code."""


class StandIn(int):
    """A value of a stand-in: an int (flags, enum members), callable and with attributes.

    A library's compiled function raises SimulatedOnly when called. A standard-library attribute
    only the target has (`ctypes.WINFUNCTYPE`, `ctypes.windll`) is permissive instead: libraries
    declare Windows API prototypes with it at import time, which must not fail."""

    qualname: str
    permissive: bool

    def __new__(cls, qualname: str, value: int | None = None, permissive: bool = False) -> StandIn:
        self = super().__new__(cls, next(_values) if value is None else value)
        self.qualname = qualname
        self.permissive = permissive
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.permissive:
            return StandIn(f"{self.qualname}()", permissive=True)
        raise SimulatedOnly(f"{self.qualname}() is another platform's compiled code")

    def __getattr__(self, name: str) -> StandIn:
        if name.startswith("__"):
            raise AttributeError(name)
        return StandIn(f"{self.qualname}.{name}", permissive=self.permissive)

    def __getitem__(self, key: Any) -> StandIn:
        return StandIn(f"{self.qualname}[]", permissive=self.permissive)


def stand_in_module(name: str, origin: str | None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = origin
    stand_ins.append(f"{name} ({origin or 'no file here'})")
    checked = VERSION_CHECKS.get(name.split(".")[0])
    values: dict[str, Any] = {}
    if checked and "." in name:
        values[checked] = StandIn(
            f"{name}.{checked}", int(importlib.metadata.version(name.split(".")[0]).replace(".", ""))
        )

    def module_getattr(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return values.setdefault(attr, StandIn(f"{name}.{attr}"))

    module.__getattr__ = module_getattr  # type: ignore[method-assign]
    module.__dir__ = lambda: sorted(values)  # type: ignore[method-assign]
    return module


class _StandInLoader(importlib.abc.Loader):
    def __init__(self, origin: str | None) -> None:
        self.origin = origin

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if self.origin and self.origin.lower().endswith(WINDOWS_BINARY):
            require_dlls(spec.name, self.origin)
        module = stand_in_module(spec.name, self.origin)
        if spec.name == "_win32sysloader":
            module.GetModuleFilename = loaded_dll_path  # type: ignore[attr-defined]
            module.LoadModule = load_dll  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def require_dlls(name: str, binary: str) -> None:
    """Windows' rule for a binary's DLL imports: each DLL of the library folder it names must be
    loaded already, beside it, or in a folder given to os.add_dll_directory."""
    with open(binary, "rb") as handle:
        data = handle.read().lower()
    here = os.path.dirname(binary)
    for dll in sorted(PRIVATE_DLLS):
        if dll.encode() not in data or dll == os.path.basename(binary).lower() or dll in loaded_dlls:
            continue
        if not any(os.path.isfile(os.path.join(d, dll)) for d in (here, *dll_directories)):
            raise ImportError(f"DLL load failed while importing {name}: The specified module could not be found.")
        loaded_dlls.add(dll)
    loaded_dlls.add(os.path.basename(binary).lower())


def loaded_dll_path(name: str) -> str | None:
    """pywin32's `_win32sysloader.GetModuleFilename`: the path of a DLL this process has loaded."""
    return next((path for path in loaded_dll_paths if os.path.basename(path).lower() == name.lower()), None)


def load_dll(name: str) -> str | None:
    """pywin32's `_win32sysloader.LoadModule`: LoadLibraryEx with the default search folders, of
    which the library folder can only be one given to os.add_dll_directory."""
    for folder in dll_directories:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            loaded_dll_paths.append(path)
            loaded_dlls.add(name.lower())
            return path
    return None


loaded_dll_paths: list[str] = []
PRIVATE_DLLS: set[str] = set()  # the .dll files of the library folder, lower case


class WindowsBinaries(importlib.abc.MetaPathFinder):
    """Finds `<name>.pyd` (and `<name>.cp314-win_amd64.pyd`) where Windows' import system would."""

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        base = name.rpartition(".")[2]
        for folder in path if path is not None else sys.path:
            for file in (f"{base}.pyd", f"{base}.cp314-win_amd64.pyd"):
                origin = os.path.join(folder or ".", file)
                if os.path.isfile(origin):
                    return importlib.util.spec_from_loader(name, _StandInLoader(origin), origin=origin)
        return None


class OtherPlatformParts(importlib.abc.MetaPathFinder):
    """Last resort: a standard module only the target has, or a submodule of an installed library
    that this machine's wheel lacks (the target's compiled part). Anything else stays missing."""

    def __init__(self, lib: str) -> None:
        self.lib = os.path.abspath(lib)

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        top = name.split(".")[0]
        parent = sys.modules.get(name.rpartition(".")[0]) if "." in name else None
        from_lib = parent is not None and os.path.abspath(getattr(parent, "__file__", "") or "").startswith(self.lib)
        if (top in TARGET_ONLY_STDLIB[sys.platform] and "." not in name) or from_lib:
            return importlib.util.spec_from_loader(name, _StandInLoader(None))
        return None


# Standard modules only the target's Python has (sys.stdlib_module_names lists every platform's).
TARGET_ONLY_STDLIB = {
    "win32": {"nt", "_overlapped", "_winapi", "msvcrt", "winreg", "winsound", "_wmi"},
    "darwin": {"_scproxy"},
    "linux": set(),
}


class WindowsExtensionFileLoader(importlib.machinery.ExtensionFileLoader):
    """What `importlib.machinery.ExtensionFileLoader` does with a Windows binary on Windows
    (pywintypes.py loads pywintypes314.dll through it): here, a stand-in module."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:  # type: ignore[override]
        if self.path.lower().endswith(WINDOWS_BINARY):
            require_dlls(spec.name, self.path)
            return stand_in_module(spec.name, self.path)
        return super().create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        if str(getattr(module, "__file__", "")).lower().endswith(WINDOWS_BINARY):
            sys.modules[module.__name__] = module  # what a single-phase init module does (pywintypes.py relies on it)
        else:
            super().exec_module(module)


def process_pth(lib: str, windows: bool) -> None:
    """`site.addsitedir(lib)` as the target's Python does it: on Windows a `.pth` line such as
    `win32\\lib` is a relative path with a backslash separator."""
    for name in sorted(os.listdir(lib)):
        if not name.endswith(".pth"):
            continue
        with open(os.path.join(lib, name), encoding="utf-8") as handle:
            for line in handle:
                line = line.rstrip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith(("import ", "import\t")):
                    try:
                        exec(line)
                    except Exception as exc:  # site.addpackage reports the error and goes on
                        print(f"Error processing {name}: {exc!r}", file=sys.stderr)
                    continue
                path = os.path.join(lib, *(line.split("\\") if windows else [line]))
                if os.path.exists(path) and path not in sys.path:
                    sys.path.append(path)


def become(platform: str, lib: str) -> None:
    import asyncio
    import warnings

    # The server runs on this machine's event loop: create the default policy now, as this
    # machine (Python 3.14 creates it lazily, and as Windows it would build an IOCP proactor).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.get_event_loop_policy()
    system, machine = platform.split("-")
    sys_platform, platform_system = SYSTEMS[system]
    import platform as platform_module

    platform_module.system = lambda: platform_system
    platform_module.machine = lambda: MACHINES[machine][sys_platform]
    sys.platform = sys_platform
    sys.meta_path.append(OtherPlatformParts(lib))
    if sys_platform != "win32":
        return
    for module, names in WINDOWS_ONLY_ATTRIBUTES.items():
        target = importlib.import_module(module)
        for attr in names:
            if not hasattr(target, attr):
                setattr(target, attr, StandIn(f"{module}.{attr}", permissive=True))
                stand_ins.append(f"{module}.{attr}")

    def add_dll_directory(path: str) -> Any:
        if not os.path.isdir(path):
            raise FileNotFoundError(path)
        dll_directories.append(path)
        return types.SimpleNamespace(close=lambda: None)

    os.add_dll_directory = add_dll_directory  # type: ignore[attr-defined]
    for _folder, _dirs, files in os.walk(lib):
        PRIVATE_DLLS.update(f.lower() for f in files if f.lower().endswith(".dll"))
    sys.meta_path.insert(0, WindowsBinaries())
    importlib.machinery.ExtensionFileLoader = WindowsExtensionFileLoader  # type: ignore[misc]


def module_files() -> dict[str, str]:
    return {
        name: os.path.abspath(file)
        for name, module in list(sys.modules.items())
        if isinstance(file := getattr(module, "__file__", None), str)
    }


def thread_stacks() -> str:
    """Where every thread is (a start-up that hangs says where)."""
    import faulthandler
    import tempfile

    with tempfile.TemporaryFile("w+") as out:
        faulthandler.dump_traceback(out, all_threads=True)
        out.seek(0)
        return out.read()


def serve(config: dict[str, Any]) -> dict[str, Any]:
    """The runtime opens a window as the plugin host does, and a client initializes a session."""
    import http.client
    import logging

    logging.basicConfig(level=logging.WARNING)  # the companion's own errors reach the test's output

    from companion.core.system import processes
    from companion.headless.editor import HeadlessEditor
    from companion.mcp_tools.factory import tool_factory
    from companion.mcp_tools.settings import WorkspaceToolSettings
    from companion.runtime import Runtime

    facts: dict[str, Any] = {}
    runtime = Runtime(
        editor_pid=lambda: processes.editor_pid(sys.executable),
        discovery_directory=config["discovery"],
        lock_directory=os.path.join(config["discovery"], "claude-ide"),
    )
    try:
        handle = runtime.open_window(
            HeadlessEditor("accept"),
            [config["workspace"]],
            tool_factory=tool_factory(WorkspaceToolSettings()),
            claude=True,  # both integrations are on by default, as in the plugin host
        )
        try:
            handle.ready.result(60)
        except TimeoutError:
            raise TimeoutError(f"the window server did not start in 60 s; threads:\n{thread_stacks()}") from None
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "host", "version": "0"}}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        connection = http.client.HTTPConnection("127.0.0.1", handle.port, timeout=30)
        connection.request(
            "POST", "/mcp", body,
            {"Authorization": f"Bearer {handle.token}", "Host": f"127.0.0.1:{handle.port}",
             "Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )  # fmt: skip
        response = connection.getresponse()
        facts["initialize"] = {"status": response.status, "body": json.loads(response.read() or b"null")}
        connection.close()
        facts["discovery_file"] = os.path.basename(handle.discovery_path or "")
        facts["claude_upgrade"] = claude_upgrade(handle.port, handle.claude_token)
        handle.close().result(30)
    finally:
        runtime.stop()
    return facts


def first_chat(config: dict[str, Any], runs_here: bool) -> dict[str, Any]:
    """What the first chat loads, and (where it can run here) the reply to one prompt."""
    facts: dict[str, Any] = {"sdk_before_chat": sorted(n for n in sys.modules if n.split(".")[0] == "acp")}
    if not runs_here:
        importlib.import_module("companion.acp.session")  # the module the first chat imports
        return facts
    from companion.runtime import Runtime

    runtime = Runtime()
    runtime.start()
    try:
        facts["chat"] = runtime.submit(lambda: chat_turn(config)).result(60)
    finally:
        runtime.stop()
    return facts


async def chat_turn(config: dict[str, Any]) -> dict[str, str]:
    """One prompt to the scripted agent through ChatSession, the terminal's ChatView recording."""
    import io

    from companion.acp.agents.agents import custom_agent
    from companion.acp.session import ChatSession  # the SDK loads here, as on the first chat
    from companion.headless.chat import TerminalView
    from companion.headless.editor import HeadlessEditor

    agent = os.path.join(config["repo"], "tests", "acp", "scripted_agent.py")
    code = f"import sys, runpy; sys.path[:0] = {[config['lib']]!r}; sys.argv[1:] = ['ok']\n"
    code += f"runpy.run_path({agent!r}, run_name='__main__')"
    out = io.StringIO()
    spec = custom_agent([sys.executable, "-I", "-S", "-B", "-c", code])
    session = ChatSession(spec, [config["workspace"]], HeadlessEditor("accept"), TerminalView("accept", out))
    try:
        await session.start()
        stop = await session.prompt("hello")
    finally:
        await session.close()
    return {"stop_reason": stop, "shown": out.getvalue()}


def claude_upgrade(port: int, token: str) -> int:
    """The status Claude Code's WebSocket handshake gets (101: the WebSocket stack is importable)."""
    import base64
    import socket

    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n"
        f"X-Claude-Code-Ide-Authorization: {token}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request.encode())
        head = sock.recv(4096)
    return int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0


def library_problems() -> list[str]:
    """What the doctor reports about the libraries, as "missing: name" / "outdated: …" / "broken: …"."""
    from companion import doctor

    missing, wrong = doctor.library_issues(doctor.library_versions())
    return [
        *(f"missing: {name}" for name in missing),
        *(f"outdated: {entry}" for entry in wrong),
        *(f"broken: {entry}" for entry in doctor.broken_libraries()),
    ]


def main(config_path: str) -> None:
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    # Public modules first, as programs import them: importing `_asyncio` before `asyncio` leaves
    # CPython 3.13's asyncio.current_task() answering None in every task.
    for name in sorted(config["preload"], key=lambda name: name.startswith("_")):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    before = set(sys.modules)
    lib = config["lib"]
    sys.path[:0] = [lib, config["repo"]]
    windows = config["platform"].startswith("windows")
    this_platform = sys.platform
    report: dict[str, Any] = {"platform": config["platform"], "error": None}
    try:
        become(config["platform"], lib)
        if config["process_pth"]:
            process_pth(lib, windows)
        report["path_before_start"] = list(sys.path)
        if config.get("skip_make_importable"):  # shows the test catches a host without our .pth step
            from companion.core.system import pywin32_path

            pywin32_path.make_importable = lambda platform=sys.platform: []
        report.update(serve(config))
        report.update(first_chat(config, runs_here=sys.platform == this_platform))
    except BaseException as exc:  # the report says what failed; the test shows it
        report["error"] = "".join(traceback.format_exception(exc))
    report["library_problems"] = library_problems()
    report["modules"] = {n: f for n, f in module_files().items() if n not in before}
    report["stdlib"] = sorted(n for n in sys.modules if n.split(".")[0] in sys.stdlib_module_names)
    report["stand_ins"] = stand_ins
    report["dll_directories"] = dll_directories
    report["path"] = list(sys.path)
    with open(config["report"], "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
