"""A scripted ACP agent for the tool cards and the client terminal (issue #41), on the SDK's agent
side (no hand-written JSON-RPC): `python tool_agent.py`. What a turn does depends on the prompt:

- `tools`: an execute call naming three files of its cwd (a.py line 2, b.py line 0, sub/c.py with
  no line), then completed with output holding markup and terminal escapes (HOSTILE_OUTPUT);
- `term {JSON}`: as an honest agent does, session/request_permission first (an execute call "term1",
  or the JSON's `call`, whose `rawInput.command` and title are the JSON's `asked`, else the command
  line; none when `"ask": false`, as a hostile agent does), then — whatever the answer, to test the client —
  terminal/create with the JSON's `command`, `args`, `cwd`, `env` (a dict),
  `limit` (outputByteLimit), a tool call embedding the terminal, then terminal/wait_for_exit,
  terminal/output, terminal/release (with `"again": true`, then the same command once more without
  asking: `again` is "ran" or the refusal); the reply is the JSON of what it saw
  (`{"id", "output", "truncated", "exit"}`; with `"quiet": true` the output's length only), or
  `{"error": message}` when a request was refused;
- `term-kill {JSON}`: the same, but once the output holds the JSON's `until` (default `ready`) it
  sends terminal/kill first;
- `term-keep {JSON}`: terminal/create and a tool call embedding it, then (once the output holds
  `until`, unless that is "") the reply `{"id"}`: the terminal is never released (the chat's end
  must end it).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

HOSTILE_OUTPUT = "line 1\n<script>alert('x')</script>\n\x1b[31mred text\x1b[0m\n<b>bold?</b> & done\n"


async def serve() -> None:
    from acp import (
        RequestError,
        run_agent,
        start_tool_call,
        text_block,
        tool_content,
        tool_terminal_ref,
        update_agent_message,
        update_tool_call,
    )
    from acp.schema import (
        AgentCapabilities,
        EnvVariable,
        InitializeResponse,
        NewSessionResponse,
        PermissionOption,
        PromptResponse,
        ToolCallLocation,
        ToolCallUpdate,
    )

    class Agent:
        conn: Any = None
        cwd = ""
        terminal_capable = False

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            capabilities = kwargs.get("client_capabilities")
            self.terminal_capable = bool(capabilities and capabilities.terminal)
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities())

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            self.cwd = cwd
            return NewSessionResponse(session_id="s1")

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            text = "".join(getattr(b, "text", "") for b in prompt if getattr(b, "type", "") == "text").strip()
            word, _, rest = text.partition(" ")
            say = lambda words: self.conn.session_update(session_id, update_agent_message(text_block(words)))  # noqa: E731
            if word == "tools":
                await self._tools(session_id)
                await say("tools done")
            elif word.startswith("term"):
                try:
                    await say(json.dumps(await self._terminal(session_id, word, json.loads(rest))))
                except RequestError as exc:
                    await say(json.dumps({"error": str(exc), "capable": self.terminal_capable}))
            else:
                await say(f"echo: {text}")
            return PromptResponse(stop_reason="end_turn")

        async def _tools(self, session_id: str) -> None:
            where = [
                ToolCallLocation(path=os.path.join(self.cwd, "a.py"), line=2),
                ToolCallLocation(path=os.path.join(self.cwd, "b.py"), line=0),
                ToolCallLocation(path=os.path.join(self.cwd, "sub", "c.py")),
            ]
            call = start_tool_call("t1", "Run the tests", kind="execute", status="in_progress", locations=where)
            await self.conn.session_update(session_id, call)
            output = [tool_content(text_block(HOSTILE_OUTPUT))]
            await self.conn.session_update(session_id, update_tool_call("t1", status="completed", content=output))

        async def _terminal(self, session_id: str, word: str, spec: dict[str, Any]) -> dict[str, Any]:
            env = [EnvVariable(name=k, value=v) for k, v in (spec.get("env") or {}).items()]
            if spec.get("ask", True):
                line = spec.get("asked") or " ".join([spec["command"], *(spec.get("args") or [])])
                await self.conn.request_permission(
                    session_id=session_id,
                    tool_call=ToolCallUpdate(
                        tool_call_id=spec.get("call", "term1"), title=line, kind="execute", raw_input={"command": line}
                    ),
                    options=[
                        PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                        PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
                        PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                    ],
                )
            created = await self.conn.create_terminal(
                session_id=session_id,
                command=spec["command"],
                args=spec.get("args"),
                cwd=spec.get("cwd"),
                env=env or None,
                output_byte_limit=spec.get("limit"),
            )
            terminal_id = created.terminal_id
            await self.conn.session_update(
                session_id,
                start_tool_call(
                    spec.get("call", "term1"),
                    spec["command"],
                    kind="execute",
                    status="in_progress",
                    content=[tool_terminal_ref(terminal_id)],
                ),
            )
            if word in ("term-kill", "term-keep") and spec.get("until", "ready"):
                await self._until(session_id, terminal_id, spec.get("until", "ready"))
            if word == "term-keep":
                return {"id": terminal_id}
            if word == "term-kill":
                await self.conn.kill_terminal(session_id=session_id, terminal_id=terminal_id)
            exited = await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal_id)
            seen = await self.conn.terminal_output(session_id=session_id, terminal_id=terminal_id)
            await self.conn.session_update(session_id, update_tool_call("term1", status="completed"))
            await self.conn.release_terminal(session_id=session_id, terminal_id=terminal_id)
            again = await self._again(session_id, spec) if spec.get("again") else None
            return {
                "again": again,
                "id": terminal_id,
                "output": f"{len(seen.output)} characters" if spec.get("quiet") else seen.output,
                "truncated": seen.truncated,
                "exit": {"code": exited.exit_code, "signal": exited.signal},
            }

        async def _again(self, session_id: str, spec: dict[str, Any]) -> str:
            """The same command once more, without asking again: "ran", or the client's refusal."""
            try:
                created = await self.conn.create_terminal(
                    session_id=session_id, command=spec["command"], args=spec.get("args")
                )
            except RequestError as exc:
                return str(exc)
            await self.conn.wait_for_terminal_exit(session_id=session_id, terminal_id=created.terminal_id)
            await self.conn.release_terminal(session_id=session_id, terminal_id=created.terminal_id)
            return "ran"

        async def _until(self, session_id: str, terminal_id: str, text: str) -> None:
            """Poll the output until it holds `text`, as real agents do (the test waits on the reply)."""
            while text not in (await self.conn.terminal_output(session_id=session_id, terminal_id=terminal_id)).output:
                await asyncio.sleep(0.05)

    await run_agent(Agent())  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(serve())
