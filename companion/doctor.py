"""The "Status and Troubleshooting" report: what is running, what is wrong, and how to fix it.

Pure text from facts the editor gathers; it never contains the auth token.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import sys
from dataclasses import dataclass, field, replace

from .core.troubleshooting import troubleshooting
from .mcp_tools.gemini_trust import TRUST_FIX, FolderTrust, folder_trust

# Where the package and the libraries the default Package Control channel lacks are registered
# (repository.json in the project); users add it with "Package Control: Add Repository".
REPOSITORY_URL = "https://raw.githubusercontent.com/gemini-companion/sublime-gemini-companion/main/repository.json"

# Every library the package imports at run time (dependencies.json lists the same names), with
# the versions the rest of the set needs (the lower bounds its metadata declares for Python 3.14;
# mcp exactly: its 2.x entry points change between releases). pydantic-core must be exactly the
# one the installed pydantic names (see library_requirements).
REQUIRED = {
    "mcp": "==2.3.0",
    "mcp-types": "==2.3.0",
    "uvicorn": ">=0.31.1",
    "starlette": ">=0.49.1",
    "sse-starlette": ">=3.0.0",
    "python-multipart": ">=0.0.9",
    "pydantic": ">=2.12.0",
    "pydantic-core": "",
    "typing-extensions": ">=4.16.0",
    "typing-inspection": ">=0.4.4",
    "annotated-types": ">=0.6.0",
    "anyio": ">=4.10,<5",
    "idna": ">=3.18",
    "h11": ">=0.16.0",
    "wsproto": ">=1.2.0",  # uvicorn's WebSocket protocol, for Claude Code's side
    "click": ">=7.0",
    "httpx2": ">=2.10.0",
    "opentelemetry-api": ">=1.28.0",
    "cryptography": "",
    "cffi": ">=2.0.0",
    "psutil": "",
    # The ACP client (chat), loaded on the first chat only; exactly, as for mcp: its 0.x API changes.
    "agent-client-protocol": "==0.12.1",
    # The OS trust store for New Chat's registry fetch, imported on that fetch only (httpx2 needs >=0.10).
    "truststore": ">=0.10",
}
# Windows only: mcp imports these pywin32 modules when it is imported there (see pywin32_path).
WINDOWS_REQUIRED = {"pywin32": ""}
PYWIN32_MODULES = ("pywintypes", "win32api", "win32con", "win32job")
# Optional: without psutil (or with a broken build) PID checks fall back to the standard library;
# without truststore the registry fetch trusts Python's certificates (New Chat says so when it fails).
OPTIONAL = ("psutil", "truststore")


def required_libraries(platform: str = sys.platform) -> dict[str, str]:
    """REQUIRED, plus what this platform alone needs (dependencies.json lists the same per platform)."""
    return {**REQUIRED, **(WINDOWS_REQUIRED if platform == "win32" else {})}


LIBRARIES = tuple(required_libraries())


def library_requirements() -> dict[str, str]:
    """The required libraries, with pydantic-core pinned to the version the installed pydantic requires."""
    required = required_libraries()
    try:
        for text in importlib.metadata.requires("pydantic") or []:
            match = re.match(r"pydantic[-_]core\s*==\s*([\w.]+)\s*$", text, re.IGNORECASE)
            if match:
                required["pydantic-core"] = f"=={match.group(1)}"
    except importlib.metadata.PackageNotFoundError:
        pass
    return required


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
    return tuple(parts)


def satisfies(version: str, spec: str) -> bool:
    """`version` meets every clause of `spec` (`==`, `>=`, `<`, comma-separated; release numbers only)."""
    have = _release(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op, want = re.match(r"(==|>=|<)\s*(.+)", clause).groups()  # type: ignore[union-attr]
        target = _release(want)
        width = max(len(have), len(target))
        a, b = have + (0,) * (width - len(have)), target + (0,) * (width - len(target))
        if (op == "==" and a != b) or (op == ">=" and a < b) or (op == "<" and a >= b):
            return False
    return True


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (pydantic_core and pydantic-core are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def library_issues(
    libraries: dict[str, str | None], required: dict[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """(missing, wrong): names of required libraries that are not installed, and
    "name version (needs spec)" for those whose version the set cannot work with."""
    required = library_requirements() if required is None else required
    missing = [n for n, v in libraries.items() if v is None and n not in OPTIONAL]
    wrong = [
        f"{n} {v} (needs {required[n]})"
        for n, v in libraries.items()
        if v is not None and required.get(n) and not satisfies(v, required[n])
    ]
    return missing, wrong


@functools.cache
def broken_libraries(platform: str = sys.platform) -> list[str]:
    """Installed libraries that cannot be imported, as "name version (why)". Only pywin32 is tried:
    its modules are reachable only once its folders are on `sys.path` and its DLLs found, which
    metadata cannot show. Importing it loads a few DLLs, so the answer is remembered: the library
    check at start-up pays for it on the loop thread, and the doctor view (main thread) reads it.
    Libraries only change when Sublime Text restarts."""
    if platform != "win32":
        return []
    from .core.system.pywin32_path import make_importable

    make_importable(platform)
    for module in PYWIN32_MODULES:
        try:
            __import__(module)
        except Exception as exc:
            version = library_versions(("pywin32",))["pywin32"]
            if version is None:
                return []  # missing: library_issues says so
            return [f"pywin32 {version} (installed, but `import {module}` fails: {exc})"]
    return []


def split_wrong(wrong: list[str]) -> tuple[list[str], list[str]]:
    """(outdated, broken): library_issues' "(needs …)" entries, and broken_libraries' ones."""
    outdated = [w for w in wrong if "(needs " in w]
    return outdated, [w for w in wrong if w not in outdated]


def library_fix(restart: bool = False) -> str:
    """What to do about missing or wrong libraries. `restart`: an older version of one of them is
    already imported in the plugin host, so only a restart can replace it; otherwise the companion
    starts by itself once Package Control has installed them."""
    then = (
        "then restart Sublime Text (an older version is already loaded)"
        if restart
        else "the companion starts by itself once they are installed, no restart needed"
    )
    return (
        f"Run “Package Control: Satisfy Libraries”; {then}. If Package Control says a library is not available, "
        f"add the package's repository first (“Package Control: Add Repository”, {REPOSITORY_URL})."
    )


def installed_distributions() -> frozenset[str]:
    """The `*.dist-info` folders of every folder on `sys.path`: Package Control installs or upgrades a
    library by replacing its `name-version.dist-info`, so a new listing means a library changed."""
    found: set[str] = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                found.update(os.path.join(entry, e.name) for e in listing if e.name.endswith(".dist-info"))
        except OSError:
            continue  # a zip file, or a folder that is not there
    return frozenset(found)


def loaded_libraries(names: list[str]) -> list[str]:
    """Those of the distributions `names` that have a module imported in this process already (by
    another package, or an earlier load of ours): a new version cannot replace it until a restart."""
    if not names:
        return []
    modules_of: dict[str, set[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            modules_of.setdefault(canonical(dist), set()).add(module)
    return [name for name in names if any(m in sys.modules for m in modules_of.get(canonical(name), ()))]


def upgraded_while_loaded(started_with: dict[str, str | None], now: dict[str, str | None]) -> list[str]:
    """The libraries whose installed version changed since the servers started, as "name old → new".
    Their old modules are still imported: running on would mix old and new code."""
    return [
        f"{name} {started_with[name] or 'missing'} → {now.get(name) or 'removed'}"
        for name in started_with
        if now.get(name) != started_with[name]
    ]


def _more(entry: str) -> str:
    return f" More: {troubleshooting(entry)}"


@dataclass
class DiscoveryCheck:
    path: str
    exists: bool = False
    owned_by_us: bool = False
    mode: int | None = None

    @property
    def private(self) -> bool:
        return self.mode is None or self.mode & 0o077 == 0

    @staticmethod
    def of(path: str) -> DiscoveryCheck:
        check = DiscoveryCheck(path)
        if not path:
            return check
        try:
            st = os.stat(path)
        except OSError:
            return check
        check.exists = True
        check.owned_by_us = sys.platform == "win32" or st.st_uid == os.getuid()
        check.mode = None if sys.platform == "win32" else st.st_mode & 0o777
        return check


@dataclass
class Facts:
    build: str
    platform: str
    python: str
    server_state: str  # "listening", "starting", "failed: …", "stopped"
    url: str
    discovery: DiscoveryCheck
    workspace_path: str
    clients: list[str]
    paused: bool
    last_context: list[str]
    libraries: dict[str, str | None]
    terminus_installed: bool
    excluded_patterns: list[str] = field(default_factory=list)
    broken_libraries: list[str] = field(default_factory=list)  # see broken_libraries()
    restart_needed: bool = False  # an older version of a wrong library is already imported
    upgraded: list[str] = field(default_factory=list)  # see upgraded_while_loaded(): the servers stopped
    tmpdir: str = ""  # Node's os.tmpdir() as Sublime's environment gives it: where discovery files go
    editor_pid: int | None = None  # the PID discovery files are named after (the plugin host's parent)
    gemini_command: list[str] = field(default_factory=list)  # as Open Gemini CLI runs it (`~` expanded)
    # Folders this window shares with other windows (the same folder, or one inside the other): a CLI
    # started there outside Sublime may connect to either window.
    shared_folders: list[str] = field(default_factory=list)
    serves_gemini: bool = True
    serves_claude: bool = False
    lock: DiscoveryCheck = field(default_factory=lambda: DiscoveryCheck(""))  # Claude Code's lock file
    lock_problem: str = ""  # why the lock file could not be written
    discovery_problem: str = ""  # why the discovery file was not written (its folder was refused)
    claude_clients: list[str] = field(default_factory=list)
    claude_command: list[str] = field(default_factory=list)
    # Gemini CLI's trust of the folder ask_gemini runs in (the first), as its files say; None: not read
    gemini_trust: FolderTrust | None = None


def shared_folders(mine: list[str], others: list[list[str]]) -> list[str]:
    """Those of `mine` that another window's folders equal, contain or sit inside."""

    def overlaps(a: str, b: str) -> bool:
        a, b = os.path.normcase(os.path.normpath(a)), os.path.normcase(os.path.normpath(b))
        return a == b or a.startswith(b.rstrip(os.sep) + os.sep) or b.startswith(a.rstrip(os.sep) + os.sep)

    return [folder for folder in mine if any(overlaps(folder, other) for window in others for other in window)]


