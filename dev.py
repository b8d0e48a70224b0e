#!/usr/bin/env python3
"""The everyday commands, each installing what it needs (pinned) on first run.

    python3 dev.py serve [--diff-policy prompt|accept|reject] [--workspace DIR]
    python3 dev.py chat --workspace DIR [--diff-policy ...] [--prompt TEXT] (--agent gemini|claude | -- COMMAND ...)
    python3 dev.py changes|bridge|doctor ...   any other `python -m companion` command (`--help` for each)
    python3 dev.py test [--yes]              everything CI runs (below); --yes: no question before a system change
    python3 dev.py test [--lint] [pytest arguments]   pytest on this machine's Python only (--lint: ruff and
                                             pyright on the named files)
    python3 dev.py test --on 3.14|3.10 [pytest arguments]   pytest on that Python only
    python3 dev.py test --plan ...           what the run would do (downloads, system changes), and nothing else

`test` with no arguments runs, in order: ruff and pyright on the newest Python >= 3.10 found here
(in `.venv`); the whole suite on Python 3.14, the Python of Sublime Text's plugin host
(`.venv-3.14`); and the core, rooms, headless, bridge, hostile, conformance and ACP suites on Python 3.10,
the oldest the pip-installed bridge and headless companion support (`.venv-3.10`), with this
machine's Node. Python 3.14 is used from this machine when installed; otherwise, on Linux as root,
dev.py builds a Debian unstable root that has it (debootstrap, about 90 s, once; PY314_ROOT chooses
where) and runs the suite there on this folder, with Debian's Node. Where neither is possible, this
machine's Python runs the whole suite instead. The real Gemini CLI (the pinned one and the oldest
supported) and the other real agents are installed with `npm ci` under `tests/conformance`.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from typing import TextIO

ROOT = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(ROOT, "tests", "conformance")
# The real clients the conformance tests drive: Gemini CLI (pinned, and the oldest supported) and Claude Code.
NODE_PROJECTS = (
    CONFORMANCE,
    os.path.join(CONFORMANCE, "oldest"),
    os.path.join(CONFORMANCE, "claude"),
    os.path.join(CONFORMANCE, "acp_claude"),  # claude-agent-acp, for the ACP chat tests (tests/acp)
    os.path.join(CONFORMANCE, "qwen_code"),  # Qwen Code and opencode, two ACP registry agents for tests/acp
    os.path.join(CONFORMANCE, "opencode"),
    os.path.join(CONFORMANCE, "codex"),  # Codex (codex-acp), a registry agent that edits through one multi-file patch
    os.path.join(ROOT, "tests", "mcp_tools", "cmd_shim"),  # npm's cmd-shim, for the Windows batch-shim tests
)
MIN_PYTHON = (3, 10)
SUBLIME_PYTHON = (3, 14)

# The suites that cover what a pip install offers (the bridge and the headless companion): the
# Sublime adapter, the fake Sublime and the packaging tools need Sublime's Python.
PIP_SUITES = [
    "tests/core",
    "tests/gemini_ide",
    "tests/claude_ide",
    "tests/mcp_tools",
    "tests/headless",
    "tests/project",
    "tests/test_runtime.py",
    "tests/test_agents_alone.py",
    "tests/hostile",
    "tests/conformance",
    "tests/acp",
    "tests/packaging/test_wheel.py",
]
# Inside the Python 3.14 root: only pytest runs there (ruff and pyright already ran on the host).
INNER = "DEV_PY_INNER_VENV"
PY314_ROOT = os.environ.get("PY314_ROOT", "/var/tmp/gemini-companion-py314")
DEBIAN_MIRROR = "http://deb.debian.org/debian"


# Every `python -m companion` subcommand: dev.py installs the runtime pins, then runs it.
COMPANION_COMMANDS = ("serve", "chat", "changes", "bridge", "doctor")


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    if not argv or argv[0] not in (*COMPANION_COMMANDS, "test"):
        if argv:
            commands = ", ".join(COMPANION_COMMANDS)
            print(f"dev.py: unknown command {argv[0]!r}; the commands are {commands} and test.", file=sys.stderr)
        print(__doc__, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if os.environ.get(INNER):
        # Inside the Python 3.14 root, where this folder is shared with the host: never touch the
        # host's environments, whatever the command (the suite runs `dev.py serve` too).
        if command in COMPANION_COMMANDS:
            python = ensure_venv(os.environ[INNER], sys.executable, "dev.txt", quiet=True)
            return run_companion([python, "-m", "companion", command, *rest])
    elif command in COMPANION_COMMANDS:
        # Progress goes to stderr: `bridge` speaks MCP on stdout.
        python = ensure_venv(".venv", find_python(), "runtime.txt", quiet=True)
        return run_companion([python, "-m", "companion", command, *rest])
    try:
        if os.environ.get(INNER):
            return run_pytest(ensure_venv(os.environ[INNER], sys.executable, "dev.txt"), rest)
        return run_tests(rest)
    except KeyboardInterrupt:
        print("\ndev.py test: interrupted (Ctrl-C); nothing more was run.", file=sys.stderr, flush=True)
        return 130


def run_tests(rest: list[str]) -> int:
    """`dev.py test [--yes] [--plan] [--lint] [--on 3.14|3.10] [pytest arguments]`: the plan first
    (`--plan`: only the plan), then the runs."""
    yes, plan_only, lint = _take(rest, "--yes"), _take(rest, "--plan"), _take(rest, "--lint")
    on = ""
    if rest[:1] == ["--on"]:
        if len(rest) < 2 or rest[1] not in ("3.14", "3.10"):
            print("dev.py: --on takes 3.14 or 3.10.", file=sys.stderr)
            return 2
        on, rest = rest[1], rest[2:]
    legs = {"3.14": ["Python 3.14"], "3.10": ["Python 3.10"]}.get(on) or (
        ["this machine's Python"] if rest else ["this machine's Python", "Python 3.14", "Python 3.10"]
    )
    plan = print_plan(plan_for(legs, rest, lint=lint or not rest))
    if plan_only:
        return 0
    if not go_ahead(plan, yes):
        return 1
    if on:
        if needs_node(rest):
            ensure_node_modules()
        return (test_on_314 if on == "3.14" else test_on_310)(rest)
    if rest:
        return test_here(rest, lint_paths=_paths(rest) if lint else None)
    return test_everywhere()


def _take(args: list[str], flag: str) -> bool:
    """Remove dev.py's own `flag` from `args` (before a `--`, which passes the rest to pytest)."""
    end = args.index("--") if "--" in args else len(args)
    if flag in args[:end]:
        args.remove(flag)
        return True
    return False


