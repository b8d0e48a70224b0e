"""The libraries of dependencies.json, and nothing else, run the companion for the real Gemini CLI client.

They are installed with `pip --no-deps` into an empty folder; the headless companion
(`python -m companion serve`) then runs in a Python that can import only the standard library,
that folder and this repository, and the real IdeClient (@google/gemini-cli-core) connects and
has a diff accepted. Afterwards the server reports which distributions it had loaded: every library
of dependencies.json but the ACP SDK, which loads on the first chat: `companion chat --prompt` with
the scripted agent, in the same isolated Python, imports it and completes a turn; and but LATER
(truststore), which New Chat's registry fetch loads: a fetch from a local TLS registry, in the same
isolated Python, gets the live list with it. Serving, the chat and the fetch together load exactly
the list, so it holds nothing the package does not import either.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time

from companion.gemini_ide.discovery import discovery_dir
from tests.acp.scripted_agent import REPLY
from tests.claude_client import ClaudeClient
from tests.conformance.harness import IdeClientProcess, client_env
from tests.hostile.test_registry_fetch import ENTRY, Server, document, make_ca
from tests.packaging.conftest import REPO, isolated
from tools import libraries as L

REPORT_AT_EXIT = """
import atexit, json, runpy
def report():
    import importlib.metadata
    dists = importlib.metadata.packages_distributions()
    loaded = sorted({d for name in list(sys.modules) for d in dists.get(name.split(".")[0], [])})
    with open(REPORT, "w") as handle:
        json.dump({"loaded": loaded, "path": sys.path}, handle)
