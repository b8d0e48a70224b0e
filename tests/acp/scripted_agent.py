"""A small ACP agent for the hostile-agent tests, built on the SDK's agent side (no hand-written
JSON-RPC): `python scripted_agent.py BEHAVIOUR [PID_FILE]`.

Behaviours: `garbage-then-ok` (non-ACP lines, a 2 MiB non-JSON line and an unroutable
`$/cancel_request` on stdout, then a normal agent), `garbage-only` (never answers), `crash` (a
message on stderr, exit 3), `auth` (session/new answers "Authentication required"), `flood` (FLOOD
updates in one turn), `huge` (a 3 MiB line), `every-update` (one of each `session/update` kind in
a turn, modes and config options on session/new, no loadSession), `embed` / `links` (takes embedded
context or not; writes each prompt's blocks as JSON to $SCRIPTED_AGENT_RECORD), `stream` (a turn of
$SCRIPTED_AGENT_CHUNKS chunks, each stamped in its text with time.monotonic_ns() before its write
and the previous write's duration, $SCRIPTED_AGENT_GAP_MS apart; for bench/bench_acp.py), `modes`
(session/new offers the modes of $SCRIPTED_AGENT_MODES, JSON; each session/set_mode is appended to
$SCRIPTED_AGENT_RECORD; a turn changes modes.txt to "after\n": on disk without asking in the modes
listed in $SCRIPTED_AGENT_WRITES, through fs/write_text_file without asking in those of
$SCRIPTED_AGENT_FS_WRITES, else through a permission request with the diff, then
fs/write_text_file once allowed), `checkpoint` (a turn writes reviewed.txt as `modes` does in a
mode that asks, then outside.txt on disk with no tool call at all, as a shell command would; each
prompt's blocks go to $SCRIPTED_AGENT_RECORD when it is set; with $SCRIPTED_AGENT_GATE, a FIFO, a
turn first says "At the gate." and waits until the test writes a line to it; with
$SCRIPTED_AGENT_SESSIONS, a file, it offers session/load (not with $SCRIPTED_AGENT_NO_LOAD),
numbers its sessions s1, s2, …, answers each prompt "Done: TEXT", writes outside.txt as "written at
prompt N" and appends each session/new, session/load and prompt (its session id and its text
blocks) to that file as a JSON line).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

FLOOD = 20000
REPLY = "Hello from the scripted agent."


def _pass_gate(fifo: str) -> None:
    with open(fifo, encoding="utf-8") as gate:  # blocks until the test opens it to write
        gate.readline()


def main() -> None:
    behaviour = sys.argv[1]
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    out = sys.stdout.buffer
    if behaviour in ("garbage-then-ok", "garbage-only"):
        out.write(b"Starting the agent...\n\x1b[31mnot json\x1b[0m\n[1, 2, 3]\n{broken\n")
        out.write(b"x" * (2 * 1024 * 1024) + b"\n")
        out.flush()
        if behaviour == "garbage-only":
            sys.stdin.read()  # never answers; exits when the client closes our stdin
            return
        # JSON, but nothing the client routes (claude-agent-acp sends it after a cancel)
        out.write(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}\n')
        out.flush()
    if behaviour == "huge":
        out.write(b'{"jsonrpc":"2.0","method":"x","params":"' + b"y" * (3 * 1024 * 1024) + b'"}\n')
        out.flush()
        sys.stdin.read()
        return
    if behaviour == "crash":
        sys.stderr.write("fatal: the scripted agent crashed on purpose\n")
        sys.stderr.flush()
        sys.exit(3)
    asyncio.run(serve(behaviour))


async def serve(behaviour: str) -> None:
    from acp import RequestError, run_agent, text_block, update_agent_message
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        LoadSessionResponse,
        NewSessionResponse,
        PermissionOption,
        PromptCapabilities,
        PromptResponse,
        SessionNotification,
        SetSessionConfigOptionResponse,
        SetSessionModeResponse,
        ToolCallUpdate,
    )

    class Agent:
        conn: Any = None
        cwd = ""
        mode = ""

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        sessions = 0
        prompts = 0

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            prompts = PromptCapabilities(embedded_context=behaviour == "embed")
            load = bool(os.environ.get("SCRIPTED_AGENT_SESSIONS")) and not os.environ.get("SCRIPTED_AGENT_NO_LOAD")
            return InitializeResponse(
                protocol_version=1,
                agent_capabilities=AgentCapabilities(prompt_capabilities=prompts, load_session=load),
            )

        def _log(self, method: str, session_id: str, texts: list[str] | None = None) -> None:
            if os.environ.get("SCRIPTED_AGENT_SESSIONS"):
                with open(os.environ["SCRIPTED_AGENT_SESSIONS"], "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"method": method, "sessionId": session_id, "texts": texts}) + "\n")

        async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
            self.cwd = cwd
            self._log("session/load", session_id)
            await self.conn.session_update(session_id, update_agent_message(text_block(f"(replay of {session_id})")))
            return LoadSessionResponse()

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            self.cwd = cwd
            if behaviour == "modes":
                modes = json.loads(os.environ["SCRIPTED_AGENT_MODES"])
                self.mode = modes["currentModeId"]
                return NewSessionResponse.model_validate({"sessionId": "s1", "modes": modes})
            if behaviour == "auth":
                raise RequestError.auth_required()
            if behaviour == "every-update":
                return NewSessionResponse.model_validate(
                    {"sessionId": "s1", "modes": MODES, "configOptions": [CONFIG_OPTION]}
                )
            self.sessions += 1
            self._log("session/new", f"s{self.sessions}")
            return NewSessionResponse(session_id=f"s{self.sessions}")

        async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
            self.mode = mode_id
            if behaviour == "modes":
                with open(os.environ["SCRIPTED_AGENT_RECORD"], "a", encoding="utf-8") as handle:
                    handle.write(mode_id + "\n")
            return SetSessionModeResponse()

        async def set_config_option(
            self, config_id: str, session_id: str, value: Any, **kwargs: Any
        ) -> SetSessionConfigOptionResponse:
            option = dict(CONFIG_OPTION, currentValue=value)
            return SetSessionConfigOptionResponse.model_validate({"configOptions": [option]})

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            if behaviour in ("embed", "links") or (behaviour == "checkpoint" and "SCRIPTED_AGENT_RECORD" in os.environ):
                with open(os.environ["SCRIPTED_AGENT_RECORD"], "a", encoding="utf-8") as handle:
                    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in prompt]
                    handle.write(json.dumps(blocks) + "\n")
            self._log("session/prompt", session_id, [getattr(b, "text", "") for b in prompt])
            if behaviour == "every-update":
                for update in EVERY_UPDATE:
                    notification = SessionNotification.model_validate({"sessionId": session_id, "update": update})
                    await self.conn.session_update(session_id, notification.update)
            elif behaviour == "modes":
                await self._edit(session_id, os.path.join(self.cwd, "modes.txt"))
            elif behaviour == "checkpoint":
                if os.environ.get("SCRIPTED_AGENT_GATE"):  # a FIFO: the turn waits for the test's word
                    await self.conn.session_update(session_id, update_agent_message(text_block("At the gate.\n")))
                    await asyncio.to_thread(_pass_gate, os.environ["SCRIPTED_AGENT_GATE"])
                self.mode = "ask"  # reviewed.txt through a permission and fs/write_text_file
                await self._edit(session_id, os.path.join(self.cwd, "reviewed.txt"))
                self.prompts += 1
                numbered = f"written at prompt {self.prompts}\n" if os.environ.get("SCRIPTED_AGENT_SESSIONS") else ""
                with open(os.path.join(self.cwd, "outside.txt"), "w", encoding="utf-8") as handle:
                    handle.write(numbered or "written with no tool call\n")  # as a shell command would
                if os.environ.get("SCRIPTED_AGENT_SESSIONS"):
                    said = getattr(prompt[-1], "text", "")
                    await self.conn.session_update(session_id, update_agent_message(text_block(f"Done: {said}")))
            elif behaviour == "stream":
                await self._stream(session_id, int(os.environ.get("SCRIPTED_AGENT_CHUNKS", "100")))
            else:
                count = FLOOD if behaviour == "flood" else 1
                for _ in range(count):
                    await self.conn.session_update(session_id, update_agent_message(text_block(REPLY)))
            return PromptResponse(stop_reason="end_turn")

        async def _edit(self, session_id: str, path: str) -> None:
            """The file becomes "after\n", the way the current mode makes this agent write it."""
            with open(path, encoding="utf-8") as handle:
                before = handle.read()
            diff = {"type": "diff", "path": path, "oldText": before, "newText": "after\n"}
            title = f"Edit {os.path.basename(path)}"
            call = {"toolCallId": "e1", "title": title, "kind": "edit", "content": [diff]}
            await self._update(session_id, {"sessionUpdate": "tool_call", "status": "pending", **call})
            if self.mode in os.environ.get("SCRIPTED_AGENT_WRITES", "").split(","):
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write("after\n")
                status = "completed"
            elif self.mode in os.environ.get("SCRIPTED_AGENT_FS_WRITES", "").split(","):
                status = await self._write(session_id, path)
            else:
                answer = await self.conn.request_permission(
                    options=[
                        PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                        PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                    ],
                    session_id=session_id,
                    tool_call=ToolCallUpdate.model_validate(call),
                )
                allowed = getattr(answer.outcome, "option_id", None) == "yes"
                status = await self._write(session_id, path) if allowed else "failed"
            await self._update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": status})

        async def _write(self, session_id: str, path: str) -> str:
            try:
                await self.conn.write_text_file(content="after\n", path=path, session_id=session_id)
            except RequestError:
                return "failed"
            return "completed"

        async def _update(self, session_id: str, update: dict[str, Any]) -> None:
            notification = SessionNotification.model_validate({"sessionId": session_id, "update": update})
            await self.conn.session_update(session_id, notification.update)

        async def _stream(self, session_id: str, chunks: int) -> None:
            """Each chunk's text is `n sent previous;`: the time just before its write and how long
            the previous write took (the agent's own cost, to set the client's latency against)."""
            wrote_ns = 0
            gap = float(os.environ.get("SCRIPTED_AGENT_GAP_MS", "0")) / 1000
            for n in range(chunks):
                started = time.monotonic_ns()
                text = f"{n} {started} {wrote_ns};"
                await self.conn.session_update(session_id, update_agent_message(text_block(text)))
                wrote_ns = time.monotonic_ns() - started
                if gap:
                    await asyncio.sleep(gap)  # paced: each chunk travels alone, no backlog

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(Agent())  # type: ignore[arg-type]


MODES = {
    "currentModeId": "ask",
    "availableModes": [
        {"id": "ask", "name": "Ask", "description": "Asks before every edit"},
        {"id": "code", "name": "Code"},
    ],
}
CONFIG_OPTION = {
    "id": "model",
    "name": "Model",
    "type": "select",
    "category": "model",
    "currentValue": "small",
    "options": [
        {"group": "fast", "name": "Fast", "options": [{"value": "small", "name": "Small"}]},
        {"group": "strong", "name": "Strong", "options": [{"value": "large", "name": "Large", "description": "Slow"}]},
    ],
}
PATH = os.path.abspath("scripted.txt")
# One of each session/update kind (reference acp.md §1), in the wire's camelCase.
EVERY_UPDATE: list[dict[str, Any]] = [
    {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "what the user said"}},
    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking"}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "the reply"}},
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Compacting the conversation"},
        "_meta": {"claudeCode": {"kind": "informational"}},
    },
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "t1",
        "title": "Edit scripted.txt",
        "kind": "edit",
        "status": "pending",
        "locations": [{"path": PATH, "line": 4}],
    },
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "completed",
        "content": [
            {"type": "content", "content": {"type": "text", "text": "edited"}},
            {"type": "diff", "path": PATH, "oldText": "a\n", "newText": "b\n"},
        ],
    },
    {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "Edit the file", "priority": "high", "status": "completed"},
            {"content": "Fix it", "priority": "medium", "status": "pending"},
        ],
    },
    {"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": {"amount": 0.25, "currency": "USD"}},
    {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [
            {"name": "review", "description": "Review the changes", "input": {"hint": "what to review"}},
            {"name": "compact", "description": "Compact the conversation"},
        ],
    },
    {"sessionUpdate": "current_mode_update", "currentModeId": "code"},
    {"sessionUpdate": "config_option_update", "configOptions": [dict(CONFIG_OPTION, currentValue="large")]},
    {"sessionUpdate": "session_info_update", "title": "Fixing scripted.txt"},
]


if __name__ == "__main__":
    main()