def run_companion(cmd: list[str]) -> int:
    """Become `cmd` (POSIX: exec, same process id): every signal (SIGTERM from `kill` or CI, SIGHUP
    from a closed terminal, SIGQUIT, Ctrl-C) then reaches the companion itself, which stops its
    agents and removes its discovery file; a parent of its own would die and leave them running."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name != "nt":
        os.execve(cmd[0], cmd, _env())
    return run_until_done(cmd)


def run_until_done(cmd: list[str]) -> int:
    """Windows, which has no exec: run `cmd` and return its exit code. Ctrl-C and Ctrl-Break reach the
    whole console, so the child gets them too and cleans up; SIGTERM is passed on to it."""
    child = subprocess.Popen(cmd, cwd=os.getcwd(), env=_env())
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


# -- the test runs --


def test_everywhere() -> int:
    """What CI runs: every leg, even after one fails, then one summary line per leg.

    Each suite runs on the two ends that matter: Sublime's Python 3.14 (everything, in the Debian root
    with Debian's Node) and 3.10, the oldest a pip install supports (what pip offers, with this
    machine's Node); this machine's Python, in between, runs ruff and pyright. Where Python 3.14
    cannot run here at all, this machine's Python runs the whole suite instead (and the 3.14 leg says
    why it failed). Ctrl-C stops the leg that runs and prints the summary so far."""
    whole_suite_here = not can_test_on_314()
    ensure_node_modules()
    legs = [
        ("this machine's Python", lambda: test_here([], with_pytest=whole_suite_here, lint_paths=["."])),
        ("Python 3.14", lambda: test_on_314([])),
        ("Python 3.10", lambda: test_on_310([])),
    ]
    results: list[tuple[str, str, float]] = []
    interrupted = False
    for name, leg in legs:
        started = time.monotonic()
        try:
            outcome = "passed" if leg() == 0 else "FAILED"
        except KeyboardInterrupt:
            outcome, interrupted = "interrupted", True
        results.append((name, outcome, time.monotonic() - started))
        if interrupted:
            print("\ndev.py test: interrupted (Ctrl-C); the legs after it were not run.", file=sys.stderr, flush=True)
            break
    print("\n== summary", flush=True)
    for name, outcome, seconds in results:
        print(f"  {outcome}  {name}  ({seconds / 60:.1f} min)", flush=True)
    if interrupted:
        return 130
    if any(outcome != "passed" for _, outcome, _ in results):
        return 1
    print("\nAll checks passed.", flush=True)
    return 0


def test_here(pytest_args: list[str], with_pytest: bool = True, lint_paths: list[str] | None = None) -> int:
    """pytest with `pytest_args` on this machine's Python; ruff and pyright first on `lint_paths`
    (`.`: everything) when given. Node's clients are installed only when the tests need them."""
    python = ensure_venv(".venv", find_python(), "dev.txt")
    if with_pytest and needs_node(pytest_args):
        ensure_node_modules()
    steps = []
    if lint_paths:
        steps.append(("ruff", [python, "-m", "ruff", "check", *lint_paths]))
        files = [] if lint_paths == ["."] else lint_paths
        steps.append(("pyright", [python, "-m", "pyright", "--project", "pyrightconfig.json", *files]))
    if with_pytest:
        steps.append(("pytest", [python, "-m", "pytest", *pytest_args]))
    failed = []
    for name, cmd in steps:
        print(f"\n== {name} ({_version_text(python)}): {' '.join(cmd[2:])}", flush=True)
        if subprocess.call(cmd, cwd=ROOT, env=_env()) != 0:
            failed.append(name)
    if failed:
        print(f"\nFAILED: {', '.join(failed)}", flush=True)
        return 1
    return 0


