"""A scripted ACP agent with a history of past sessions, on the SDK's agent side (no hand-written
JSON-RPC): `python history_agent.py`. Configured by its environment:

- `HISTORY_AGENT_SESSIONS`: a JSON file, a list of `{sessionId, cwd, title, updatedAt, history}`
  (`history`: `[["user"|"agent", text], …]`); `session/delete` removes one from the file, a new
  session is added to it, each prompt appends its turn (so a later process sees them all).
- `HISTORY_AGENT_OFFERS`: what `initialize` offers, comma-separated among `load,list,resume,close,delete`
  (default: all of them).
- `HISTORY_AGENT_PAGE`: `session/list`'s page size (default 2); `nextCursor` is `offset:N`, as
  claude-agent-acp's. The `cwd` filter is ignored unless `HISTORY_AGENT_FILTER=1` (the client must
  keep only its folder's sessions anyway).
- `HISTORY_AGENT_CONTEXT=1`: `session/load` first replays a hidden `<session_context>` user chunk, as
  Gemini CLI 0.61.0 does.
- `HISTORY_AGENT_RECORD`: each request is appended as a JSON line `{"method", "params"}`.

A prompt's reply names the session's earlier user turns (`Earlier: a | b.`): what a model would see
of a continued conversation.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

CONTEXT = "<session_context>\nThis is the scripted agent. Today's date is hidden.\n</session_context>"


def _offers() -> set[str]:
    return set(os.environ.get("HISTORY_AGENT_OFFERS", "load,list,resume,close,delete").split(","))


def _read() -> list[dict[str, Any]]:
    with open(os.environ["HISTORY_AGENT_SESSIONS"], encoding="utf-8") as handle:
        return list(json.load(handle))


def _write(sessions: list[dict[str, Any]]) -> None:
    with open(os.environ["HISTORY_AGENT_SESSIONS"], "w", encoding="utf-8") as handle:
        json.dump(sessions, handle)


def _record(method: str, params: dict[str, Any]) -> None:
    path = os.environ.get("HISTORY_AGENT_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"method": method, "params": params}) + "\n")


async def serve() -> None:
    import acp.agent.connection as agent_side
    from acp import RequestError, run_agent, text_block, update_agent_message, update_user_message
    from acp.schema import (
        AgentCapabilities,
        CloseSessionResponse,
        DeleteSessionRequest,
        DeleteSessionResponse,
        InitializeResponse,
        ListSessionsResponse,
        LoadSessionResponse,
        NewSessionResponse,
        PromptResponse,
        ResumeSessionResponse,
        SessionCapabilities,
    )
    from acp.utils import normalize_result

    # SDK 0.12.1's agent side routes no `session/delete` (acp/agent/router.py): added here, the
    # way the router adds the others.
    build = agent_side.build_agent_router

    def with_delete(agent: Any, use_unstable_protocol: bool = False) -> Any:
        router = build(agent, use_unstable_protocol=use_unstable_protocol)
        router.route_request(
            "session/delete", DeleteSessionRequest, agent, "delete_session", adapt_result=normalize_result
        )
        return router

    agent_side.build_agent_router = with_delete

    class Agent:
        conn: Any = None

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            offers = _offers()
            capabilities = {name: {} for name in ("list", "resume", "close", "delete") if name in offers}
            return InitializeResponse(
                protocol_version=1,
                agent_capabilities=AgentCapabilities(
                    load_session="load" in offers,
                    session_capabilities=SessionCapabilities.model_validate(capabilities),
                ),
            )

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            sessions = _read()
            session_id = f"new-{len(sessions) + 1}"
            sessions.append(
                {"sessionId": session_id, "cwd": cwd, "title": "", "updatedAt": "2026-12-06T04:00:00Z", "history": []}
            )
            _write(sessions)
            _record("session/new", {"cwd": cwd})
            return NewSessionResponse(session_id=session_id)

        async def list_sessions(self, cursor: str | None = None, cwd: str | None = None, **kwargs: Any) -> Any:
            _record("session/list", {"cursor": cursor, "cwd": cwd})
            sessions = _read()
            if cwd is not None and os.environ.get("HISTORY_AGENT_FILTER") == "1":
                sessions = [s for s in sessions if s["cwd"] == cwd]
            start = int(cursor.split(":")[1]) if cursor else 0
            size = int(os.environ.get("HISTORY_AGENT_PAGE", "2"))
            keys = ("sessionId", "cwd", "title", "updatedAt")
            page = [{k: s[k] for k in keys} for s in sessions[start : start + size]]
            more = start + size < len(sessions)
            answer = {"sessions": page, **({"nextCursor": f"offset:{start + size}"} if more else {})}
            return ListSessionsResponse.model_validate(answer)

        def _find(self, session_id: str) -> dict[str, Any]:
            found = next((s for s in _read() if s["sessionId"] == session_id), None)
            if found is None:
                raise RequestError.resource_not_found(session_id)
            return found

        async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
            _record("session/load", {"sessionId": session_id, "cwd": cwd})
            found = self._find(session_id)
            if os.environ.get("HISTORY_AGENT_CONTEXT") == "1":
                await self.conn.session_update(session_id, update_user_message(text_block(CONTEXT)))
            for role, text in found["history"]:
                make = update_user_message if role == "user" else update_agent_message
                await self.conn.session_update(session_id, make(text_block(text)))
            return LoadSessionResponse()

        async def resume_session(self, cwd: str, session_id: str, **kwargs: Any) -> ResumeSessionResponse:
            _record("session/resume", {"sessionId": session_id, "cwd": cwd})
            self._find(session_id)
            return ResumeSessionResponse()

        async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
            _record("session/close", {"sessionId": session_id})
            return CloseSessionResponse()

        async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
            _record("session/delete", {"sessionId": session_id})
            self._find(session_id)
            _write([s for s in _read() if s["sessionId"] != session_id])
            return DeleteSessionResponse()

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            text = " ".join(getattr(block, "text", "") for block in prompt)
            _record("session/prompt", {"sessionId": session_id, "text": text})
            sessions = _read()
            found = next((s for s in sessions if s["sessionId"] == session_id), None)
            if found is None:
                raise RequestError.resource_not_found(session_id)
            earlier = [t for role, t in found["history"] if role == "user"]
            reply = f"Earlier: {' | '.join(earlier) or 'nothing'}."
            await self.conn.session_update(session_id, update_agent_message(text_block(reply)))
            found["history"] += [["user", text], ["agent", reply]]
            _write(sessions)
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(Agent(), use_unstable_protocol=True)  # type: ignore[arg-type]


def sessions_file(path: str, sessions: list[dict[str, Any]]) -> str:
    """Write a history for the agent to `path` (the tests' helper); returns `path`."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(sessions, handle)
    return path


def session(session_id: str, cwd: str, title: str, updated_at: str, *history: tuple[str, str]) -> dict[str, Any]:
    return {"sessionId": session_id, "cwd": cwd, "title": title, "updatedAt": updated_at, "history": list(history)}


if __name__ == "__main__":
    asyncio.run(serve())
