"""The window server as Gemini CLI uses it: tools, diff outcomes, context notifications, sessions."""

from __future__ import annotations

import itertools
import json
import os
import time
from typing import Any

import anyio
import httpx2
import pytest

from companion.core.context import Position
from companion.core.reviews import Review
from companion.runtime import WindowHandle
from tests.mcp_client import connect, text_of
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.anyio


def active_path(params: dict[str, Any]) -> str | None:
    files = params["workspaceState"]["openFiles"]
    return files[0]["path"] if files else None


async def wait_shown(editor: ScriptedEditor, count: int, timeout: float = 20) -> None:
    with anyio.fail_after(timeout):
        while len(editor.shown) < count:
            await anyio.sleep(0.01)


async def test_offers_open_diff_and_close_diff_with_the_cli_schemas(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        tools = {t.name: t for t in (await client.session.list_tools()).tools}
    assert {"openDiff", "closeDiff"} <= set(tools)
    assert tools["openDiff"].input_schema["required"] == ["filePath", "newContent"]
    assert tools["closeDiff"].input_schema["required"] == ["filePath"]


async def test_open_diff_answers_before_the_user_decides_then_accept_notifies_with_the_edited_text(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    target = os.path.join(workspace, "a.py")
    with open(target, "w") as handle:
        handle.write("original\n")
    async with connect(window.url, window.token) as client:
        result = await client.open_diff(target, "proposed\n")
        # Answered while the review is still open: no decision has been made yet.
        assert result.content == [] and not result.is_error
        await wait_shown(editor, 1)
        review = editor.shown[0][0]
        assert review.is_open and review.proposal == "proposed\n"
        review.accept("proposed\nplus a line the user typed\n")
        accepted = await client.wait_for("ide/diffAccepted")
    assert accepted == {"filePath": target, "content": "proposed\nplus a line the user typed\n"}
    assert client.of("ide/diffRejected") == []
    with open(target) as handle:
        assert handle.read() == "original\n", "the companion must never write the file itself"


async def test_file_path_is_echoed_exactly_as_sent(window: WindowHandle, editor: ScriptedEditor) -> None:
    odd = "/some/dir/../Dir With Spaces/ünïcödé.TXT"
    async with connect(window.url, window.token) as client:
        await client.open_diff(odd, "x")
        await wait_shown(editor, 1)
        editor.shown[0][0].reject()
        rejected = await client.wait_for("ide/diffRejected")
    assert rejected == {"filePath": odd}


async def test_reject_notifies_diff_rejected(window: WindowHandle, editor: ScriptedEditor) -> None:
    async with connect(window.url, window.token) as client:
        await client.open_diff("/w/b.txt", "new")
        await wait_shown(editor, 1)
        editor.shown[0][0].reject()
        await client.wait_for("ide/diffRejected")
    assert client.of("ide/diffAccepted") == []


async def test_close_diff_returns_the_edited_text_as_json_and_sends_no_notification(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    async with connect(window.url, window.token) as client:
        await client.open_diff("/w/c.txt", "proposal")
        await wait_shown(editor, 1)
        review = editor.shown[0][0]
        editor.edits[review.id] = "proposal, edited in the editor"
        result = await client.close_diff("/w/c.txt")
        assert len(result.content) == 1
        assert json.loads(text_of(result)) == {"content": "proposal, edited in the editor"}
        # The user clicking Accept after the CLI closed the review must not produce anything.
        review.accept("late")
        review.reject()
        await anyio.sleep(0.3)
        assert editor.closed == [review]
    assert client.of("ide/diffAccepted") == [] and client.of("ide/diffRejected") == []


async def test_close_diff_for_a_path_without_a_review_returns_null_content(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        result = await client.close_diff("/nothing/open.txt")
    assert json.loads(text_of(result)) == {"content": None}


async def test_second_open_diff_for_the_same_path_updates_the_open_review_and_is_answered_once(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    async with connect(window.url, window.token) as client:
        await client.open_diff("/w/d.txt", "first")
        await client.open_diff("/w/d.txt", "second")
        await wait_shown(editor, 2)
        (first, shown1, rev1), (second, shown2, rev2) = editor.shown
        # One review, showing the newer proposal: nothing is left orphaned in the editor.
        assert first is second and (shown1, rev1, shown2, rev2) == ("first", 1, "second", 2)
        second.accept("second")
        accepted = await client.wait_for("ide/diffAccepted")
        await anyio.sleep(0.3)
    assert accepted == {"filePath": "/w/d.txt", "content": "second"}
    assert len(client.of("ide/diffAccepted")) == 1, "the path's single outcome answers both openDiff calls"
    # The path is free again: a third openDiff starts a new review.
    async with connect(window.url, window.token) as client:
        await client.open_diff("/w/d.txt", "third")
        await wait_shown(editor, 3)
        assert editor.shown[2][0] is not first


async def test_every_session_of_the_window_gets_the_outcome(window: WindowHandle, editor: ScriptedEditor) -> None:
    async with connect(window.url, window.token, "one") as one, connect(window.url, window.token, "two") as two:
        await one.open_diff("/w/e.txt", "e")
        await wait_shown(editor, 1)
        editor.shown[0][0].accept("e!")
        for client in (one, two):
            assert await client.wait_for("ide/diffAccepted") == {"filePath": "/w/e.txt", "content": "e!"}


async def test_open_diff_rejects_bad_arguments_without_opening_a_review(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    async with connect(window.url, window.token) as client:
        missing = await client.session.call_tool("openDiff", {"filePath": "/w/f.txt"})
        empty = await client.session.call_tool("openDiff", {"filePath": "", "newContent": "x"})
        wrong = await client.session.call_tool("openDiff", {"filePath": 3, "newContent": "x"})
        unknown = await client.session.call_tool("noSuchTool", {})
    for result in (missing, empty, wrong, unknown):
        assert result.is_error and text_of(result)
    assert "tools/list" in text_of(unknown)
    assert editor.shown == []


async def test_an_8_mb_proposal_round_trips(window: WindowHandle, editor: ScriptedEditor) -> None:
    big = ('line with "quotes" and \\ backslashes\n' * 230_000)[: 8 * 1024 * 1024]
    async with connect(window.url, window.token) as client:
        result = await client.open_diff("/w/big.txt", big)
        assert not result.is_error
        await wait_shown(editor, 1)
        editor.shown[0][0].accept(big)
        accepted = await client.wait_for("ide/diffAccepted", timeout=60)
    assert accepted["content"] == big


async def test_current_context_arrives_as_soon_as_the_stream_opens(window: WindowHandle, workspace: str) -> None:
    path = os.path.join(workspace, "open.py")
    window.context.activate(path, Position(3, 5), "sel")
    await anyio.sleep(0.2)  # the change was flushed before anyone listened
    async with connect(window.url, window.token) as client:
        first = await client.wait_for("ide/contextUpdate")
    files = first["workspaceState"]["openFiles"]
    assert files[0]["path"] == path and files[0]["isActive"] is True
    assert files[0]["cursor"] == {"line": 3, "character": 5} and files[0]["selectedText"] == "sel"


async def test_a_burst_of_changes_is_debounced_into_one_update_with_the_final_state(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        await client.wait_for("ide/contextUpdate")  # the initial one
        before = len(client.of("ide/contextUpdate"))
        for i in range(20):
            window.context.activate(f"/w/burst-{i}.py")
        final = await client.wait_for("ide/contextUpdate", lambda p: active_path(p) == "/w/burst-19.py")
        await anyio.sleep(0.3)
        updates = client.of("ide/contextUpdate")[before:]
    # 20 changes within a few ms: the trailing 50 ms debounce sends them as one (two if the machine
    # stalled mid-burst), never twenty.
    assert 1 <= len(updates) <= 2
    assert updates[-1] == final
    assert [f["path"] for f in final["workspaceState"]["openFiles"]] == [f"/w/burst-{i}.py" for i in range(19, 9, -1)]


async def test_an_update_goes_out_50_ms_after_the_last_change_never_sooner(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        await client.wait_for("ide/contextUpdate")
        await anyio.sleep(0.3)
        before = len(client.received)
        changes: list[float] = []
        for i in range(15):  # a change every ~20 ms: never the 50 ms pause a trailing debounce waits for
            window.context.activate(f"/w/steady-{i}.py")
            changes.append(time.monotonic())
            await anyio.sleep(0.02)
        await client.wait_for("ide/contextUpdate", lambda p: active_path(p) == "/w/steady-14.py")
        await anyio.sleep(0.3)
    received = [r for r in client.received[before:] if r.method == "ide/contextUpdate"]
    updates = [r.at for r in received]
    pauses = sum(1 for a, b in itertools.pairwise(changes) if b - a >= 0.05)  # a stalled machine makes some
    assert 1 <= len(updates) <= pauses + 1, (updates, changes)
    for update in received:
        # Measured from the change it carries: on a stalled machine the next change may be made just
        # before an update that was due 50 ms after the one before it arrives.
        carried = changes[int(str(active_path(update.params)).removeprefix("/w/steady-").removesuffix(".py"))]
        assert update.at - carried >= 0.045, f"an update {1000 * (update.at - carried):.1f} ms after its change"
    assert updates[-1] - changes[-1] <= 0.5, f"the final update came {updates[-1] - changes[-1]:.2f} s late"


async def test_an_unchanged_context_is_not_sent_again(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        window.context.activate("/w/same.py", Position(1, 1))
        await client.wait_for("ide/contextUpdate", lambda p: len(p["workspaceState"]["openFiles"]) == 1)
        await anyio.sleep(0.3)  # the stream-open snapshot and the debounced change may both carry it
        count = len(client.of("ide/contextUpdate"))
        window.context.select("/w/same.py", Position(1, 1), None)  # no change
        window.context.select("/w/other.py", Position(9, 9), None)  # not the active file: ignored
        await anyio.sleep(0.3)
        assert len(client.of("ide/contextUpdate")) == count


async def test_a_payload_the_cli_would_reject_is_never_sent(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        await client.wait_for("ide/contextUpdate")
        count = len(client.of("ide/contextUpdate"))
        window.context.activate("/w/bad.py", Position(0, 0))  # 0 is not a 1-based position
        await anyio.sleep(0.3)
        assert len(client.of("ide/contextUpdate")) == count
        window.context.activate("/w/good.py", Position(1, 1))
        good = await client.wait_for("ide/contextUpdate", lambda p: active_path(p) == "/w/good.py")
    assert good["workspaceState"]["openFiles"][0]["cursor"] == {"line": 1, "character": 1}


async def test_the_context_sent_when_a_stream_opens_is_validated_too(window: WindowHandle) -> None:
    window.context.activate("/w/bad.py", Position(0, 0))  # invalid before anyone listens
    await anyio.sleep(0.2)
    async with connect(window.url, window.token) as client:
        await anyio.sleep(0.3)
        sent = client.of("ide/contextUpdate")
        window.context.activate("/w/good.py", Position(1, 1))
        good = await client.wait_for("ide/contextUpdate", lambda p: active_path(p) == "/w/good.py")
    cursors = [f.get("cursor") for p in sent for f in p["workspaceState"]["openFiles"]]
    assert {"line": 0, "character": 0} not in cursors, sent
    assert good["workspaceState"]["openFiles"][0]["cursor"] == {"line": 1, "character": 1}


async def test_sessions_that_go_away_are_pruned(window: WindowHandle) -> None:
    server = window.gemini
    assert server is not None
    async with connect(window.url, window.token, "short-lived") as client:
        await client.wait_for("ide/contextUpdate")
        assert window.connected_clients == ["short-lived"]
    # The SDK client deletes its session on exit; the server forgets it.
    with anyio.fail_after(10):
        while window.connected_clients:
            await anyio.sleep(0.02)
    server.prune_sessions()
    assert window.client_names() == []


async def test_the_handshake_free_protocol_era_is_refused_with_the_supported_versions(window: WindowHandle) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {window.token}"}) as http:
        response = await http.post(
            window.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"MCP-Protocol-Version": "2026-07-28", "Accept": "application/json, text/event-stream"},
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022 and "2025-06-18" in error["data"]["supported"]


async def test_the_notification_stream_is_never_silent_for_long(window: WindowHandle) -> None:
    """Gemini CLI's HTTP client drops a stream that is silent for 300 s and never reconnects by itself:
    the server writes a keep-alive comment on the GET stream well within every 60 s (every 15 s)."""
    headers = {
        "Authorization": f"Bearer {window.token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=40)) as http:
        response = await http.post(window.url, json=init)
        session = response.headers["mcp-session-id"]
        await http.post(
            window.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={"mcp-session-id": session},
        )
        started = anyio.current_time()
        seen: list[str] = []
        async with http.stream("GET", window.url, headers={"mcp-session-id": session}) as stream:
            assert stream.status_code == 200
            with anyio.fail_after(40):
                async for line in stream.aiter_lines():
                    seen.append(line)
                    if line.startswith(":"):
                        break
        waited = anyio.current_time() - started
    assert any(line.startswith(":") for line in seen), seen
    assert waited < 60


# -- additions: exact schemas, files never written, no orphaned review, sessions that vanish --


async def test_tool_schemas_are_exactly_what_the_cli_sends(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        tools = {t.name: t for t in (await client.session.list_tools()).tools}

    def shape(schema: dict[str, Any]) -> tuple[str, dict[str, str], list[str]]:
        properties = {name: spec["type"] for name, spec in schema["properties"].items()}
        return schema["type"], properties, schema["required"]

    assert shape(tools["openDiff"].input_schema) == (
        "object",
        {"filePath": "string", "newContent": "string"},
        ["filePath", "newContent"],
    )
    assert shape(tools["closeDiff"].input_schema) == (
        "object",
        {"filePath": "string", "suppressNotification": "boolean"},
        ["filePath"],
    )


async def test_reject_and_close_diff_never_touch_the_file_on_disk(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    existing = os.path.join(workspace, "kept.txt")
    with open(existing, "w") as handle:
        handle.write("kept\n")
    new = os.path.join(workspace, "never-created.txt")
    async with connect(window.url, window.token) as client:
        await client.open_diff(existing, "changed\n")
        await client.open_diff(new, "brand new\n")
        await wait_shown(editor, 2)
        by_path = {review.file_path: review for review, _, _ in editor.shown}
        by_path[existing].reject()
        await client.wait_for("ide/diffRejected")
        editor.edits[by_path[new].id] = "brand new, edited\n"
        closed = json.loads(text_of(await client.close_diff(new)))
    assert closed == {"content": "brand new, edited\n"}
    with open(existing) as handle:
        assert handle.read() == "kept\n"
    assert not os.path.exists(new)
    assert sorted(os.listdir(workspace)) == ["kept.txt"]


async def test_a_second_open_diff_from_another_client_leaves_no_orphan_and_both_clients_hear_the_outcome(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    server = window.server
    assert server is not None
    async with (
        connect(window.url, window.token, "first") as first,
        connect(window.url, window.token, "second") as second,
    ):
        await first.open_diff("/w/shared.txt", "from the first client")
        await wait_shown(editor, 1)
        await second.open_diff("/w/shared.txt", "from the second client")
        await wait_shown(editor, 2)
        assert len(server.reviews) == 1, "the newer proposal replaces the shown one; it does not open a second review"
        review = server.reviews.get("/w/shared.txt")
        assert review is not None and review.proposal == "from the second client" and review.revision == 2
        review.reject()
        for client in (first, second):
            assert await client.wait_for("ide/diffRejected") == {"filePath": "/w/shared.txt"}
        await anyio.sleep(0.3)
        assert [len(c.of("ide/diffRejected")) for c in (first, second)] == [1, 1]
        assert first.of("ide/diffAccepted") == second.of("ide/diffAccepted") == []
    assert len(server.reviews) == 0, "no review is left open after the single decision"
    assert all(not shown.is_open for shown, _, _ in editor.shown), "every review the editor showed has ended"


async def test_close_diff_after_a_replaced_proposal_returns_the_newest_text_and_frees_the_path(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    server = window.server
    assert server is not None
    async with connect(window.url, window.token) as client:
        await client.open_diff("/w/twice.txt", "one")
        await client.open_diff("/w/twice.txt", "two")
        await wait_shown(editor, 2)
        closed = json.loads(text_of(await client.close_diff("/w/twice.txt")))
        assert closed == {"content": "two"}
        assert len(server.reviews) == 0
        again = json.loads(text_of(await client.close_diff("/w/twice.txt")))
        await anyio.sleep(0.3)
    assert again == {"content": None}
    assert client.of("ide/diffAccepted") == client.of("ide/diffRejected") == []


async def test_every_session_gets_the_context_updates(window: WindowHandle) -> None:
    async with connect(window.url, window.token, "one") as one, connect(window.url, window.token, "two") as two:
        window.context.activate("/w/shared-view.py", Position(2, 4))
        for client in (one, two):
            update = await client.wait_for("ide/contextUpdate", lambda p: active_path(p) == "/w/shared-view.py")
            assert update["workspaceState"]["openFiles"][0]["cursor"] == {"line": 2, "character": 4}
        assert sorted(window.connected_clients) == ["one", "two"]


RAW_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
RAW_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


async def raw_session(http: httpx2.AsyncClient, url: str) -> str:
    response = await http.post(url, json=RAW_INIT)
    session = response.headers["mcp-session-id"]
    await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={"mcp-session-id": session}
    )
    return session


async def wait_until(check: Any, timeout: float = 15) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


async def test_a_client_whose_connection_drops_no_longer_counts_as_connected(window: WindowHandle) -> None:
    """A killed CLI sends no DELETE: its stream closing drops it from the connected clients at once."""
    headers = {**RAW_HEADERS, "Authorization": f"Bearer {window.token}"}
    async with connect(window.url, window.token, "stays") as stays:
        await stays.wait_for("ide/contextUpdate")
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
            session = await raw_session(http, window.url)
            async with http.stream("GET", window.url, headers={"mcp-session-id": session}) as stream:
                assert stream.status_code == 200
                await wait_until(lambda: sorted(window.connected_clients) == ["raw", "stays"])
        # The connection is gone and no DELETE was sent; the session is not reaped yet (300 s idle).
        await wait_until(lambda: window.connected_clients == ["stays"])
        assert sorted(window.client_names()) == ["raw", "stays"]


async def test_a_vanished_session_is_reaped_while_a_client_holding_its_stream_never_is(
    monkeypatch: pytest.MonkeyPatch, discovery_dir: str, workspace: str
) -> None:
    from companion.gemini_ide import server as server_module
    from companion.runtime import Runtime

    monkeypatch.setattr(server_module, "SESSION_IDLE_SECONDS", 1.0)
    monkeypatch.setattr(server_module, "PRUNE_INTERVAL_SECONDS", 0.2)
    runtime = Runtime(discovery_directory=discovery_dir)
    try:
        handle = runtime.open_window(ScriptedEditor(), [workspace])
        handle.ready.result(30)
        headers = {**RAW_HEADERS, "Authorization": f"Bearer {handle.token}"}
        async with connect(handle.url, handle.token, "stays") as stays:
            await stays.wait_for("ide/contextUpdate")
            async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
                session = await raw_session(http, handle.url)
                async with http.stream("GET", handle.url, headers={"mcp-session-id": session}) as stream:
                    assert stream.status_code == 200
                    await wait_until(lambda: sorted(handle.client_names()) == ["raw", "stays"])
            await wait_until(lambda: handle.client_names() == ["stays"])
            await anyio.sleep(1.5)  # longer than the idle timeout: the held stream keeps "stays" alive
            assert handle.client_names() == ["stays"]
            handle.context.activate("/w/still-heard.py")
            await stays.wait_for("ide/contextUpdate", lambda p: active_path(p) == "/w/still-heard.py")
    finally:
        runtime.stop()


class FailsToShowNewerProposals(ScriptedEditor):
    """An editor that shows a first proposal but fails to show a newer one for the same review."""

    async def show_review(self, review: Review) -> None:
        if review.revision > 1:
            raise RuntimeError("the review view went away")
        await super().show_review(review)


async def test_a_newer_proposal_that_cannot_be_shown_still_answers_the_earlier_caller(
    discovery_dir: str, workspace: str
) -> None:
    from companion.runtime import Runtime

    editor = FailsToShowNewerProposals()
    runtime = Runtime(discovery_directory=discovery_dir)
    try:
        handle = runtime.open_window(editor, [workspace])
        handle.ready.result(30)
        server = handle.server
        assert server is not None
        async with connect(handle.url, handle.token) as client:
            assert not (await client.open_diff("/w/flaky.txt", "first")).is_error
            failed = await client.open_diff("/w/flaky.txt", "second")
            assert failed.is_error and "/w/flaky.txt" in text_of(failed)
            # The first openDiff's caller is still waiting: it must hear an outcome (nothing is written).
            assert await client.wait_for("ide/diffRejected") == {"filePath": "/w/flaky.txt"}
            assert len(server.reviews) == 0
            assert [r.id for r in editor.closed] == [editor.shown[0][0].id], "the shown review is closed"
    finally:
        runtime.stop()


async def test_open_diff_cannot_take_over_a_review_a_tool_is_waiting_on(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    """A write_file review (decided by the tool that waits on it) is not replaced by an openDiff for the
    same path: otherwise the tool would write the other client's proposal, and that client would
    never hear an outcome."""
    from companion.core.reviews import Outcome

    server = window.server
    assert server is not None
    pending = window.runtime.submit(lambda: server.request_review("/w/tool.txt", "tool proposal", "agent", 30))
    async with connect(window.url, window.token) as client:
        await wait_shown(editor, 1)
        result = await client.open_diff("/w/tool.txt", "cli proposal")
        assert result.is_error and "/w/tool.txt" in text_of(result)
        review = server.reviews.get("/w/tool.txt")
        assert review is not None and review.proposal == "tool proposal" and review.revision == 1
        review.accept("tool proposal, as the user left it")
        assert await anyio.to_thread.run_sync(pending.result, 20) == (
            Outcome.ACCEPTED,
            "tool proposal, as the user left it",
        )
        await anyio.sleep(0.3)
    assert client.of("ide/diffAccepted") == [] and len(editor.shown) == 1
