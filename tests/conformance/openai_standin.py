"""A local stand-in for an OpenAI-compatible model API (`POST /v1/chat/completions`), scripted per test.

Most agents in the ACP registry accept such a base URL (Qwen Code: `OPENAI_BASE_URL`; opencode: a
custom provider), so they run here offline and deterministically. The script is a list of steps,
one per model turn of the conversation: a `ToolCall` ("call tool X with args Y") or a text ("then say
Z"). Which step answers a request is decided by how many tool results the conversation already
holds, so side requests an agent makes (a session title, a "who speaks next" check) never consume a
step: they get the `side_answer`, and a request that offers no tools is always a side request.

Streaming (`"stream": true`, SSE `chat.completion.chunk`s ending with `data: [DONE]`) and plain JSON
answers are both served. Every request body is kept in `requests`, for asserting what the agent told
its model.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MODEL = "standin-coder"
API_KEY = "sk-standin-conformance-0123456789"


@dataclass(frozen=True)
class ToolCall:
    """One model turn that calls the agent's tool `name` with `arguments`."""

    name: str
    arguments: dict[str, Any]


Step = ToolCall | str


def tool_call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


class OpenAIStandIn:
    """`with OpenAIStandIn(steps) as model:` serves `model.base_url` (".../v1") until the block ends."""

    def __init__(self, steps: Sequence[Step], side_answer: str = "Done") -> None:
        self.steps = list(steps)
        self.side_answer = side_answer
        self.requests: list[dict[str, Any]] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        config = uvicorn.Config(self._app(), log_level="error", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

    def __enter__(self) -> OpenAIStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()

    def tool_messages(self) -> list[str]:
        """The content of every tool result the agent sent back (what it told the model happened)."""
        found: list[str] = []
        for request in self.requests:
            for message in request.get("messages", []):
                if message.get("role") == "tool":
                    found.append(_text(message.get("content")))
        return found

    def answer(self, request: dict[str, Any]) -> Step:
        """The step for this request: the next unanswered one, else the last text (or `side_answer`)."""
        if not request.get("tools"):
            return self.side_answer
        done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
        tool_steps = [s for s in self.steps if isinstance(s, ToolCall)]
        if done < len(tool_steps):
            return tool_steps[done]
        texts = [s for s in self.steps if isinstance(s, str)]
        return texts[min(done - len(tool_steps), len(texts) - 1)] if texts else self.side_answer

    def _app(self) -> Starlette:
        routes = [
            Route("/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]
        return Starlette(routes=routes)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "standin"}]})

    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        step = self.answer(body)
        if body.get("stream"):
            chunks = _chunks(body, step)
            return StreamingResponse(_sse(chunks), media_type="text/event-stream")
        return JSONResponse(_completion(body, step))


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))  # type: ignore[misc]
    return str(content or "")


def _call_id(step: ToolCall, body: dict[str, Any]) -> str:
    return f"call_{len(body.get('messages', []))}_{step.name}"


def _completion(body: dict[str, Any], step: Step) -> dict[str, Any]:
    if isinstance(step, ToolCall):
        call = {"id": _call_id(step, body), "type": "function", "function": _function(step)}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": step}, "stop"
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {**_envelope(body, "chat.completion"), "choices": [choice], "usage": _USAGE}


def _function(step: ToolCall) -> dict[str, str]:
    return {"name": step.name, "arguments": json.dumps(step.arguments)}


def _chunks(body: dict[str, Any], step: Step) -> list[dict[str, Any]]:
    """The SSE chunks of one streamed answer: role, then the content or the tool call, then the end."""

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**_envelope(body, "chat.completion.chunk"), "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": ""}, None)]
    if isinstance(step, ToolCall):
        call = {"index": 0, "id": _call_id(step, body), "type": "function", "function": _function(step)}
        chunks += [chunk({"tool_calls": [call]}, None), chunk({}, "tool_calls")]
    else:
        chunks += [chunk({"content": step}, None), chunk({}, "stop")]
    chunks.append({**_envelope(body, "chat.completion.chunk"), "choices": [], "usage": _USAGE})
    return chunks


async def _sse(chunks: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _envelope(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"id": "chatcmpl-standin", "object": kind, "created": int(time.time()), "model": body.get("model", MODEL)}


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
