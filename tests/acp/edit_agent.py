"""An ACP agent that edits files the way agents we never tested do, on the SDK's agent side (no
hand-written JSON-RPC): `python edit_agent.py SCRIPT` where SCRIPT is a JSON file of steps, run in
order on every prompt:

- `{"read": PATH}`: fs/read_text_file; the text (raw, CRLF included) is "the text read";
- `{"update": UPDATE}`: a session/update (a `tool_call` or `tool_call_update` in the wire's names);
- `{"ask": TOOL_CALL}`: session/request_permission with that `toolCall` (only `toolCallId` is
  required) and the options allow_once `allow` and reject_once `reject`;
- `{"write": PATH, "content": TEXT}`: fs/write_text_file, only when the last request was allowed
  (`"anyway": true` writes in any case);
- `{"disk": PATH, "content": TEXT}`: the agent writes the disk itself, only when allowed;
  `{"rename": [FROM, TO]}` likewise renames a file, `{"remove": PATH}` deletes one;
- `{"stop_if_rejected": REASON}`: the turn ends with stopReason REASON (`cancelled`) right away
  when the last request was not allowed (an agent whose reject ends its turn);
- `{"own": PATH, "bytes": LATIN1, "how": "write"|"append"|"rename"}`: the agent writes the file
  itself, not through the client (as agents with their own file tools do): the bytes (each
  character one byte; or `"from": FILE`, that file's bytes now) replace the file, are appended to
  it, or are written to a file beside it that is renamed over it; only when the last request was
  allowed (or `"anyway": true`);
In UPDATE and TOOL_CALL, `{"diff_of_read": [OLD, NEW], "path": PATH}` inside `content` becomes a
diff block of the whole text read (`oldText`) and that text with OLD replaced by NEW (`newText`);
`{"read_with": [OLD, NEW]}` as a write's content is the same new text. What happened (each
request's outcome or error) is appended as JSON lines to $EDIT_AGENT_RECORD when set; the reply is
"done". SCRIPT is read again at every prompt (a test may run many turns in one chat); a step with
`"turn": N` runs only in the chat's Nth prompt. With $EDIT_AGENT_PROMPTS set, every prompt's text
blocks are recorded first (`{"prompt": [TEXT, …], "during_turn": BOOL}`: whether it came while
another prompt ran). With
$EDIT_AGENT_QUEUEING set the agent advertises prompt queueing as claude-agent-acp does
(`agentCapabilities._meta.claudeCode.promptQueueing`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any


def main() -> None:
    asyncio.run(serve(sys.argv[1]))


def load(script: str) -> list[dict[str, Any]]:
    with open(script, encoding="utf-8") as handle:
        return json.load(handle)


def record(entry: dict[str, Any]) -> None:
    path = os.environ.get("EDIT_AGENT_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


async def serve(script: str) -> None:
    from acp import RequestError, run_agent, text_block, update_agent_message
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        NewSessionResponse,
        PermissionOption,
        PromptResponse,
        SessionNotification,
        ToolCallUpdate,
    )

    options = [
        PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
        PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    ]

    class Agent:
        conn: Any = None
        turns = 0
        running = 0

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            meta = {"claudeCode": {"promptQueueing": True}} if os.environ.get("EDIT_AGENT_QUEUEING") else None
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities(field_meta=meta))

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            return NewSessionResponse(session_id="s1")

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            self.turns += 1
            texts = [block.text for block in prompt if getattr(block, "type", "") == "text"]
            if os.environ.get("EDIT_AGENT_PROMPTS"):
                record({"prompt": texts, "during_turn": self.running > 0})
            self.running += 1
            try:
                return await self.steps(session_id, self.turns)
            finally:
                self.running -= 1

        async def steps(self, session_id: str, turn: int) -> PromptResponse:
            read = ""
            allowed = False
            for step in load(script):
                if step.get("turn", turn) != turn:
                    continue
                if "read" in step:
                    read = (await self.conn.read_text_file(session_id=session_id, path=step["read"])).content
                    record({"read": read})
                elif "update" in step:
                    update = with_diffs(step["update"], read)
                    notification = SessionNotification.model_validate({"sessionId": session_id, "update": update})
                    await self.conn.session_update(session_id, notification.update)
                elif "ask" in step:
                    call = ToolCallUpdate.model_validate(with_diffs(step["ask"], read))
                    answer = await self.conn.request_permission(session_id=session_id, tool_call=call, options=options)
                    outcome = answer.outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
                    allowed = outcome.get("optionId") == "allow"
                    record({"permission": outcome})
                elif "stop_if_rejected" in step and not allowed:
                    return PromptResponse(stop_reason=step["stop_if_rejected"])
                elif "disk" in step and allowed:
                    with open(step["disk"], "w", encoding="utf-8", newline="") as handle:
                        handle.write(step["content"])
                elif "rename" in step and allowed:
                    os.replace(*step["rename"])
                elif "remove" in step and allowed:
                    os.remove(step["remove"])
                elif "own" in step and (allowed or step.get("anyway")):
                    write_itself(step["own"], own_bytes(step), step.get("how", "write"))
                    record({"own": step.get("how", "write")})
                elif "write" in step and (allowed or step.get("anyway")):
                    content = step["content"]
                    if isinstance(content, dict):
                        old, new = content["read_with"]
                        content = read.replace(old, new)
                    try:
                        await self.conn.write_text_file(session_id=session_id, path=step["write"], content=content)
                        record({"write": "ok"})
                    except RequestError as exc:
                        record({"write": "refused", "message": str(exc)})
            await self.conn.session_update(session_id, update_agent_message(text_block("done")))
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(Agent())  # type: ignore[arg-type]


def own_bytes(step: dict[str, Any]) -> bytes:
    if "from" in step:
        with open(step["from"], "rb") as handle:
            return handle.read()
    return step["bytes"].encode("latin-1")


def write_itself(path: str, data: bytes, how: str) -> None:
    """The agent's own file tool: overwrite, append, or a file beside it renamed over it."""
    if how == "rename":
        beside = f"{path}.agent-tmp"
        with open(beside, "wb") as handle:
            handle.write(data)
        os.replace(beside, path)
        return
    with open(path, "ab" if how == "append" else "wb") as handle:
        handle.write(data)


def with_diffs(data: dict[str, Any], read: str) -> dict[str, Any]:
    content = data.get("content")
    if not isinstance(content, list):
        return data
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, dict) and "diff_of_read" in block:
            old, new = block["diff_of_read"]
            blocks.append({"type": "diff", "path": block["path"], "oldText": read, "newText": read.replace(old, new)})
        else:
            blocks.append(block)
    return {**data, "content": blocks}


if __name__ == "__main__":
    main()