# Test files that need the pinned Node clients (npm ci under tests/conformance): they, or a conftest.py
# above them, name those clients.
_NODE_USE = re.compile(r"node_modules|tests\.conformance|claude_client|cmd_shim|require_node_modules")


def _paths(pytest_args: list[str]) -> list[str]:
    """The files and folders among pytest's arguments (a node id's `::` part dropped)."""
    paths = [arg.split("::")[0] for arg in pytest_args if not arg.startswith("-")]
    return [path for path in paths if os.path.exists(os.path.join(ROOT, path))]


def needs_node(pytest_args: list[str]) -> bool:
    """Whether the tests named in `pytest_args` need the Node clients: all tests (no path named) do."""
    paths = _paths(pytest_args)
    if not paths:
        return True
    for path in paths:
        full = os.path.abspath(os.path.join(ROOT, path))
        files = glob.glob(os.path.join(full, "**", "*.py"), recursive=True) if os.path.isdir(full) else [full]
        folder = full if os.path.isdir(full) else os.path.dirname(full)
        while folder.startswith(os.path.join(ROOT, "tests")):
            files.append(os.path.join(folder, "conftest.py"))
            folder = os.path.dirname(folder)
        if any(_NODE_USE.search(_read(file) or "") for file in files):
            return True
    return False


# -- the plan, printed before anything runs --


class Plan:
    def __init__(self) -> None:
        self.steps: list[str] = []
        self.downloads: list[str] = []
        self.system_changes: list[str] = []


def plan_for(legs: list[str], pytest_args: list[str], lint: bool = True) -> Plan:
    """What `dev.py test` will do on this machine, read from it without changing anything."""
    plan = Plan()
    whole = not pytest_args
    if "this machine's Python" in legs:
        here = find_python(required=False) or "python3"
        what = "ruff and pyright" if whole else ("pytest (ruff and pyright on the named files)" if lint else "pytest")
        if whole and not can_test_on_314():
            what += ", then the whole suite (no Python 3.14 here)"
        plan.steps.append(f"{what} on {_version_text(here)} in .venv" + (" (about 2 min)" if whole else ""))
        _plan_venv(plan, ".venv", "dev.txt")
    if "Python 3.14" in legs:
        native = find_python(exactly=SUBLIME_PYTHON, required=False)
        where = "this machine's Python 3.14 in .venv-3.14" if native else f"a Debian unstable root ({PY314_ROOT})"
        plan.steps.append(
            f"the {'whole suite' if whole else 'named tests'} on {where}" + (" (about 35 min)" if whole else "")
        )
        if not native and not _why_no_debian_root():
            _plan_debian_root(plan)
    if "Python 3.10" in legs:
        plan.steps.append("the core, rooms, headless, hostile, conformance and ACP suites on Python 3.10 in .venv-3.10"
                          " (about 20 min)")  # fmt: skip
        _plan_venv(plan, ".venv-3.10", "test-py310.txt")
    if len(legs) == 3:
        plan.steps.append("about 60 min in all on a 2-core machine; each leg runs even after one fails")
    if needs_node(pytest_args):
        missing = [p for p in NODE_PROJECTS if _read(os.path.join(p, "node_modules", ".installed-lock")) is None]
        if missing:
            plan.downloads.append(f"npm ci in {len(missing)} Node projects under tests/ (about 2.2 GB in all)")
    return plan


