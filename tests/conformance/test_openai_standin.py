"""OpenAIStandIn answers as an OpenAI-compatible API does, in both forms agents use: a plain JSON
completion and a streamed one (SSE chunks, `data: [DONE]`), tool calls included. The registry-agent
tests rely on it: an answer an agent could not parse would read as the agent's bug."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.conformance.openai_standin import MODEL, OpenAIStandIn, tool_call

TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}]
WRITE = tool_call("write", filePath="/w/a.txt", content="x\n")


def post(model: OpenAIStandIn, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        f"{model.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer k"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.headers.get("content-type", ""), answer.read()


def conversation(tool_results: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(tool_results):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "write", "arguments": "{}"}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]}]
        messages += [{"role": "tool", "tool_call_id": f"c{n}", "content": "ok"}]
    return {"model": MODEL, "messages": messages, "tools": TOOLS}


def test_plain_answers_follow_the_script_and_side_requests_take_no_step() -> None:
    with OpenAIStandIn([WRITE, "Done."], side_answer="A title") as model:
        _, side = post(model, {"model": MODEL, "messages": [{"role": "user", "content": "title?"}]})
        _, first = post(model, conversation(0))
        _, second = post(model, conversation(1))
    assert json.loads(side)["choices"][0]["message"]["content"] == "A title"
    choice = json.loads(first)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "write"
    assert json.loads(call["function"]["arguments"]) == {"filePath": "/w/a.txt", "content": "x\n"}
    assert json.loads(second)["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "Done."},
        "finish_reason": "stop",
    }
    assert len(model.requests) == 3 and model.tool_messages() == ["ok"]


def test_streamed_answers_are_sse_chunks_ending_in_done() -> None:
    with OpenAIStandIn([WRITE, "Done."]) as model:
        kind, data = post(model, {**conversation(0), "stream": True})
        _, text = post(model, {**conversation(1), "stream": True})
    assert kind.startswith("text/event-stream")
    assert data.endswith(b"data: [DONE]\n\n") and text.endswith(b"data: [DONE]\n\n")
    chunks = sse_chunks(data)
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    deltas = [c["choices"][0] for c in chunks if c["choices"]]
    calls = [d["delta"]["tool_calls"][0] for d in deltas if "tool_calls" in d["delta"]]
    assert [c["function"]["name"] for c in calls] == ["write"] and calls[0]["index"] == 0
    assert deltas[-1]["finish_reason"] == "tool_calls"
    said = [c["choices"][0]["delta"].get("content") or "" for c in sse_chunks(text) if c["choices"]]
    assert "".join(said) == "Done."


def sse_chunks(data: bytes) -> list[dict[str, Any]]:
    events = [event.removeprefix("data: ") for event in data.decode().split("\n\n") if event]
    return [json.loads(event) for event in events if event != "[DONE]"]
