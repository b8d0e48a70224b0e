"""A small ACP agent for the hostile-agent tests, built on the SDK's agent side (no hand-written
JSON-RPC): `python scripted_agent.py BEHAVIOUR [PID_FILE]`.

Behaviours: `garbage-then-ok` (non-ACP lines, a 2 MiB non-JSON line and an unroutable
`$/cancel_request` on stdout, then a normal agent), `garbage-only` (never answers), `crash` (a
message on stderr, exit 3), `auth` (session/new answers "Authentication required"), `flood` (FLOOD
updates in one turn), `huge` (a 3 MiB line).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

FLOOD = 20000
REPLY = "Hello from the scripted agent."


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
    from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse

    class Agent:
        conn: Any = None

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities())

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            if behaviour == "auth":
                raise RequestError.auth_required()
            return NewSessionResponse(session_id="s1")

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            count = FLOOD if behaviour == "flood" else 1
            for _ in range(count):
                await self.conn.session_update(session_id, update_agent_message(text_block(REPLY)))
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(Agent())  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