def with_disk_facts(facts: Facts) -> Facts:
    """`facts` with what only the disk can tell: the libraries' versions (and whether pywin32
    imports), and the discovery file's owner and mode. Milliseconds: off the main thread."""
    return replace(
        facts,
        libraries=library_versions(),
        broken_libraries=broken_libraries(),
        discovery=DiscoveryCheck.of(facts.discovery.path) if facts.discovery.path else facts.discovery,
        lock=DiscoveryCheck.of(facts.lock.path) if facts.lock.path else facts.lock,
        gemini_trust=_ask_folder_trust(facts.workspace_path),
    )


def _ask_folder(workspace_path: str) -> str:
    """The folder ask_gemini runs in: the window's first."""
    return workspace_path.split(os.pathsep)[0] if workspace_path else ""


def _ask_folder_trust(workspace_path: str) -> FolderTrust | None:
    folder = _ask_folder(workspace_path)
    return folder_trust(folder) if folder else None


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def problems(facts: Facts) -> list[str]:
    """Each problem found, with what to do about it."""
    found: list[str] = []
    if facts.upgraded:
        found.append(
            f"Package Control changed libraries while Sublime Text was running ({', '.join(facts.upgraded)}). "
            "The old versions are still loaded, so the companion stopped rather than mix old and new code. "
            "Restart Sublime Text." + _more("the-package-is-inactive")
        )
        return found
    missing, outdated = library_issues(facts.libraries)
    broken = facts.broken_libraries
    if missing or outdated or broken:
        what = [f"missing: {', '.join(missing)}"] if missing else []
        what += [f"wrong version: {', '.join(outdated)}"] if outdated else []
        what += [f"cannot be loaded: {', '.join(broken)}"] if broken else []
        fix = library_fix(facts.restart_needed)
        found.append(f"Libraries {'; '.join(what)}. {fix}" + _more("the-package-is-inactive"))
        return found  # the companion does not start without them: nothing else can be judged yet
    if facts.server_state != "listening":
        found.append(
            f"The server is {facts.server_state}. Check the console (View > Show Console) for the reason, "
            "then reload the package (or restart Sublime Text)." + _more("the-package-is-inactive")
        )
    found += claude_problems(facts)
    if facts.discovery_problem:
        found.append(facts.discovery_problem + _more("security"))
    elif facts.server_state == "listening" and not facts.discovery.exists:
        found.append(
            "The discovery file is missing, so Gemini CLI cannot find this window. Reload the package; "
            "if it stays missing, check that the temporary folder is writable." + _more("gemini-cli-does-not-connect")
        )
    if facts.discovery.exists and not facts.discovery.owned_by_us:
        found.append(
            "The discovery file belongs to another user; Gemini CLI ignores it. Delete it and reload the package."
            + _more("security")
        )
    if facts.discovery.exists and not facts.discovery.private:
        found.append(
            "The discovery file is readable by other users. Delete it and reload the package." + _more("security")
        )
    if not facts.workspace_path:
        found.append(
            "This window has no folder. Open one (File > Open Folder…): Gemini CLI connects only when it runs "
            "inside one of the window's folders." + _more("directory-mismatch")
        )
    if facts.server_state == "listening" and facts.workspace_path and not facts.clients and facts.serves_gemini:
        found.append(
            "No Gemini CLI is connected. Start `gemini` inside one of the folders above (Command Palette: "
            "“Gemini Companion: Open Gemini CLI”, or any terminal). The first time, type `/ide enable` in Gemini CLI. "
            "If it reports “Directory mismatch”, change into one of the folders first. If it says it cannot "
            "connect, compare its temporary folder with the one above." + _more("gemini-cli-does-not-connect")
        )
    if facts.shared_folders:
        found.append(
            f"Another Sublime Text window also has {', '.join(facts.shared_folders)} open. A `gemini` started in a "
            "terminal outside Sublime Text connects to whichever window it lists first; start it with “Gemini "
            "Companion: Open Gemini CLI” in this window to connect here, or close the folder in the other window."
            + _more("directory-mismatch")
        )
    if facts.paused:
        found.append(
            "Context sharing is paused: Gemini CLI sees no open files. Run “Gemini Companion: Resume Context Sharing”."
            + _more("first-run")
        )
    if not facts.terminus_installed:
        found.append(
            "Terminus is not installed, so “Open Gemini CLI” cannot open a terminal in Sublime Text. Install it with "
            "“Package Control: Install Package” → Terminus, or run `gemini` in any terminal inside the folder."
            + _more("terminus-is-missing")
        )
    return found


