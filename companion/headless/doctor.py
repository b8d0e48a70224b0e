"""`python -m companion doctor`: what the Sublime doctor (doctor.py) checks that applies without
Sublime, as one readable report or `--json`. Exit 0 when no problem was found, 1 otherwise.

The checks: this Python and its libraries, the temporary folder Gemini CLI looks in (Node's
`os.tmpdir()`, asked of Node itself when it is on PATH), the discovery folder and its permissions,
the agents on PATH and their versions, and Gemini CLI's trust of the workspace folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import __version__
from ..core.system.user_paths import find_program
from ..doctor import DiscoveryCheck, library_issues, library_versions
from ..gemini_ide.discovery import discovery_dir, node_tmpdir
from ..mcp_tools.gemini_trust import TRUST_FIX, folder_trust

AGENTS = ("gemini", "claude", "node")  # the IDE agents, and Node, which runs them
VERSION_TIMEOUT = 20.0  # seconds for `AGENT --version` (a Node program may start slowly)


@dataclass
class Agent:
    name: str
    path: str = ""  # "" when not on PATH
    version: str = ""


@dataclass
class HeadlessFacts:
    companion: str
    python: str
    workspace: str
    libraries: dict[str, str | None]
    tmpdir: str  # Node's os.tmpdir() as this environment gives it
    node_tmpdir: str  # what Node itself says ("" without Node)
    discovery_folder: str
    discovery_exists: bool
    discovery_owned_by_you: bool
    discovery_mode: str  # octal, "" when absent or on Windows
    agents: list[Agent] = field(default_factory=list)
    trusted: bool | None = None
    trust_reason: str = ""


def gather(workspace: str) -> HeadlessFacts:
    folder = discovery_dir()
    check = DiscoveryCheck.of(folder)
    trust = folder_trust(workspace)
    agents = [_agent(name) for name in AGENTS]
    node = next((agent.path for agent in agents if agent.name == "node" and agent.path), "")
    return HeadlessFacts(
        companion=__version__,
        python=f"{sys.version.split()[0]} ({sys.executable})",
        workspace=workspace,
        libraries=library_versions(),
        tmpdir=node_tmpdir(),
        node_tmpdir=_run([node, "-p", "require('os').tmpdir()"]) if node else "",
        discovery_folder=folder,
        discovery_exists=check.exists,
        discovery_owned_by_you=check.owned_by_us,
        discovery_mode=f"{check.mode:o}" if check.mode is not None else "",
        agents=agents,
        trusted=trust.trusted,
        trust_reason=trust.reason,
    )


def _agent(name: str) -> Agent:
    path = find_program(name) or ""  # never the current folder: doctor may run in an untrusted clone
    return Agent(name, path, _run([path, "--version"]) if path else "")


def _run(command: list[str]) -> str:
    """The first line `command` prints, or why there is none."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=VERSION_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"(no answer in {VERSION_TIMEOUT:.0f} s)"
    except OSError as exc:
        return f"(cannot run: {exc.strerror or exc})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines else f"(exit status {done.returncode}, no output)"


def problems(facts: HeadlessFacts) -> list[str]:
    """Each problem found, with what to do about it."""
    found: list[str] = []
    missing, wrong = library_issues(facts.libraries)
    if missing or wrong:
        what = ([f"missing: {', '.join(missing)}"] if missing else []) + (
            [f"wrong version: {', '.join(wrong)}"] if wrong else []
        )
        found.append(
            f"Libraries {'; '.join(what)}. Run `python3 dev.py serve` in the clone (it installs the pinned "
            "libraries), or `python -m pip install .` there."
        )
    if facts.node_tmpdir and os.path.normpath(facts.node_tmpdir) != os.path.normpath(facts.tmpdir):
        found.append(
            f"Node's temporary folder is {facts.node_tmpdir}, but the companion would use {facts.tmpdir}: Gemini CLI "
            "looks for the discovery file in Node's. Start the companion and `gemini` with the same TMPDIR."
        )
    if facts.discovery_exists and not facts.discovery_owned_by_you:
        found.append(
            f"The discovery folder {facts.discovery_folder} belongs to another user. Remove it (or set TMPDIR)."
        )
    if facts.discovery_mode and int(facts.discovery_mode, 8) & 0o077:
        found.append(
            f"The discovery folder {facts.discovery_folder} is open to other users (mode {facts.discovery_mode}); "
            f"the companion refuses it. Run `chmod 700 {facts.discovery_folder}`."
        )
    if not any(agent.path for agent in facts.agents if agent.name in ("gemini", "claude")):
        found.append(
            "Neither `gemini` nor `claude` is on PATH. Install Gemini CLI (npm install -g @google/gemini-cli) or "
            "Claude Code; `python -m companion chat --agent demo` works without either."
        )
    if facts.trusted is not True and any(agent.path for agent in facts.agents if agent.name == "gemini"):
        state = "does not trust" if facts.trusted is False else "has not been told to trust"
        found.append(
            f"Gemini CLI {state} {facts.workspace} ({facts.trust_reason}): ask_gemini fails there until you "
            f"{TRUST_FIX}."
        )
    return found


def report(facts: HeadlessFacts) -> str:
    discovery = "absent (created when the companion starts)"
    if facts.discovery_exists:
        owner = "you" if facts.discovery_owned_by_you else "another user"
        discovery = f"present; owner: {owner}" + (f"; mode: {facts.discovery_mode}" if facts.discovery_mode else "")
    lines = [
        f"Gemini Companion {facts.companion} (headless doctor)",
        f"- Python: {facts.python}",
        f"- Workspace: {facts.workspace}",
        f"- Temporary folder (Node's os.tmpdir() here): {facts.tmpdir}"
        + (f"; Node says: {facts.node_tmpdir}" if facts.node_tmpdir else "; Node is not on PATH"),
        f"- Discovery folder: {facts.discovery_folder}: {discovery}",
    ]
    for agent in facts.agents:
        lines.append(f"- {agent.name}: " + (f"{agent.path} ({agent.version})" if agent.path else "not on PATH"))
    trust = {True: "trusts", False: "does not trust", None: "has not been told to trust"}[facts.trusted]
    lines.append(f"- Gemini CLI {trust} the workspace ({facts.trust_reason})")
    lines.append(
        "- Libraries: " + ", ".join(f"{name} {version or 'MISSING'}" for name, version in facts.libraries.items())
    )
    found = problems(facts)
    lines += ["", "Problems and fixes:"]
    lines += [f"{i}. {text}" for i, text in enumerate(found, 1)] if found else ["None found."]
    return "\n".join(lines) + "\n"


def as_json(facts: HeadlessFacts) -> dict[str, Any]:
    return {**asdict(facts), "problems": problems(facts)}


def run_doctor(workspace: str, json_output: bool) -> int:
    folder = os.path.realpath(workspace)
    if not os.path.isdir(folder):
        print(f"error: {workspace} is not a folder; pass --workspace with an existing folder.", file=sys.stderr)
        return 2
    facts = gather(folder)
    print(json.dumps(as_json(facts), indent=2) if json_output else report(facts), end="" if not json_output else "\n")
    return 1 if problems(facts) else 0