def _plan_venv(plan: Plan, name: str, lock: str) -> None:
    if not os.path.exists(os.path.join(ROOT, name)):
        plan.downloads.append(f"the pinned Python packages of requirements/{lock} into {name} (about 150 MB)")


def _plan_debian_root(plan: Plan) -> None:
    if not os.path.exists(os.path.join(PY314_ROOT, "usr", "bin", "python3.14")):
        if not shutil.which("debootstrap"):
            plan.system_changes.append("apt-get install debootstrap (a system package)")
        plan.system_changes.append(f"build a Debian unstable root with Python 3.14 and Node in {PY314_ROOT} "
                                   "(debootstrap, about 90 s, once)")  # fmt: skip
        plan.downloads.append(f"Debian unstable packages from {DEBIAN_MIRROR} (about 150 MB)")
    plan.system_changes.append(f"bind-mount /proc, /sys, /dev, /dev/pts and this folder into {PY314_ROOT} "
                               "while the Python 3.14 leg runs (unmounted after)")  # fmt: skip


def print_plan(plan: Plan) -> Plan:
    print("dev.py test will run:", flush=True)
    for step in plan.steps:
        print(f"  - {step}", flush=True)
    for title, items in (("downloads", plan.downloads), ("system changes (as root)", plan.system_changes)):
        if items:
            print(f"{title}:", flush=True)
            for item in items:
                print(f"  - {item}", flush=True)
    return plan


