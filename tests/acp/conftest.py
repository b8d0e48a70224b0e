"""Fixtures for the ACP chat: the real agents offline, an Editor port the test plays, a ChatView
that records.

- Gemini CLI 0.61.0 (tests/conformance, pinned): `gemini.js --acp --fake-responses-non-strict FILE`
  with a dummy GEMINI_API_KEY and a scratch home (reference acp.md §2).
- claude-agent-acp 0.101.0 (tests/conformance/acp_claude, pinned): a scratch HOME and
  CLAUDE_CONFIG_DIR, a dummy key, and `ModelStandIn` (tests/conformance/claude_harness.py) as the
  Messages API (reference acp.md §3).
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from companion.acp.view import Choice, Command, ConfigOption, LoginCommand, Mode, NoticeKind, PlanEntry, ToolCall, Usage
from companion.core.reviews import Review
from tests.conformance.claude_harness import API_KEY, ModelStandIn, make_config
from tests.conformance.harness import PINNED, make_gemini_home, node, recorded_turns, require_node_modules
from tests.scripted_editor import ScriptedEditor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACP_CLAUDE = os.path.join(ROOT, "tests", "conformance", "acp_claude")
CEILING = 60  # seconds: generous ceilings on events, never a synchronisation by sleeping


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "workspace")
    os.makedirs(path)
    return os.path.realpath(path)


class AsyncEditor(ScriptedEditor):
    """ScriptedEditor whose reviews can be awaited on the chat's own loop; `decide` (when set)
    plays the user as soon as a review is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.decide: Any = None  # Callable[[Review], None] | None
        self._shown_event: asyncio.Event | None = None

    async def show_review(self, review: Review) -> None:
        await super().show_review(review)
        self._event().set()
        if self.decide is not None:
            self.decide(review)

    async def shown_review(self) -> Review:
        await asyncio.wait_for(self._event().wait(), CEILING)
        return self.shown[-1][0]

    def _event(self) -> asyncio.Event:
        if self._shown_event is None:
            self._shown_event = asyncio.Event()
        return self._shown_event


class _Calls(list[tuple[str, Any]]):
    """The view's calls in order; `until` waits on the chat's loop for a condition on them."""

    def __init__(self) -> None:
        super().__init__()
        self._changed: asyncio.Event | None = None

    def append(self, item: tuple[str, Any]) -> None:
        super().append(item)
        if self._changed is not None:
            self._changed.set()

    async def until(self, condition: Any, what: str) -> None:
        async def arrived() -> None:
            while not condition():
                self._changed = self._changed or asyncio.Event()
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(arrived(), CEILING)
        except asyncio.TimeoutError:
            raise AssertionError(f"{what} did not reach the view within {CEILING} s: {list(self)!r}") from None


@dataclass
class RecordingView:
    """The ChatView, recording every call; non-edit permissions get `answer_kind`'s option. The
    agent's other questions are answered from `picks`, `texts` and `confirms` in order (None, or
    nothing left: dismissed); a terminal login runs `login_runner` (none: not done)."""

    answer_kind: str = "reject_once"
    picks: list[int | None] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)
    confirms: list[bool | None] = field(default_factory=list)
    login_runner: Any = None  # Callable[[LoginCommand], bool] | None
    questions: list[tuple[str, Any]] = field(default_factory=list)  # (kind, what was shown)
    opened: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    tool_calls: list[tuple[str, str, str, str]] = field(default_factory=list)
    asked: list[tuple[str, list[Choice]]] = field(default_factory=list)
    calls: _Calls = field(default_factory=_Calls)  # (method, argument) in order

    def user_text(self, text: str) -> None:
        self.calls.append(("user_text", text))

    def agent_text(self, text: str) -> None:
        self.text.append(text)
        self.calls.append(("agent_text", text))

    def thought(self, text: str) -> None:
        self.calls.append(("thought", text))

    def tool_call(self, call: ToolCall) -> None:
        self.tool_calls.append((call.tool_call_id, call.title, call.kind, call.status))
        self.calls.append(("tool_call", call))

    def plan(self, entries: list[PlanEntry]) -> None:
        self.calls.append(("plan", entries))

    def usage(self, usage: Usage) -> None:
        self.calls.append(("usage", usage))

    def available_commands(self, commands: list[Command]) -> None:
        self.calls.append(("available_commands", commands))

    def mode(self, current_id: str, modes: list[Mode]) -> None:
        self.calls.append(("mode", (current_id, modes)))

    def models(self, current_id: str, models: list[Mode]) -> None:
        self.calls.append(("models", (current_id, models)))

    def config_options(self, options: list[ConfigOption]) -> None:
        self.calls.append(("config_options", options))

    def session_info(self, title: str | None) -> None:
        self.calls.append(("session_info", title))

    def turn_ended(self, stop_reason: str) -> None:
        self.calls.append(("turn_ended", stop_reason))

    def notice(self, text: str, kind: NoticeKind = "info") -> None:
        self.notices.append(text)
        self.calls.append(("notice", (text, kind)))

    def offer_mode(self, text: str, mode: Mode) -> None:
        self.notices.append(text)
        self.calls.append(("offer_mode", (text, mode)))

    def status(self, text: str | None) -> None:
        self.calls.append(("status", text))

    def called(self, method: str) -> list[Any]:
        return [argument for name, argument in self.calls if name == method]

    async def choose(self, title: str, choices: list[Choice]) -> str | None:
        self.asked.append((title, choices))
        return next((c.option_id for c in choices if c.kind == self.answer_kind), None)

    async def pick(self, title: str, items: list[str]) -> int | None:
        self.questions.append(("pick", (title, items)))
        return self.picks.pop(0) if self.picks else None

    async def ask_text(self, title: str, hint: str = "") -> str | None:
        self.questions.append(("text", (title, hint)))
        return self.texts.pop(0) if self.texts else None

    async def confirm_url(self, text: str, url: str) -> bool | None:
        self.questions.append(("url", (text, url)))
        return self.confirms.pop(0) if self.confirms else None

    def open_url(self, url: str) -> None:
        self.opened.append(url)

    async def run_login(self, command: LoginCommand) -> bool:
        self.questions.append(("login", command))
        return bool(self.login_runner and await asyncio.to_thread(self.login_runner, command))


