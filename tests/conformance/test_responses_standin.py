"""ResponsesStandIn answers as the OpenAI Responses API does when streamed (SSE events ending with
`response.completed`), a tool call sent as the kind of tool the agent offered. The Codex tests rely
on it: an answer Codex could not parse would read as Codex's bug."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.conformance.openai_standin import tool_call
from tests.conformance.responses_standin import ResponsesStandIn

TOOLS = [
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
]
PATCH = tool_call("apply_patch", input="*** Begin Patch\n*** End Patch\n")
COMMAND = tool_call("exec_command", cmd="ls")


def events(model: ResponsesStandIn, body: dict[str, Any]) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"{model.base_url}/responses",
        data=json.dumps({"model": "m", "stream": True, **body}).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer k"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers.get("content-type", "").startswith("text/event-stream")
        text = answer.read().decode()
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def conversation(results: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ]
    for n in range(results):
        items.append({"type": "custom_tool_call", "call_id": f"c{n}", "name": "apply_patch", "input": "x"})
        items.append({"type": "custom_tool_call_output", "call_id": f"c{n}", "output": f"result {n}"})
    return {"input": items, "tools": TOOLS}


def test_steps_follow_the_tool_results_and_each_call_has_the_kind_offered() -> None:
    with ResponsesStandIn([PATCH, COMMAND, "Done."], side_answer="A title") as model:
        side = events(model, {"input": []})
        first, second, third = (events(model, conversation(n)) for n in range(3))
    for answer in (side, first, second, third):
        assert answer[0]["type"] == "response.created"
        assert answer[-1]["type"] == "response.completed" and answer[-1]["response"]["usage"]["total_tokens"] == 15
    assert side[-1]["response"]["output"][0]["content"][0]["text"] == "A title"
    patch = first[-1]["response"]["output"][0]
    assert (patch["type"], patch["name"], patch["input"]) == (
        "custom_tool_call",
        "apply_patch",
        PATCH.arguments["input"],
    )
    command = second[-1]["response"]["output"][0]
    assert (command["type"], json.loads(command["arguments"])) == ("function_call", {"cmd": "ls"})
    assert third[-1]["response"]["output"][0]["content"][0]["text"] == "Done."
    assert model.tool_messages() == ["result 0", "result 0", "result 1"]
