"""Every process a child started, for as long as it runs, so stopping it leaves nothing behind: a
process started in its own session, or orphaned by a crash or a double fork, is no longer under the
child nor in its process group.

- All platforms: its descendants are recorded when the caller asks (`update`: the chat does once a
  second during a turn, never while idle) and before the kill; each time from one scan of the
  process table (the child's descendants, or with `adopts` ours).
- Linux, only in a process of our own (the headless `chat`; the caller says so with `adopts`): we
  become a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so an orphan of the tree is re-parented
  to us instead of to init; our children carrying the tree's `marker` environment variable
  (inherited from the child) are the tree's, whatever forks happened in between. Never in
  Sublime's plugin host: being a subreaper is process-wide and lasting, so every other plugin's
  orphans would become ours and stay zombies until Sublime quits. There, a double fork is caught
  only when `update` runs before its middle process exits. A process that clears its environment
  and double-forks is not recognised either way (tests/acp: `escape`).
- Windows: the child is put in a Job object; terminating the job ends every process in it. Coded
  against the Win32 documentation and type-checked, NOT run here (no Windows on the test machine).
  A process the child starts before it is assigned (a few milliseconds) is only caught by `update`.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
from typing import Any

from .processes import kill_and_wait

MARKER = "GEMINI_COMPANION_AGENT_TREE"  # inherited by everything the child starts, unless it clears it
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37  # linux/prctl.h


def new_marker() -> tuple[str, str]:
    """The environment variable (name, value) that marks one tree."""
    return MARKER, secrets.token_hex(8)


def become_subreaper() -> bool:
    """Linux: orphans of our children's trees become our children, for the rest of this process's
    life. Only for a process of our own, never a shared one (the module's docstring). False
    elsewhere, or when the kernel refuses (before 3.4)."""
    return set_subreaper(True)


def set_subreaper(on: bool) -> bool:
    """Turn being a child subreaper on or off (Linux); True when the kernel did it."""
    libc = _libc()
    return libc is not None and int(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now (Linux; False elsewhere)."""
    import ctypes

    libc = _libc()
    value = ctypes.c_int(0)
    return (
        libc is not None
        and int(libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)) == 0
        and bool(value.value)
    )


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "prctl") else None
    except OSError:
        return None


class ProcessTree:
    """The processes the child `pid` started, seen so far (psutil processes by PID)."""

    def __init__(self, pid: int, marker: tuple[str, str], adopts: bool) -> None:
        self.pid = pid
        self.marker = marker
        self.adopts = adopts  # we are a subreaper for it (become_subreaper): its orphans are our children
        self.seen: dict[int, Any] = {}
        self._lock = threading.Lock()  # the periodic update's thread may still run when `kill` does
        self._root = _process(pid)  # kept: psutil then refuses a reused PID instead of listing its children
        self._job = _WindowsJob(pid) if sys.platform == "win32" else None

    def update(self) -> None:
        """Record the child's descendants now, and the orphans of its tree we adopted (Linux);
        reap those of ours that already ended, so no zombie stays."""
        with self._lock:
            self._update()

    def kill(self) -> None:
        """Kill every process of the tree (the child itself is the caller's) and wait for them."""
        with self._lock:
            self._update()
            if self._job is not None:
                self._job.terminate()
            kill_and_wait(list(self.seen.values()))
            self.seen.clear()

    def _update(self) -> None:
        """One scan of the process table (psutil's children(recursive=True) reads it once)."""
        found = self._with_adopted() if self.adopts else _descendants(self._root)
        for proc in found:
            self.seen.setdefault(proc.pid, proc)
        if self.adopts:
            self._reap()  # only adopted processes can be our zombies

    def _with_adopted(self) -> list[Any]:
        """The child's descendants and the orphans of its tree re-parented to us (marked), from
        all our descendants: the only processes whose parents are then asked."""
        children: dict[int, list[Any]] = {}
        for proc in _descendants(_process(os.getpid())):
            try:
                children.setdefault(proc.ppid(), []).append(proc)
            except Exception:
                continue  # gone meanwhile
        found = _below(self.pid, children) if _running(self._root) else []  # not a reused PID's
        for child in children.get(os.getpid(), []):
            if child.pid != self.pid and _carries(child, self.marker):
                found += [child, *_below(child.pid, children)]
        return found

    def _reap(self) -> None:
        """Our adopted children that ended are zombies until someone waits for them: we do."""
        try:
            import psutil
        except Exception:
            return
        for pid, proc in list(self.seen.items()):
            try:
                if proc.status() != psutil.STATUS_ZOMBIE or proc.ppid() != os.getpid():
                    continue
                proc.wait(0)
            except psutil.NoSuchProcess:
                pass  # gone: nothing left to stop
            except psutil.Error:
                continue  # not ours to ask: kept, to be killed with the rest
            del self.seen[pid]