@dataclass
class AgentSetup:
    """How to start one real agent offline: its command line and environment."""

    command: list[str]
    env: dict[str, str]
    home: str
    model: ModelStandIn | None = None  # Claude's Messages API stand-in
    responses: str = ""  # Gemini's recorded model turns

    def record_turns(self, *turns: list[dict[str, Any]]) -> None:
        with open(self.responses, "w", encoding="utf-8") as handle:
            handle.write(recorded_turns(*turns))


def _base_env(home: str, tmpdir: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GEMINI_CLI_IDE_", "CLAUDE", "ANTHROPIC")) and k not in ("CI", "GITHUB_ACTIONS")
    }
    env.update({"HOME": home, "TMPDIR": tmpdir, "PYTHONPATH": ROOT})
    return env


@pytest.fixture
def gemini(tmp_path: str) -> AgentSetup:
    require_node_modules()  # fails with the command that installs them, never skips
    root = str(tmp_path)
    home = make_gemini_home(os.path.join(root, "home"))
    tmpdir = os.path.join(root, "tmp")
    os.makedirs(tmpdir)
    env = _base_env(home, tmpdir)
    env.update({"GEMINI_CLI_HOME": home, "GEMINI_API_KEY": "fake"})
    responses = os.path.join(root, "responses.jsonl")
    command = [node(), PINNED.gemini_js, "--acp", "--fake-responses-non-strict", responses]
    return AgentSetup(command, env, home, responses=responses)


def claude_agent_program() -> str:
    name = "claude-agent-acp.cmd" if sys.platform == "win32" else "claude-agent-acp"
    path = os.path.join(ACP_CLAUDE, "node_modules", ".bin", name)
    if not os.path.exists(path):
        raise AssertionError(
            f"{path} is missing: run `python3 dev.py test`, which installs the pinned claude-agent-acp with "
            f"`npm ci` in {ACP_CLAUDE}."
        )
    return path


def claude_offline_env(root: str, workspace: str, model_url: str) -> dict[str, str]:
    """claude-agent-acp's environment offline: a scratch home, TMPDIR and config folder under `root`
    (the workspace trusted), a dummy key, the Messages API stand-in at `model_url`."""
    home = os.path.join(root, "home")
    tmpdir = os.path.join(root, "tmp")
    os.makedirs(home, exist_ok=True)
    os.makedirs(tmpdir, exist_ok=True)
    env = _base_env(home, tmpdir)
    env.update(
        {
            "CLAUDE_CONFIG_DIR": make_config(os.path.join(root, "claude-config"), workspace),
            "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        }
    )
    return env


@pytest.fixture
def claude_factory(tmp_path: str, workspace: str) -> Iterator[Any]:
    """`make(tool_name, tool_input)` -> AgentSetup: claude-agent-acp whose model asks for that tool once."""
    stand_ins: list[ModelStandIn] = []

    def make(tool_name: str, tool_input: dict[str, Any]) -> AgentSetup:
        model = ModelStandIn(tool_name, tool_input).__enter__()
        stand_ins.append(model)
        env = claude_offline_env(str(tmp_path), workspace, model.url)
        return AgentSetup([claude_agent_program()], env, env["HOME"], model=model)

    yield make
    for model in stand_ins:
        model.__exit__(None, None, None)


def model_messages_text(model: ModelStandIn) -> list[str]:
    """Every text the Claude agent sent its model in user turns (what the model was told)."""
    texts: list[str] = []
    for request in model.requests:
        for message in request.get("messages", []):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return texts


def gemini_user_texts(home: str) -> list[str]:
    """The user texts in Gemini CLI's own recording of what it sent the model
    (<home>/.gemini/tmp/<project>/chats/session-*.jsonl; see tests/mcp_tools/test_ask_real_gemini.py),
    skipping parts that are not text (tool results)."""
    texts: list[str] = []
    for path in glob.glob(os.path.join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        for record in records:
            if record.get("type") == "user":
                texts += [p["text"] for p in record.get("content", []) if isinstance(p, dict) and "text" in p]
    return texts
