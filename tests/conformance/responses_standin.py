"""A local stand-in for the OpenAI Responses API (`POST /v1/responses`, streamed), scripted per test.

Codex (and so `codex-acp`) speaks only this API. The script is the same as `OpenAIStandIn`'s: a list
of steps, one per model turn, a `ToolCall` or a text. Which step answers is decided by how many tool
results (`function_call_output`, `custom_tool_call_output`) the request's `input` already holds, so a
request that offers no tools (a title, a summary) never consumes a step: it gets `side_answer`.

A `ToolCall` goes out as the kind of tool the agent offered under that name: a `custom` (freeform)
tool gets a `custom_tool_call` whose `input` is `arguments["input"]`; a `function` tool gets a
`function_call` with the JSON arguments. Every request body is kept in `requests`.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.conformance.openai_standin import MODEL, Step, ToolCall

TOOL_RESULTS = ("function_call_output", "custom_tool_call_output")


class ResponsesStandIn:
    """`with ResponsesStandIn(steps) as model:` serves `model.base_url` (".../v1") until the block ends."""

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

    def __enter__(self) -> ResponsesStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._socket.close()

    def tool_messages(self) -> list[str]:
        """The output of every tool result the agent sent back (what it told the model happened)."""
        found: list[str] = []
        for request in self.requests:
            for item in _items(request):
                if item.get("type") in TOOL_RESULTS:
                    found.append(_text(item.get("output")))
        return found

    def answer(self, request: dict[str, Any]) -> Step:
        """The step for this request: the next unanswered one, else the last text (or `side_answer`)."""
        if not request.get("tools"):
            return self.side_answer
        done = sum(1 for item in _items(request) if item.get("type") in TOOL_RESULTS)
        tool_steps = [s for s in self.steps if isinstance(s, ToolCall)]
        if done < len(tool_steps):
            return tool_steps[done]
        texts = [s for s in self.steps if isinstance(s, str)]
        return texts[min(done - len(tool_steps), len(texts) - 1)] if texts else self.side_answer

    def _app(self) -> Starlette:
        routes = [
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]
        return Starlette(routes=routes)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "standin"}]})

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        number = len(self.requests)
        item = _output_item(body, self.answer(body), number)
        return StreamingResponse(_sse(_events(body, item, number)), media_type="text/event-stream")


def _items(request: dict[str, Any]) -> list[dict[str, Any]]:
    items = request.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []  # type: ignore[misc]


def _text(output: Any) -> str:
    if isinstance(output, list):
        return "".join(str(part.get("text", "")) for part in output if isinstance(part, dict))  # type: ignore[misc]
    if isinstance(output, dict):
        return str(output.get("content", ""))  # type: ignore[misc]
    return str(output or "")


def _tool_kind(body: dict[str, Any], name: str) -> str:
    """The kind of tool the agent offered as `name`: "custom" (freeform) or "function"."""
    for tool in body.get("tools", []):
        if isinstance(tool, dict) and tool.get("name") == name:  # type: ignore[misc]
            return str(tool.get("type", "function"))  # type: ignore[misc]
    return "function"


def _output_item(body: dict[str, Any], step: Step, number: int) -> dict[str, Any]:
    if isinstance(step, ToolCall):
        call_id = f"call_{number}_{step.name}"
        if _tool_kind(body, step.name) == "custom":
            item_id = f"ctc_{number}"
            return {"type": "custom_tool_call", "id": item_id, "status": "completed", "call_id": call_id,
                    "name": step.name, "input": str(step.arguments.get("input", ""))}  # fmt: skip
        return {"type": "function_call", "id": f"fc_{number}", "status": "completed", "call_id": call_id,
                "name": step.name, "arguments": json.dumps(step.arguments)}  # fmt: skip
    content = [{"type": "output_text", "text": step, "annotations": []}]
    return {"type": "message", "id": f"msg_{number}", "status": "completed", "role": "assistant", "content": content}


def _events(body: dict[str, Any], item: dict[str, Any], number: int) -> list[dict[str, Any]]:
    """One streamed answer: created, the output item added and done, then completed with usage."""
    model = body.get("model", MODEL)
    response = {"id": f"resp_{number}", "object": "response", "status": "in_progress", "model": model, "output": []}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    events.append({"type": "response.output_item.added", "output_index": 0, "item": item})
    if item["type"] == "message":
        text = item["content"][0]["text"]
        events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "delta": text})  # fmt: skip
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return events


async def _sse(events: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    for event in events:
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