def _process(pid: int) -> Any:
    try:
        import psutil

        return psutil.Process(pid)
    except Exception:  # no psutil, or already gone
        return None


def _descendants(proc: Any) -> list[Any]:
    try:
        return list(proc.children(recursive=True)) if proc is not None else []
    except Exception:  # gone, or its PID reused by another process
        return []


def _below(pid: int, children: dict[int, list[Any]]) -> list[Any]:
    found: list[Any] = []
    parents = [pid]
    while parents:
        below = children.get(parents.pop(), [])
        found += below
        parents += [proc.pid for proc in below]
    return found


def _running(proc: Any) -> bool:
    try:
        return proc is not None and bool(proc.is_running())  # False once its PID is someone else's
    except Exception:
        return False


def _carries(proc: Any, marker: tuple[str, str]) -> bool:
    try:
        return proc.environ().get(marker[0]) == marker[1]
    except Exception:  # gone, a zombie, or not ours to read
        return False


class _WindowsJob:
    """A Job object holding the child and everything it starts (KILL_ON_JOB_CLOSE also ends them if
    we die). No breakaway is allowed, so a browser the agent opens (a login) ends with the chat.
    Untested here: see the module's docstring."""

    _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
    _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
    _PROCESS_SET_QUOTA = 0x0100
    _PROCESS_TERMINATE = 0x0001

    def __init__(self, pid: int) -> None:
        self._handle: int | None = None
        try:
            self._handle = self._create(pid)
        except Exception:
            self._handle = None  # no job: `update` still records the tree

    def _create(self, pid: int) -> int | None:
        import ctypes
        from ctypes import wintypes

        kernel32 = _kernel32()
        kernel32.CreateJobObjectW.restype = wintypes.HANDLE
        kernel32.OpenProcess.restype = wintypes.HANDLE
        job = kernel32.CreateJobObjectW(None, None)
        if not job:
            return None
        info = _extended_limit_information(self._JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE)
        set_ok = kernel32.SetInformationJobObject(
            wintypes.HANDLE(job), self._JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info)
        )
        process = kernel32.OpenProcess(self._PROCESS_SET_QUOTA | self._PROCESS_TERMINATE, False, pid)
        assigned = (
            bool(process)
            and set_ok
            and kernel32.AssignProcessToJobObject(wintypes.HANDLE(job), wintypes.HANDLE(process))
        )
        if process:
            kernel32.CloseHandle(wintypes.HANDLE(process))
        if not assigned:
            kernel32.CloseHandle(wintypes.HANDLE(job))
            return None
        return int(job)

    def terminate(self) -> None:
        if self._handle is None:
            return
        from ctypes import wintypes

        kernel32 = _kernel32()
        kernel32.TerminateJobObject(wintypes.HANDLE(self._handle), 1)
        kernel32.CloseHandle(wintypes.HANDLE(self._handle))
        self._handle = None


def _kernel32() -> Any:
    """kernel32.dll (ctypes.WinDLL exists on Windows only: the platform check narrows it)."""
    if sys.platform == "win32":
        import ctypes

        return ctypes.WinDLL("kernel32", use_last_error=True)
    raise OSError("a Job object is Windows's")


def _extended_limit_information(flags: int) -> Any:
    """JOBOBJECT_EXTENDED_LIMIT_INFORMATION (winnt.h) with LimitFlags set."""
    import ctypes
    from ctypes import wintypes

    class IoCounters(ctypes.Structure):
        _fields_ = [(name, ctypes.c_ulonglong) for name in ("r", "w", "o", "rb", "wb", "ob")]

    class BasicLimits(ctypes.Structure):
        _fields_ = [
            ("PerProcessUserTimeLimit", ctypes.c_longlong),
            ("PerJobUserTimeLimit", ctypes.c_longlong),
            ("LimitFlags", wintypes.DWORD),
            ("MinimumWorkingSetSize", ctypes.c_size_t),
            ("MaximumWorkingSetSize", ctypes.c_size_t),
            ("ActiveProcessLimit", wintypes.DWORD),
            ("Affinity", ctypes.c_size_t),  # ULONG_PTR
            ("PriorityClass", wintypes.DWORD),
            ("SchedulingClass", wintypes.DWORD),
        ]

    class ExtendedLimits(ctypes.Structure):
        _fields_ = [
            ("BasicLimitInformation", BasicLimits),
            ("IoInfo", IoCounters),
            ("ProcessMemoryLimit", ctypes.c_size_t),
            ("JobMemoryLimit", ctypes.c_size_t),
            ("PeakProcessMemoryUsed", ctypes.c_size_t),
            ("PeakJobMemoryUsed", ctypes.c_size_t),
        ]

    info = ExtendedLimits()
    info.BasicLimitInformation.LimitFlags = flags
    return info
