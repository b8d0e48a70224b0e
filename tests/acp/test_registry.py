"""The ACP registry for New Chat (issue #27 item 6), without the network: the shipped snapshot,
installed detection on PATH, the daily refresh from a local HTTP server, the never-fetch setting,
and registries that are refused cleanly."""

from __future__ import annotations

import http.server
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from companion.acp.agents import registry
from companion.acp.agents.registry import RegistryRefused, parse

ENTRY: dict[str, Any] = {
    "id": "qwen-code",
    "name": "Qwen Code",
    "version": "0.9.1",
    "description": "Alibaba's Qwen coding assistant",
    "distribution": {"npx": {"package": "@qwen-code/qwen-code@0.9.1", "args": ["--acp"], "env": {"A": "1"}}},
}


def _registry(*agents: dict[str, Any]) -> bytes:
    return json.dumps({"version": "1.0.0", "agents": list(agents), "extensions": []}).encode()


class Served:
    """registry.json from a local HTTP server: `body` is what it answers, `hits` how often."""

    def __init__(self) -> None:
        self.body = _registry(ENTRY)
        self.hits = 0
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(served.body)))
                self.end_headers()
                self.wfile.write(served.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/registry.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_the_shipped_snapshot_lists_the_registrys_agents_with_their_install_commands() -> None:
    agents, date = registry.snapshot()
    assert date == "2026-02-07"
    by_id = {a.id: a for a in agents}
    gemini = by_id["gemini"]
    assert (gemini.kind, gemini.program, gemini.args) == ("npx", "gemini", ("--experimental-acp",))
    assert gemini.install_command == "npm install -g @google/gemini-cli@0.27.3"
    assert by_id["qwen-code"].program == "qwen" and by_id["claude-code-acp"].program == "claude-code-acp"
    if registry.platform_key() in ("linux-x86_64", "darwin-aarch64", "windows-x86_64"):
        codex = by_id["codex-acp"]  # a binary distribution: downloaded by hand, no install command to run
        assert codex.kind == "binary" and codex.program == "codex-acp" and codex.install_argv is None
        assert codex.install_command.startswith("download https://github.com/zed-industries/codex-acp/")


def test_installed_means_the_program_is_on_path(tmp_path: Any) -> None:
    [agent] = parse(_registry(ENTRY))
    assert not agent.installed(str(tmp_path))
    program = tmp_path / ("qwen.exe" if sys.platform == "win32" else "qwen")
    program.write_text("")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    assert agent.installed(str(tmp_path))


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xff not json", "is not JSON"),
        (b"[" * 200_000, "is not JSON"),  # nested too deep: refused, not a RecursionError
        (b'{"agents": {}}', 'has no "agents" list'),
        (b"null", 'has no "agents" list'),
    ],
)
def test_a_registry_that_is_not_one_is_refused_in_one_line(data: bytes, why: str) -> None:
    with pytest.raises(RegistryRefused, match=why):
        parse(data)


def test_a_bad_entry_is_left_out_and_the_others_stay() -> None:
    bad_package = dict(ENTRY, id="bad", distribution={"npx": {"package": "x; rm -rf /"}})
    bad_args = dict(ENTRY, id="args", distribution={"uvx": {"package": "tool", "args": [1]}})
    no_name = {k: v for k, v in ENTRY.items() if k != "name"}
    found = parse(_registry(bad_package, bad_args, no_name, "text", ENTRY))
    assert [a.id for a in found] == ["qwen-code"]


def test_a_refresh_at_most_daily_then_the_cached_copy(served: Served, tmp_path: Any) -> None:
    folder = str(tmp_path / "cache")
    now = time.time()
    assert [a.id for a in registry.agents(folder, True, served.url, now)] == ["qwen-code"] and served.hits == 1
    served.body = _registry(dict(ENTRY, id="other"))
    assert [a.id for a in registry.agents(folder, True, served.url, now + 3600)] == ["qwen-code"]
    assert served.hits == 1  # within the day: no fetch, the cached copy
    assert [a.id for a in registry.agents(folder, True, served.url, now + 25 * 3600)] == ["other"]
    assert served.hits == 2
    assert [a.id for a in registry.agents(folder, True, served.url, now - 3600)] == ["other"]
    assert served.hits == 3  # a stamp from the future (the clock was set back) is not trusted


def test_never_fetch_uses_the_snapshot(served: Served, tmp_path: Any) -> None:
    found = registry.agents(str(tmp_path), False, served.url)
    assert served.hits == 0 and found == registry.snapshot()[0]
    assert not os.listdir(str(tmp_path))


def test_a_failed_or_oversized_fetch_keeps_the_last_copy_and_tries_again_only_the_next_day(
    served: Served, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    folder = str(tmp_path)
    now = time.time()
    registry.agents(folder, True, served.url, now)
    served.body = b"{broken"
    assert [a.id for a in registry.agents(folder, True, served.url, now + 25 * 3600)] == ["qwen-code"]
    assert "could not be refreshed" in caplog.text
    registry.agents(folder, True, served.url, now + 26 * 3600)
    assert served.hits == 2  # the failed attempt counts: no fetch on every New Chat while offline
    served.body = _registry(ENTRY, dict(ENTRY, id="x" * 10, description="y" * 400)) + b" " * registry.MAX_BYTES
    with pytest.raises(OSError, match="larger than"):
        registry.fetch(served.url)
    assert registry.agents(str(tmp_path / "fresh"), True, "http://127.0.0.1:9/none") == registry.snapshot()[0]


def test_only_https_is_fetched() -> None:
    with pytest.raises(OSError, match="only https"):
        registry.fetch("http://example.com/registry.json")