def claude_problems(facts: Facts) -> list[str]:
    """What keeps Claude Code from finding this window, when its integration is on."""
    if not facts.serves_claude or facts.server_state != "listening":
        return []
    if facts.lock_problem:
        return [facts.lock_problem + _more("claude-code-does-not-connect")]
    if not facts.lock.exists:
        return [
            "Claude Code's lock file is missing, so Claude Code cannot find this window. Reload the package; if it "
            "stays missing, check that ~/.claude/ide (or $CLAUDE_CONFIG_DIR/ide) is writable."
            + _more("claude-code-does-not-connect")
        ]
    if not facts.lock.owned_by_us or not facts.lock.private:
        return ["Claude Code's lock file is not private to you. Delete it and reload the package." + _more("security")]
    return []


def _agents_lines(facts: Facts) -> list[str]:
    gemini = "on" if facts.serves_gemini else "off (gemini_cli: false; Gemini CLI does not find this window)"
    lines = [f"- Gemini CLI integration: {gemini}"]
    if not facts.serves_claude:
        return [*lines, "- Claude Code integration: off (claude_code: false)"]
    clients = ", ".join(facts.claude_clients) if facts.claude_clients else "none"
    return [
        *lines,
        "- Claude Code integration: on",
        f"  - lock file: {facts.lock.path or '(none)'}; on disk: {'yes' if facts.lock.exists else 'no'}"
        + (f"; mode: {facts.lock.mode:o}" if facts.lock.exists and facts.lock.mode is not None else ""),
        f"  - connected Claude Code clients: {clients}"
        + ("" if facts.claude_clients else " (start one with “Open Claude Code”, or run /ide in Claude Code)"),
        f"  - Claude Code command: {' '.join(facts.claude_command) if facts.claude_command else '(default: claude)'}",
    ]