atexit.register(report)
"""
SERVE = f"""{REPORT_AT_EXIT}
sys.argv = ["companion", "serve", "--workspace", WORKSPACE, "--diff-policy", "accept"]
runpy.run_module("companion", run_name="__main__", alter_sys=True)
"""
CHAT = f"""{REPORT_AT_EXIT}
sys.argv = ["companion", "chat", "--workspace", WORKSPACE, "--diff-policy", "accept", "--prompt", "hello", "--", *AGENT]
runpy.run_module("companion", run_name="__main__", alter_sys=True)
"""
REGISTRY_FETCH = f"""{REPORT_AT_EXIT}
from companion.acp.agents import registry
found, note = registry.listing(FOLDER, True, URL)
print(note or "live: " + ",".join(a.id for a in found))
"""
SCRIPTED_AGENT = os.path.join(REPO, "tests", "acp", "scripted_agent.py")


async def claude_tools(port: int, token: str) -> int:
    client = await ClaudeClient.connect(port, token)
    try:
        return len((await client.request("tools/list", {}))["result"]["tools"])
    finally:
        await client.close()


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def chat_loaded(closure_lib: str, tmp_path: str) -> set[str]:
    """`companion chat --prompt` in a Python that sees only the library folder, with the scripted agent
    (run from the same folder alone): the SDK imports and the turn ends. The distributions it loaded."""
    workspace = os.path.realpath(os.path.join(tmp_path, "chat-project"))
    os.makedirs(workspace)
    report = os.path.join(tmp_path, "chat-report.json")
    agent = isolated(
        [closure_lib], f"sys.argv[1:] = ['ok']\nimport runpy; runpy.run_path({SCRIPTED_AGENT!r}, run_name='__main__')"
    )
    code = f"REPORT, WORKSPACE, AGENT = {report!r}, {workspace!r}, {agent!r}\n{CHAT}"
    env = {**os.environ, "TMPDIR": os.path.join(tmp_path, "tmp")}
    chat = subprocess.run(isolated([closure_lib, REPO], code), env=env, capture_output=True, text=True, timeout=120)
    assert chat.returncode == 0, f"the chat failed ({chat.returncode}): {chat.stdout}\n{chat.stderr}"
    assert REPLY in chat.stdout, chat.stdout
    with open(report) as handle:
        facts = json.load(handle)
    assert not [p for p in facts["path"] if "site-packages" in p], facts["path"]
    return {L.canonical(d) for d in facts["loaded"]}


def registry_fetch_loaded(closure_lib: str, tmp_path: str) -> set[str]:
    """New Chat's registry fetch (`registry.listing`) in a Python that sees only the library folder,
    from a local TLS registry whose test CA is the system bundle's (SSL_CERT_FILE): the live list
    arrives. The distributions it loaded."""
    folder = os.path.join(tmp_path, "ca-files")
    os.makedirs(folder)
    ca, cert, key = make_ca(folder)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = Server(document(ENTRY), tls)
    report = os.path.join(tmp_path, "registry-report.json")
    code = f"REPORT, FOLDER, URL = {report!r}, {os.path.join(tmp_path, 'cache')!r}, {server.url('/registry.json')!r}\n"
    try:
        fetch = subprocess.run(
            isolated([closure_lib, REPO], code + REGISTRY_FETCH),
            env={**os.environ, "SSL_CERT_FILE": ca},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.close()
    assert fetch.returncode == 0, fetch.stderr
    assert fetch.stdout.strip() == f"live: {ENTRY['id']}", fetch.stdout + fetch.stderr
    with open(report) as handle:
        return {L.canonical(d) for d in json.load(handle)["loaded"]}


def test_only_the_listed_libraries_serve_a_real_client(closure_lib: str, tmp_path: str) -> None:
    installed = sorted(n.split("-")[0] for n in os.listdir(closure_lib) if n.endswith(".dist-info"))
    listed = {L.canonical(n) for n in L.dependencies(L.current_platform())}
    assert len(installed) == len(listed), installed

    tmpdir = os.path.join(str(tmp_path), "tmp")
    workspace = os.path.realpath(os.path.join(str(tmp_path), "project"))
    os.makedirs(workspace)
    report = os.path.join(str(tmp_path), "report.json")
    # A discovery file left by a crashed editor: the starting companion sweeps it (psutil's PID check).
    folder = discovery_dir({"TMPDIR": tmpdir})
    os.makedirs(folder, mode=0o700)
    stale = os.path.join(folder, f"gemini-ide-server-{dead_pid()}-1.json")
    with open(stale, "w") as handle:
        handle.write("{}")

    code = f"REPORT, WORKSPACE = {report!r}, {workspace!r}\n{SERVE}"
    claude_config = os.path.join(str(tmp_path), "claude")
    env = {**os.environ, "TMPDIR": tmpdir, "CLAUDE_CONFIG_DIR": claude_config}  # -I ignores PYTHON* variables
    server = subprocess.Popen(
        isolated([closure_lib, REPO], code), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(server.stdout or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        discovery = None
        while discovery is None and time.monotonic() < deadline and server.poll() is None:
            discovery = next((m for line in list(lines) if (m := re.match(r"Discovery file: (.+)$", line))), None)
            time.sleep(0.05)
        assert discovery is not None, f"the companion did not start: {lines} {server.stderr and server.stderr.read()}"
        pid = int(re.search(r"gemini-ide-server-(\d+)-\d+\.json", discovery.group(1)).group(1))  # type: ignore[union-attr]

        with IdeClientProcess(workspace, client_env(tmpdir, pid)) as client:
            client.wait_connected(60)
            target = os.path.join(workspace, "hello.py")
            diff = client.open_diff(target, "print('hello')\n")
            outcome = client.wait_diff(diff, 60)
            assert outcome["status"] == "accepted" and outcome["content"] == "print('hello')\n", outcome
        # Claude Code's side is served by the same libraries (wsproto included).
        (lock,) = os.listdir(os.path.join(claude_config, "ide"))
        with open(os.path.join(claude_config, "ide", lock)) as handle:
            token = json.load(handle)["authToken"]
        assert asyncio.run(claude_tools(int(lock.split(".")[0]), token)) > 5
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM if hasattr(signal, "SIGTERM") else signal.CTRL_BREAK_EVENT)
        server.wait(60)
        reader.join(10)
    stderr = server.stderr.read() if server.stderr else ""
    assert server.returncode == 0, stderr
    assert any("the discovery file and the lock file were removed" in line for line in lines), lines
    assert not os.path.exists(stale), "the stale discovery file was not swept"

    with open(report) as handle:
        facts = json.load(handle)
    assert not [p for p in facts["path"] if "site-packages" in p], facts["path"]
    served = {L.canonical(d) for d in facts["loaded"]}
    assert "agent-client-protocol" not in served, "the ACP SDK was loaded at start-up, not on the first chat"
    chat = chat_loaded(closure_lib, str(tmp_path))
    later = {L.canonical(n) for n in L.LATER}
    assert not (served | chat) & later, "a LATER library was loaded at start-up or by the first chat"
    fetched = registry_fetch_loaded(closure_lib, str(tmp_path))
    assert later <= fetched, f"New Chat's registry fetch did not load {sorted(later - fetched)}"
    # The chat's SDK and the fetch's truststore are listed too: together they load exactly the list.
    loaded = served | chat | fetched
    assert loaded == listed, (
        f"loaded but not listed: {sorted(loaded - listed)}; listed, not loaded: {sorted(listed - loaded)}"
    )
