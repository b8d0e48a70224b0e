"""A scripted ACP agent for prompt queueing (issue #41), on the SDK's agent side:
`python queue_agent.py RECORD [queueing]`.

With `queueing` it advertises `agentCapabilities._meta.claudeCode.promptQueueing: true`, as
claude-agent-acp does, and answers prompts in order (a prompt that arrives during a turn waits
for it, as claude-agent-acp's queue does); without it, it is Gemini CLI: a prompt that arrives
during a turn CANCELS the running one (research 40/41 §4). Each prompt's arrival and end go to
RECORD as a JSON line `{"event", "text", "running"}` (`running`: the turns under way when it
arrived, itself included). A prompt whose text is `hold` says "holding" and waits until the
client's session/set_mode names the mode `release`; any other prompt replies "echo: TEXT".
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def serve(record: str, queueing: bool) -> None:
    from acp import run_agent, text_block, update_agent_message
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        NewSessionResponse,
        PromptResponse,
        SetSessionModeResponse,
    )

    def write(event: str, text: str, running: int) -> None:
        with open(record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, "text": text, "running": running}) + "\n")

    class Agent:
        conn: Any = None
        running = 0
        release = asyncio.Event()
        one = asyncio.Lock()  # the agent's own queue (queueing)
        current: asyncio.Event | None = None  # set to cancel the running turn (not queueing)

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            meta = {"claudeCode": {"promptQueueing": True}} if queueing else None
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities(field_meta=meta))

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            return NewSessionResponse(session_id="s1")

        async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
            write("mode", mode_id, self.running)
            if mode_id == "release":
                self.release.set()
            return SetSessionModeResponse()

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            text = " ".join(getattr(b, "text", "") for b in prompt).strip()
            self.running += 1
            write("received", text, self.running)
            try:
                if queueing:
                    if self.one.locked():  # queued behind the running turn, as claude-agent-acp does
                        queued = update_agent_message(text_block(f"queued: {text}\n"))
                        await self.conn.session_update(session_id, queued)
                    async with self.one:
                        return await self._turn(session_id, text)
                if self.current is not None:  # Gemini CLI: the running turn is cancelled
                    self.current.set()
                return await self._turn(session_id, text)
            finally:
                self.running -= 1

        async def _turn(self, session_id: str, text: str) -> PromptResponse:
            cancelled = self.current = asyncio.Event()
            say = lambda words: self.conn.session_update(session_id, update_agent_message(text_block(words)))  # noqa: E731
            if text.endswith("hold"):
                await say("holding\n")
                done = asyncio.ensure_future(self.release.wait())
                stop = asyncio.ensure_future(cancelled.wait())
                await asyncio.wait([done, stop], return_when=asyncio.FIRST_COMPLETED)
                done.cancel()
                stop.cancel()
                if cancelled.is_set():
                    write("ended", text, self.running)
                    return PromptResponse(stop_reason="cancelled")
            else:
                await say(f"echo: {text}\n")
            write("ended", text, self.running)
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            if self.current is not None:
                self.current.set()

    await run_agent(Agent())  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2:] == ["queueing"]))
