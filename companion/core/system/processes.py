"""Process facts without `ps` or `/proc`: is a PID alive, and which PID is the editor's; and how a
child is started in a group of its own and killed (ask_gemini, the ACP agents)."""

from __future__ import annotations

import os
import sys
from typing import Any


def pid_alive(pid: int) -> bool:
    """True when a process with this PID exists (a process we may not signal counts as alive)."""
    if pid <= 0:
        return False
    try:
        import psutil  # optional: the package still works when the library is missing or broken
    except Exception:
        return _pid_alive_stdlib(pid)
    try:
        return bool(psutil.pid_exists(pid))
    except Exception:
        return _pid_alive_stdlib(pid)


def create_time(pid: int) -> float | None:
    """When the process with this PID started (seconds since the epoch), or None when unknown
    (no psutil, no such process, or not allowed to ask)."""
    try:
        import psutil
    except Exception:
        return None
    try:
        return float(psutil.Process(pid).create_time())
    except Exception:
        return None


def _pid_alive_stdlib(pid: int) -> bool:
    if sys.platform == "win32":
        return _pid_alive_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _pid_alive_windows(pid: int) -> bool:
    import ctypes

    process_query_limited_information = 0x1000
    still_active = 259
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(process_query_limited_information, False, pid)
    if not handle:
        # Access denied still means the process exists.
        return kernel32.GetLastError() == 5
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


def editor_pid(executable_path: str | None = None) -> int:
    """The PID of the editor process that hosts this plugin host.

    Sublime spawns each plugin host as a child of `sublime_text`, so our parent is the editor.
    When psutil is available the parent's executable is cross-checked against the editor's
    path; on a mismatch the walk continues up the tree until it finds it.
    """
    parent = os.getppid()
    if not executable_path:
        return parent
    try:
        import psutil
    except Exception:
        return parent
    try:
        process: psutil.Process | None = psutil.Process(parent)
        while process is not None:
            if _same_file(process.exe(), executable_path):
                return process.pid
            process = process.parent()
    except Exception:
        pass
    return parent


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


# The signals that ask a command-line process to stop (Ctrl-C, kill, a closed terminal, Ctrl-\\,
# Ctrl-Break on Windows): `serve` and `chat` stop cleanly on each, leaving no process or file behind.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK")


def new_group() -> dict[str, Any]:
    """The subprocess options that start a child in a process group/session of its own."""
    # Its own process group/session, so a Ctrl-C meant for us does not reach it and killing is targeted.
    if sys.platform == "win32":
        import subprocess

        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def kill_one(pid: int) -> None:
    """Kill one process (SIGKILL where it exists); a process already gone is not an error."""
    import signal

    try:
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    except OSError:
        pass


def descendants(pid: int) -> list[Any]:
    """The processes `pid` started (psutil), or [] without psutil or once it is gone."""
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:
        return []


def kill_and_wait(processes: list[Any], timeout: float = 3.0) -> None:
    """Kill these psutil processes (the ones already gone are skipped) and wait for them to go."""
    try:
        import psutil
    except Exception:
        return
    alive = []
    for proc in processes:
        try:
            proc.kill()
            alive.append(proc)
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=timeout)
