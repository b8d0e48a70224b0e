#!/usr/bin/env python3
"""The two everyday commands, each installing what it needs (pinned) on first run.

    python3 dev.py serve [--diff-policy prompt|accept|reject] [--workspace DIR]
    python3 dev.py test  [pytest arguments]

Uses the newest Python >= 3.10 it can find, in a virtual environment at `.venv`; the real Gemini
CLI used by the conformance tests is installed with `npm ci` from `tests/conformance`.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(ROOT, ".venv")
CONFORMANCE = os.path.join(ROOT, "tests", "conformance")
MIN_PYTHON = (3, 10)


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    if not argv or argv[0] not in ("serve", "test"):
        if argv:
            print(f"dev.py: unknown command {argv[0]!r}; the commands are serve and test.", file=sys.stderr)
        print(__doc__, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "serve":
        python = ensure_venv("runtime.txt")
        return run_until_done([python, "-m", "companion", "serve", *rest])
    python = ensure_venv("dev.txt")
    ensure_node_modules()
    return run_tests(python, rest)


def run_until_done(cmd: list[str]) -> int:
    """Run `cmd` and return its exit code. Ctrl-C reaches the whole foreground process group, so the
    child gets it too and cleans up; this process only waits for it (no traceback of its own)."""
    child = subprocess.Popen(cmd, cwd=os.getcwd(), env=_env())
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def run_tests(python: str, pytest_args: list[str]) -> int:
    steps = [
        ("ruff", [python, "-m", "ruff", "check", "."]),
        ("pyright", [python, "-m", "pyright", "--project", "pyrightconfig.json"]),
        ("pytest", [python, "-m", "pytest", *pytest_args]),
    ]
    failed = []
    for name, cmd in steps:
        print(f"\n== {name}: {' '.join(cmd[2:])}", flush=True)
        if subprocess.call(cmd, cwd=ROOT, env=_env()) != 0:
            failed.append(name)
    if failed:
        print(f"\nFAILED: {', '.join(failed)}", flush=True)
        return 1
    print("\nAll checks passed.", flush=True)
    return 0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


# -- Python --


def find_python() -> str:
    """The newest interpreter >= 3.10 on PATH (python3.X names) or in pyenv's versions folder."""
    candidates: list[str] = []
    for minor in range(20, MIN_PYTHON[1] - 1, -1):
        for name in (f"python3.{minor}", f"py -3.{minor}"):
            found = shutil.which(name)
            if found:
                candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")), reverse=True)
    candidates += [c for c in (shutil.which("python3"), shutil.which("python"), sys.executable) if c]
    best: tuple[tuple[int, int], str] | None = None
    for candidate in candidates:
        version = _version(candidate)
        if version and version >= MIN_PYTHON and (best is None or version > best[0]):
            best = (version, candidate)
    if best is None:
        sys.exit("error: no Python 3.10 or newer found; install one (python.org) and run this again.")
    return best[1]


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.split()
        return (int(out[0]), int(out[1]))
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def venv_python() -> str:
    if os.name == "nt":
        return os.path.join(VENV, "Scripts", "python.exe")
    return os.path.join(VENV, "bin", "python")


def ensure_venv(lock: str) -> str:
    """Create `.venv` and install `requirements/<lock>` unless that exact lock is installed."""
    lock_path = os.path.join(ROOT, "requirements", lock)
    digest = _digest(lock_path, os.path.join(ROOT, "requirements", "runtime.txt"))
    marker = os.path.join(VENV, f".installed-{lock}")
    python = venv_python()
    if _read(marker) == digest and os.path.exists(python):
        return python
    if not os.path.exists(python):
        base = find_python()
        print(f"Creating .venv with {base} ...", flush=True)
        subprocess.check_call([base, "-m", "venv", VENV])
    print(f"Installing requirements/{lock} (pinned) ...", flush=True)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.check_call([*pip, "-r", lock_path])
    if lock == "dev.txt":
        # The 4213 stubs declare Python >= 3.13 but are plain .pyi files, usable from any version.
        subprocess.check_call([*pip, "--no-deps", "--ignore-requires-python", "sublime-text-stubs==4213.0"])
    with open(marker, "w") as handle:
        handle.write(digest)
    return python


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def _digest(*paths: str) -> str:
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            h.update(handle.read())
    return h.hexdigest()


# -- Node (the real Gemini CLI for the conformance tests) --


def ensure_node_modules() -> None:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        sys.exit("error: Node.js 20+ with npm is needed for the real Gemini CLI tests; install it and run this again.")
    major = re.match(r"v(\d+)", subprocess.run([node, "--version"], capture_output=True, text=True).stdout or "")
    if not major or int(major.group(1)) < 20:
        sys.exit("error: Node.js 20 or newer is needed for the real Gemini CLI tests.")
    lock = os.path.join(CONFORMANCE, "package-lock.json")
    marker = os.path.join(CONFORMANCE, "node_modules", ".installed-lock")
    digest = _digest(lock)
    if _read(marker) == digest:
        return
    print("Installing the pinned Gemini CLI for the conformance tests (npm ci) ...", flush=True)
    subprocess.check_call([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=CONFORMANCE)
    with open(marker, "w") as handle:
        handle.write(digest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
