"""A scripted ACP agent for the chat view's tests, on the SDK's agent side (no hand-written
JSON-RPC): `python chat_agent.py [PID_FILE]`. What it does depends on the prompt's last line:

- `stream N`: a thought, a plan, a tool call (pending → completed), then the reply in N chunks
  ("chunk 0 chunk 1 …"), and a usage update;
- `run`: asks permission for a shell command (kind execute) with its own three options, and
  replies with the option chosen;
- `edit PATH TEXT`: asks permission for an edit (a diff with the full old and new text), then
  writes through fs/write_text_file and replies "written";
- `big COUNT SIZE`: COUNT chunks of SIZE characters each (the benchmark's 10 MB answer);
- `long LENGTH`: one line of LENGTH characters (minified code) in chunks of 1000, then a newline;
- `think COUNT`: a thought in COUNT chunks, then the reply "thought";
- `fence`: opens a code fence, writes a line in it, then waits until cancelled;
- `sneak PATH TEXT`: writes PATH itself without asking, then reports the edit (kind edit, a diff);
- `wait`: replies nothing until cancelled (the turn ends `cancelled`);
- `crash`: writes a line on stderr and exits 3 in the middle of the turn;
- anything else: echoes "echo: <prompt>".
Modes `default` and `yolo`; slash commands /explain and /review; session/load replays one
exchange. Every prompt (its text blocks, then one line per resource) and every load is appended
to PROMPTS_FILE (when the environment names one; with CHAT_AGENT_SESSION_IDS=1 each after
"[sN] ", its session), for the test to read. With CHAT_AGENT_EMBED=1
it takes embedded context (files' text inside the prompt), as Gemini CLI does; with
CHAT_AGENT_QUEUEING=1 it advertises `_meta.claudeCode.promptQueueing` (and, as the SDK's agent side
does, answers a prompt sent during a turn at once, beside the running one).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any


async def serve() -> None:
    from acp import (
        plan_entry,
        run_agent,
        start_tool_call,
        text_block,
        tool_diff_content,
        update_agent_message,
        update_agent_thought,
        update_plan,
        update_tool_call,
        update_user_message,
    )
    from acp.schema import (
        AgentCapabilities,
        AvailableCommand,
        AvailableCommandsUpdate,
        CurrentModeUpdate,
        InitializeResponse,
        LoadSessionResponse,
        NewSessionResponse,
        PermissionOption,
        PromptCapabilities,
        PromptResponse,
        SessionMode,
        SessionModeState,
        SetSessionModeResponse,
        ToolCallUpdate,
        UsageUpdate,
    )

    modes = [SessionMode(id="default", name="Ask first"), SessionMode(id="yolo", name="Allow all")]

    class Agent:
        conn: Any = None
        cancelled: asyncio.Event
        mode = "default"

        def on_connect(self, conn: Any) -> None:
            self.conn = conn
            self.cancelled = asyncio.Event()

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            embeds = os.environ.get("CHAT_AGENT_EMBED") == "1"  # takes embedded context (files' text in the prompt)
            # CHAT_AGENT_QUEUEING=1: it queues prompts sent during a turn, as claude-agent-acp says it does
            queues = os.environ.get("CHAT_AGENT_QUEUEING") == "1"
            queueing = {"claudeCode": {"promptQueueing": True}} if queues else None
            capabilities = AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(embedded_context=embeds), field_meta=queueing
            )
            return InitializeResponse(protocol_version=1, agent_capabilities=capabilities)

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            self.sessions = getattr(self, "sessions", 0) + 1  # s1, s2, … (a rewind opens another)
            session_id = f"s{self.sessions}"
            asyncio.get_running_loop().call_later(0, lambda: asyncio.ensure_future(self._commands(session_id)))
            return NewSessionResponse(
                session_id=session_id, modes=SessionModeState(current_mode_id=self.mode, available_modes=modes)
            )

        async def _commands(self, session_id: str) -> None:
            commands = [
                AvailableCommand(name="explain", description="Explain the selected code"),
                AvailableCommand(name="review", description="Review the changes"),
            ]
            await self.conn.session_update(
                session_id,
                AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands),
            )

        async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
            self.mode = mode_id
            await self.conn.session_update(
                session_id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id)
            )
            return SetSessionModeResponse()

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            texts = [getattr(block, "text", "") for block in prompt if getattr(block, "type", "") == "text"]
            files = [_resource(block) for block in prompt if getattr(block, "type", "") != "text"]
            shown = f"[{session_id}] " if os.environ.get("CHAT_AGENT_SESSION_IDS") else ""  # which session heard it
            self._record(shown + "\n".join(texts + files))
            words = texts[-1].strip().split(" ", 2)
            say = lambda text: self.conn.session_update(session_id, update_agent_message(text_block(text)))  # noqa: E731
            if words[0] == "stream":
                await self.conn.session_update(session_id, update_agent_thought(text_block("Let me think.")))
                await self.conn.session_update(
                    session_id, update_plan([plan_entry("Read the code"), plan_entry("Answer", status="in_progress")])
                )
                await self.conn.session_update(
                    session_id, start_tool_call("t1", "Read notes.txt", kind="read", status="pending")
                )
                await self.conn.session_update(session_id, update_tool_call("t1", status="completed"))
                for index in range(int(words[1])):
                    await say(f"chunk {index} ")
                await self.conn.session_update(
                    session_id, UsageUpdate(session_update="usage_update", used=1200, size=100000)
                )
            elif words[0] == "big":  # big COUNT SIZE: COUNT chunks of SIZE characters, as fast as it can
                piece = "x" * (int(words[2].split()[0]) - 1) + "\n"
                for _ in range(int(words[1])):
                    await say(piece)
            elif words[0] == "long":
                length = int(words[1])
                for start in range(0, length, 1000):
                    await say(chr(0x61 + (start // 1000) % 26) * (min(start + 1000, length) - start))
                await say("\n")
            elif words[0] == "think":
                for index in range(int(words[1])):
                    await self.conn.session_update(session_id, update_agent_thought(text_block(f"t{index} ")))
                await say("thought")
            elif words[0] == "fence":
                await say("Here is the code:\n```python\nprint('cut off')\n")
                await self.cancelled.wait()
                self.cancelled.clear()
                return PromptResponse(stop_reason="cancelled")
            elif words[0] == "run":
                options = [
                    PermissionOption(option_id="go", name="Run it", kind="allow_once"),
                    PermissionOption(option_id="always", name="Always run", kind="allow_always"),
                    PermissionOption(option_id="no", name="Do not run", kind="reject_once"),
                ]
                call = ToolCallUpdate(tool_call_id="t2", title="ls -la", kind="execute", status="pending")
                answer = await self.conn.request_permission(session_id, call, options)
                outcome = answer.outcome
                await say(f"chosen: {getattr(outcome, 'option_id', 'cancelled')}")
            elif words[0] == "edit":
                path, text = words[1], words[2]
                old = ""
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as handle:
                        old = handle.read()
                options = [
                    PermissionOption(option_id="once", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="session", name="Allow for this session", kind="allow_always"),
                    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ]
                call = ToolCallUpdate(
                    tool_call_id="t3",
                    title=f"Write {os.path.basename(path)}",
                    kind="edit",
                    status="pending",
                    content=[tool_diff_content(path, text, old)],
                )
                await self.conn.session_update(
                    session_id, start_tool_call("t3", call.title or "", kind="edit", status="pending")
                )
                answer = await self.conn.request_permission(session_id, call, options)
                chosen = getattr(answer.outcome, "option_id", None)
                if chosen in ("once", "session"):
                    await self.conn.write_text_file(content=text, path=path, session_id=session_id)
                    await self.conn.session_update(session_id, update_tool_call("t3", status="completed"))
                    await say("written")
                else:
                    await self.conn.session_update(session_id, update_tool_call("t3", status="failed"))
                    await say("not written")
            elif words[0] == "sneak":  # writes the file itself, asking nothing (an agent in an auto mode)
                path, text = words[1], words[2]
                with open(path, encoding="utf-8") as handle:
                    old = handle.read()
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
                diff = [tool_diff_content(path, text, old)]
                await self.conn.session_update(
                    session_id, start_tool_call("t4", "Edit quietly", kind="edit", status="completed", content=diff)
                )
                await say("done quietly")
            elif words[0] == "wait":
                await self.cancelled.wait()
                self.cancelled.clear()
                return PromptResponse(stop_reason="cancelled")
            elif words[0] == "crash":
                await say("about to crash")
                sys.stderr.write("fatal: the chat agent crashed on purpose\n")
                sys.stderr.flush()
                os._exit(3)
            else:
                await say(f"echo: {texts[-1]}")
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            self.cancelled.set()

        async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
            self._record(f"load {session_id}")
            await self.conn.session_update(session_id, update_user_message(text_block("the earlier prompt")))
            await self.conn.session_update(session_id, update_agent_message(text_block("the earlier answer")))
            return LoadSessionResponse(modes=SessionModeState(current_mode_id=self.mode, available_modes=modes))

        def _record(self, text: str) -> None:
            record = os.environ.get("PROMPTS_FILE")
            if record:
                with open(record, "a", encoding="utf-8") as handle:
                    handle.write(text + "\n---\n")

    await run_agent(Agent())  # type: ignore[arg-type]


def _resource(block: Any) -> str:
    """`resource <uri>` for a resource link, `embedded <uri>: <text>` for embedded context."""
    inner = getattr(block, "resource", None)
    if inner is not None:
        return f"embedded {inner.uri}: {getattr(inner, 'text', '')}"
    return f"resource {getattr(block, 'uri', '?')}"


def main() -> None:
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
    asyncio.run(serve())


if __name__ == "__main__":
    main()