def _gemini_trust_lines(facts: Facts) -> list[str]:
    """Whether headless Gemini CLI, and so `ask_gemini`, will run in the window's first folder."""
    trust, folder = facts.gemini_trust, _ask_folder(facts.workspace_path)
    if trust is None or not folder:
        return []
    if trust.trusted:
        return [f"- Gemini CLI trusts {folder}, where ask_gemini runs ({trust.reason})"]
    state = "does not trust" if trust.trusted is False else "has not been told to trust"
    return [
        f"- Gemini CLI {state} {folder} ({trust.reason}): ask_gemini fails there until you {TRUST_FIX}."
        + _more("ask_gemini-says-the-folder-is-not-trusted")
    ]


def report(facts: Facts) -> str:
    lines = [
        "# Gemini Companion: Status and Troubleshooting",
        "",
        f"- Sublime Text build: {facts.build} ({facts.platform})",
        f"- Plugin host Python: {facts.python}",
        f"- Server: {facts.server_state}" + (f" at {facts.url}" if facts.server_state == "listening" else ""),
        f"- Discovery file: {facts.discovery.path or '(none)'}",
        f"  - on disk: {'yes' if facts.discovery.exists else 'no'}"
        + (
            f"; owner: {'you' if facts.discovery.owned_by_us else 'another user'}"
            + (f"; mode: {facts.discovery.mode:o}" if facts.discovery.mode is not None else "")
            if facts.discovery.exists
            else ""
        ),
        f"- Temporary folder (Node's os.tmpdir() here): {facts.tmpdir or '(unknown)'}",
        "  - a `gemini` started outside Sublime finds this window only if "
        "`node -p \"require('os').tmpdir()\"` prints the same folder in its terminal",
        f"- Editor PID (named in discovery files): {facts.editor_pid if facts.editor_pid is not None else '(unknown)'}",
        f"- Workspace path: {facts.workspace_path or '(no folder open)'}",
        f"- Connected clients: {', '.join(facts.clients) if facts.clients else 'none'}",
        f"- Context sharing: {'paused' if facts.paused else 'on'}",
        "- Last context sent (paths only): " + (", ".join(facts.last_context) if facts.last_context else "none"),
        f"- Terminus: {'installed' if facts.terminus_installed else 'not installed'}",
        f"- Gemini CLI command: {' '.join(facts.gemini_command) if facts.gemini_command else '(default: gemini)'}",
        *_gemini_trust_lines(facts),
        *_agents_lines(facts),
        "- Libraries: " + ", ".join(f"{name} {version or 'MISSING'}" for name, version in facts.libraries.items()),
        "",
        "## Problems and fixes",
        "",
    ]
    found = problems(facts)
    lines += [f"{i}. {text}" for i, text in enumerate(found, 1)] if found else ["None found."]
    lines += [
        "",
        "## Good to know",
        "",
        "- Gemini CLI needs `/ide enable` once; after that it connects by itself when started inside the folder.",
        "- Gemini CLI started in any terminal inside this window's folders connects to this window.",
        "- Changes are never written by Sublime: Gemini CLI writes the file after you accept.",
        f"- Every message Gemini CLI prints when it cannot connect, and its fix: {troubleshooting('troubleshooting')}",
    ]
    return "\n".join(lines) + "\n"