def go_ahead(plan: Plan, yes: bool, stdin: TextIO | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether to make the plan's system changes: asked on a terminal (`--yes` skips the question);
    without one (CI) the printed plan is the notice and the run goes on."""
    stdin = stdin or sys.stdin
    env = os.environ if env is None else env
    if not plan.system_changes or yes:
        return True
    if env.get("CI") or not stdin.isatty():
        print("No terminal to ask on: going on (the plan above says what changes).", flush=True)
        return True
    print("Make these system changes? [y/N] ", end="", flush=True)
    answer = stdin.readline().strip().lower()
    if answer in ("y", "yes"):
        return True
    print("Nothing was changed. `python3 dev.py test tests/...` runs pytest on this machine's Python only;"
          " `--yes` skips this question.", flush=True)  # fmt: skip
    return False


def test_on_310(pytest_args: list[str]) -> int:
    base = find_python(exactly=MIN_PYTHON)
    python = ensure_venv(".venv-3.10", base, "test-py310.txt")
    return run_pytest(python, pytest_args or PIP_SUITES)


def can_test_on_314() -> bool:
    return bool(find_python(exactly=SUBLIME_PYTHON, required=False)) or not _why_no_debian_root()


def test_on_314(pytest_args: list[str]) -> int:
    native = find_python(exactly=SUBLIME_PYTHON, required=False)
    if native:
        return run_pytest(ensure_venv(".venv-3.14", native, "dev.txt"), pytest_args)
    problem = _why_no_debian_root()
    if problem:
        print(f"\nerror: Python 3.14 is not installed here, and {problem}. Install Python 3.14 "
              "(python.org), or run `python3 dev.py test <pytest arguments>` to test on this Python only.",
              file=sys.stderr, flush=True)  # fmt: skip
        return 1
    with debian_root_lock():
        ensure_debian_root()
        return run_in_debian_root(pytest_args)


def run_pytest(python: str, pytest_args: list[str]) -> int:
    cmd = [python, "-m", "pytest", *pytest_args]
    print(f"\n== pytest ({_version_text(python)}): {' '.join(cmd[2:])}", flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=_env())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


# -- Python --


def find_python(exactly: tuple[int, int] | None = None, required: bool = True) -> str:
    """The newest interpreter >= 3.10 (or the one of version `exactly`) on PATH (python3.X names) or in
    pyenv's versions folder."""
    candidates: list[str] = []
    for minor in range(20, MIN_PYTHON[1] - 1, -1):
        found = shutil.which(f"python3.{minor}")
        if found:
            candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")), reverse=True)
    candidates += [c for c in (shutil.which("python3"), shutil.which("python"), sys.executable) if c]
    best: tuple[tuple[int, int], str] | None = None
    for candidate in candidates:
        version = _version(candidate)
        if version is None or version < MIN_PYTHON or (exactly and version != exactly):
            continue
        if best is None or version > best[0]:
            best = (version, candidate)
    if best is not None:
        return best[1]
    if not required:
        return ""
    wanted = f"Python {exactly[0]}.{exactly[1]}" if exactly else "Python 3.10 or newer"
    sys.exit(f"error: {wanted} was not found; install it (python.org or pyenv) and run this again.")


@functools.cache  # find_python asks about the same interpreters for every leg
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


def _version_text(python: str) -> str:
    version = _version(python)
    return f"Python {version[0]}.{version[1]}" if version else python


def ensure_venv(name: str, base: str, lock: str, quiet: bool = False) -> str:
    """Create the virtual environment `name` with `base` and install `requirements/<lock>`, unless that
    exact lock (or dev.txt, which includes runtime.txt) is installed already. Returns its Python.
    `quiet`: progress and pip's output go to stderr, stdout stays the command's own."""
    venv = os.path.join(ROOT, name)
    python = os.path.join(venv, "Scripts", "python.exe") if os.name == "nt" else os.path.join(venv, "bin", "python")
    lock_path = os.path.join(ROOT, "requirements", lock)
    digest = _digest(*sorted(glob.glob(os.path.join(ROOT, "requirements", "*.txt"))))
    marker = os.path.join(venv, f".installed-{lock}")
    out = sys.stderr if quiet else sys.stdout
    if os.path.exists(python) and _version(python) != _version(base):
        print(f"Removing {name}: it was made with another Python ...", file=out, flush=True)
        shutil.rmtree(venv)
    supersets = [marker] + ([os.path.join(venv, ".installed-dev.txt")] if lock == "runtime.txt" else [])
    if any(_read(path) == digest for path in supersets) and os.path.exists(python):
        return python
    if not os.path.exists(python):
        print(f"Creating {name} with {base} ...", file=out, flush=True)
        subprocess.check_call([base, "-m", "venv", venv], stdout=out)
    print(f"Installing requirements/{lock} (pinned) into {name} ...", file=out, flush=True)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.check_call([*pip, "-r", lock_path], stdout=out)
    if lock == "dev.txt":
        # The 4213 stubs declare Python >= 3.13 but are plain .pyi files, usable from any version.
        subprocess.check_call([*pip, "--no-deps", "--ignore-requires-python", "sublime-text-stubs==4213.0"], stdout=out)
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


# -- Python 3.14 in a Debian unstable root (Linux, as root) --


def _why_no_debian_root() -> str:
    if not sys.platform.startswith("linux"):
        return "dev.py can only build it on Linux"
    if os.geteuid() != 0:
        return "dev.py can only build it when run as root (it uses debootstrap, mount and chroot)"
    if not shutil.which("debootstrap") and not shutil.which("apt-get"):
        return "debootstrap is not installed"
    return ""


@contextlib.contextmanager
def debian_root_lock(out: TextIO | None = None) -> Iterator[None]:
    """One `dev.py test` at a time in the root: each bind-mounts its own folder at /src and unmounts
    it when done, so a second run would test (and unmount) the first one's folder. Waits, saying so."""
    import fcntl

    out = out or sys.stdout
    with open(PY314_ROOT + ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"Another `dev.py test` is using the Python 3.14 root {PY314_ROOT}; waiting for it to finish "
                  "(or set PY314_ROOT to another folder to run both at once) ...", file=out, flush=True)  # fmt: skip
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_debian_root() -> None:
    """Debian unstable, which ships python3.14 and Node. Its npm is not used: the host's `npm ci`
    already installed the Gemini CLI, plain JavaScript that the root's Node runs."""
    if os.path.exists(os.path.join(PY314_ROOT, "usr", "bin", "python3.14")):
        return
    if not shutil.which("debootstrap"):
        print("Installing debootstrap (apt-get) ...", flush=True)
        subprocess.check_call(["apt-get", "update", "-qq"], stdout=subprocess.DEVNULL)
        subprocess.check_call(["apt-get", "install", "-y", "-qq", "debootstrap"], stdout=subprocess.DEVNULL)
    partial = PY314_ROOT + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    print(f"Building a Debian unstable root with Python 3.14 and Node in {PY314_ROOT} (once, ~90 s) ...", flush=True)
    packages = "python3.14,python3.14-venv,ca-certificates,nodejs,git"
    command = ["debootstrap", "--variant=minbase", f"--include={packages}", "sid", partial, DEBIAN_MIRROR]
    for attempt in (1, 2):  # a mirror hiccup (a file that changed while it was fetched) passes on a retry
        if subprocess.call(command, stdout=subprocess.DEVNULL) == 0:
            break
        shutil.rmtree(partial, ignore_errors=True)
        if attempt == 2:
            sys.exit(f"error: debootstrap could not build the Python 3.14 root from {DEBIAN_MIRROR} (twice).")
        print("debootstrap failed; trying once more ...", flush=True)
    os.rename(partial, PY314_ROOT)


def run_in_debian_root(pytest_args: list[str]) -> int:
    """Run this folder's suite on the root's Python 3.14: the folder is bind-mounted at /src and dev.py
    runs again inside, in `.venv-3.14`."""
    for name in ("ssl/certs/ca-certificates.crt", "resolv.conf"):  # a local proxy's CA, the resolver
        if os.path.exists(os.path.join("/etc", name)):
            shutil.copyfile(os.path.join("/etc", name), os.path.join(PY314_ROOT, "etc", name))
    mounted: list[str] = []
    try:
        for source, target in [
            ("/proc", "proc"),
            ("/sys", "sys"),
            ("/dev", "dev"),
            ("/dev/pts", "dev/pts"),
            (ROOT, "src"),
        ]:
            path = os.path.join(PY314_ROOT, target)
            os.makedirs(path, exist_ok=True)
            if not os.path.ismount(path):
                subprocess.check_call(["mount", "--bind", source, path])
                mounted.append(path)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root", "LANG": "C.UTF-8"}
        env[INNER] = ".venv-3.14-debian"
        for name in ("PIP_INDEX_URL", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
            if name in os.environ:
                env[name] = os.environ[name]
        chroot = shutil.which("chroot") or "/usr/sbin/chroot"
        cmd = [chroot, PY314_ROOT, "python3.14", "/src/dev.py", "test", *pytest_args]
        return _call_until_done(cmd, env)
    finally:
        for path in reversed(mounted):
            if subprocess.call(["umount", path], stderr=subprocess.DEVNULL) != 0:
                subprocess.call(["umount", "--lazy", path])  # still busy: detach now, free when idle


def _call_until_done(cmd: list[str], env: dict[str, str]) -> int:
    """Run `cmd` in its own process group; Ctrl-C and SIGTERM (CI cancelling, `kill`) are passed to
    the whole group, so nothing keeps running in the root when the caller unmounts it."""
    child = subprocess.Popen(cmd, env=env, start_new_session=True)
    previous = signal.signal(signal.SIGTERM, lambda *_: os.killpg(child.pid, signal.SIGTERM))
    interrupted = False
    try:
        while True:
            try:
                code = child.wait()
                if interrupted:  # after the root's processes ended (the caller unmounts): stop the run
                    raise KeyboardInterrupt
                return code
            except KeyboardInterrupt:
                if child.poll() is not None:
                    raise
                interrupted = True
                os.killpg(child.pid, signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- Node (the real Gemini CLI for the conformance tests) --


def ensure_node_modules() -> None:
    node = shutil.which("node")
    npm = shutil.which("npm")
    if not node or not npm:
        sys.exit("error: Node.js 20+ with npm is needed for the real Gemini CLI tests; install it and run this again.")
    major = re.match(r"v(\d+)", subprocess.run([node, "--version"], capture_output=True, text=True).stdout or "")
    if not major or int(major.group(1)) < 20:
        sys.exit("error: Node.js 20 or newer is needed for the real Gemini CLI tests.")
    for project in NODE_PROJECTS:
        lock = os.path.join(project, "package-lock.json")
        marker = os.path.join(project, "node_modules", ".installed-lock")
        digest = _digest(lock)
        if _read(marker) == digest:
            continue
        print(f"Installing the pinned client in {os.path.relpath(project, ROOT)} (npm ci) ...", flush=True)
        subprocess.check_call([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=project)
        with open(marker, "w") as handle:
            handle.write(digest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
