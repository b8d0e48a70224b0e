"""What the chat holds of the tool calls an agent has not ended: bounded, newest kept whole."""

from __future__ import annotations

from companion.acp.tool_call_tracker import ToolCalls

MB = 1024 * 1024


def edit(call_id: str, size: int) -> dict[str, object]:
    return {
        "toolCallId": call_id,
        "kind": "edit",
        "status": "pending",
        "content": [{"type": "diff", "path": f"/w/{call_id}.txt", "oldText": None, "newText": "x" * size}],
    }


def test_calls_an_agent_never_ends_are_forgotten_oldest_first_within_the_bound() -> None:
    reports = ToolCalls(limit=20 * MB)
    for n in range(12):
        reports.add(edit(f"c{n}", 4 * MB))
        assert reports.held_chars <= 20 * MB
    # The newest call is whole: a permission for it is decided on its full diff.
    newest = reports.add({"toolCallId": "c11", "title": "Write c11.txt"})
    assert newest["content"][0]["newText"] == "x" * (4 * MB)
    # The oldest is gone: what its request says is all there is to decide on.
    assert reports.add({"toolCallId": "c0"}) == {"toolCallId": "c0"}


def test_an_ended_call_releases_what_it_held() -> None:
    reports = ToolCalls()
    reports.add(edit("a", 2 * MB))
    assert reports.held_chars == 2 * MB
    reports.add({"toolCallId": "a", "status": "completed"})
    assert reports.held_chars == 0


def test_one_call_that_alone_says_more_than_the_bound_is_bounded_too() -> None:
    # A hostile agent never ends one call and adds a 1 MB rawInput key in each update: merged key by
    # key, what it said would grow without end if the newest call were always kept whole.
    reports = ToolCalls(limit=8 * MB)
    for n in range(40):
        reports.add({"toolCallId": "only", "status": "pending", "rawInput": {f"k{n}": "x" * MB}})
        assert reports.held_chars <= 8 * MB
    assert reports.get("only") is not None  # its card stays in the chat, without the content
