"""The real Claude Code (`claude`, @anthropic-ai/claude-code pinned in tests/conformance/claude)
against the companion, offline and with no account.

How (CONTRIBUTING.md, "Claude Code", has the client's contract):
- A scratch config folder (`CLAUDE_CONFIG_DIR`) whose `.claude.json` has onboarding done, the
  workspace trusted and the test's API key approved; the companion writes its lock file into that
  folder's `ide/`, where the client looks.
- `claude` runs interactively in a pty (only the interactive session connects to an IDE; `-p`
  never does) with `CLAUDE_CODE_SSE_PORT` set, as a terminal opened by the editor has it.
- Model turns come from `ModelStandIn`, a local stand-in for the Messages API
  (`ANTHROPIC_BASE_URL`): the first turn asks for one `Write` tool call, the turn after the tool
  result says "Done.". Everything between (permission prompt, closeAllDiffTabs, openDiff,
  close_tab, getDiagnostics, writing the file) is the real client's own behaviour.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conformance.harness import GeminiTerminal

HERE = os.path.dirname(os.path.abspath(__file__))
CLAUDE_FOLDER = os.path.join(HERE, "claude")
API_KEY = "sk-ant-api03-conformance-test-key-0123456789abcdefghij"


def pinned_version() -> str:
    with open(os.path.join(CLAUDE_FOLDER, "package.json"), encoding="utf-8") as handle:
        return json.load(handle)["dependencies"]["@anthropic-ai/claude-code"]


def claude_binary() -> str:
    """The native binary npm installed for this platform (its postinstall, skipped by `npm ci
    --ignore-scripts`, would only copy it to bin/claude.exe)."""
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    name = "claude.exe" if sys.platform == "win32" else "claude"
    path = os.path.join(CLAUDE_FOLDER, "node_modules", "@anthropic-ai", f"claude-code-{system}-{machine}", name)
    if not os.path.isfile(path):
        raise AssertionError(
            f"{path} is missing: run `python3 dev.py test`, which installs the pinned Claude Code with "
            f"`npm ci` in {CLAUDE_FOLDER}."
        )
    return path


def make_config(folder: str, workspace: str) -> str:
    """A Claude Code config folder that starts straight at the prompt, offline."""
    os.makedirs(folder, exist_ok=True)
    config = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "autoUpdates": False,
        "projects": {workspace: {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
    }
    with open(os.path.join(folder, ".claude.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    return folder


class ModelStandIn:
    """A local Messages API: answers each streamed `POST /v1/messages` with the next turn."""

    def __init__(self, tool_name: str, tool_input: dict[str, Any]) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-stand-in", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ModelStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks the client sent back (what it told the model happened)."""
        found = []
        for request in self.requests:
            for message in request.get("messages", []):
                content = message.get("content")
                if isinstance(content, list):
                    found += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        return found

    def _turn(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {tool.get("name") for tool in request.get("tools", [])}
        answered = any(
            isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
            for m in request.get("messages", [])
        )
        if self.tool_name in tools and not answered:
            return [{"type": "tool_use", "id": "toolu_conformance_1", "name": self.tool_name, "input": self.tool_input}]
        return [{"type": "text", "text": "Done."}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 10} if "count_tokens" in self.path else {})
                    return
                request = json.loads(body or b"{}")
                stand_in.requests.append(request)
                blocks = stand_in._turn(request)
                if request.get("stream"):
                    self._stream(request, blocks)
                else:
                    self._json(_message(request, blocks))

            def do_GET(self) -> None:
                self._json({})

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, request: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                message = _message(request, [])
                message["stop_reason"] = None
                events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": message})]
                for index, block in enumerate(blocks):
                    if block["type"] == "text":
                        empty = {"type": "text", "text": ""}
                        events.append(("content_block_start", {"index": index, "content_block": empty}))
                        delta = {"type": "text_delta", "text": block["text"]}
                    else:
                        start = {**block, "input": {}}
                        events.append(("content_block_start", {"index": index, "content_block": start}))
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    events.append(("content_block_delta", {"index": index, "delta": delta}))
                    events.append(("content_block_stop", {"index": index}))
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                ending = {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}
                events.append(("message_delta", ending))
                events.append(("message_stop", {}))
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode())
                self.wfile.flush()

        return Handler


class ChainStandIn(ModelStandIn):
    """A Messages API whose model calls each tool of `chain` in turn, one per request and only once
    the agent offers it in the request's `tools`, then says "Done.". Claude Code defers MCP tools: its
    first request lists them only by name (a system reminder), so a chain that calls one starts with
    `ToolSearch {"query": "select:<name>"}`, as a real model does, after which they are offered."""

    def __init__(self, chain: Sequence[tuple[str, dict[str, Any]]]) -> None:
        super().__init__("", {})
        self.chain = list(chain)

    def _turn(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        offered = {tool.get("name") for tool in request.get("tools", [])}
        step = sum(len(_tool_results(m)) for m in request.get("messages", []))  # calls answered so far
        if step < len(self.chain) and self.chain[step][0] in offered:
            name, arguments = self.chain[step]
            return [{"type": "tool_use", "id": f"toolu_chain_{step}", "name": name, "input": arguments}]
        return [{"type": "text", "text": "Done."}]

    def requests_after(self, step: int) -> list[dict[str, Any]]:
        """The model requests that carry the answer to the chain's `step`-th call (counted from 0)."""
        return [r for r in self.requests if sum(len(_tool_results(m)) for m in r.get("messages", [])) > step]


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def _message(request: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_conformance",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "claude-sonnet-4-5"),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class ClaudeTerminal(GeminiTerminal):
    """The real `claude` in a pseudo-terminal (POSIX), read like `GeminiTerminal`. Claude Code redraws
    only the cells that changed: read what it shows with `wait_screen`."""

    def __init__(self, argv: Sequence[str], cwd: str, env: dict[str, str]) -> None:
        super().__init__(argv, cwd, env)
        self.argv = [claude_binary(), *argv]

    def wait_prompt(self, timeout: float = 60) -> None:
        """Wait for Claude Code's prompt input: the part of its UI that subscribes to the IDE's
        `selection_changed` and `at_mentioned` (it drops them until then), drawn late in its start."""
        self.wait_screen(PROMPT_MARK, timeout)


PROMPT_MARK = "\u276f"  # ❯, the start of Claude Code's prompt input line


def claude_env(config: str, port: int, model_url: str) -> dict[str, str]:
    """What a terminal the editor opens gives `claude`, plus the offline config and model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC", "GEMINI_CLI_IDE_"))}
    env.update(
        {
            "CLAUDE_CONFIG_DIR": config,
            "CLAUDE_CODE_SSE_PORT": str(port),
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # Without it, 2.1.332 installs the official plugin marketplace at start-up (downloads, a
            # git clone); 2.1.331 already reads it (OFFLINE_SWITCHES): the run stays offline.
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
            "TERM": "xterm-256color",
            "COLUMNS": "120",
            "LINES": "40",
        }
    )
    for name in ("CI", "GITHUB_ACTIONS", "NO_COLOR"):
        env.pop(name, None)
    return env
