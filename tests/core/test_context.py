"""The context Gemini CLI receives: order, limits, what only the active file carries, privacy."""

from __future__ import annotations

import fnmatch
import itertools
import os

import pytest

from companion.core.context import DEFAULT_EXCLUDES, ContextTracker, Position, SharingPolicy
from companion.gemini_ide.wire import validated_params
from companion.runtime import WindowHandle
from tests.mcp_client import connect


def frozen_clock() -> ContextTracker:
    return ContextTracker(clock=lambda: 1_000)  # every change in the same millisecond


def files(tracker: ContextTracker) -> list[dict[str, object]]:
    return tracker.params()["workspaceState"]["openFiles"]


def test_most_recent_first_at_most_ten_with_strictly_increasing_timestamps() -> None:
    tracker = frozen_clock()
    for i in range(12):
        tracker.activate(f"/w/{i}.py")
    tracker.activate("/w/5.py")
    listed = files(tracker)
    assert [f["path"] for f in listed] == ["/w/5.py"] + [f"/w/{i}.py" for i in (11, 10, 9, 8, 7, 6, 4, 3, 2)]
    stamps = [f["timestamp"] for f in listed]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == len(stamps)
    validated_params("ide/contextUpdate", tracker.params())


def test_only_the_active_file_carries_cursor_and_selection() -> None:
    tracker = ContextTracker()
    tracker.activate("/w/a.py", Position(2, 3), "picked")
    tracker.activate("/w/b.py", Position(7, 1), None)
    first, second = files(tracker)
    assert first == {
        "path": "/w/b.py",
        "timestamp": first["timestamp"],
        "isActive": True,
        "cursor": {"line": 7, "character": 1},
    }
    assert second == {"path": "/w/a.py", "timestamp": second["timestamp"]}


def test_selection_changes_count_only_for_the_active_file() -> None:
    changes = itertools.count()
    tracker = ContextTracker(on_change=lambda: next(changes))
    tracker.activate("/w/a.py")
    tracker.activate("/w/b.py")
    before = next(changes)
    tracker.select("/w/a.py", Position(1, 1), "not active")
    assert next(changes) == before + 1  # no change was reported in between
    tracker.select("/w/b.py", Position(4, 2), "now")
    assert files(tracker)[0]["selectedText"] == "now"


def test_selected_text_is_clipped_to_16384_characters() -> None:
    tracker = ContextTracker()
    tracker.activate("/w/a.py", Position(1, 1), "é" * 20_000)
    assert files(tracker)[0]["selectedText"] == "é" * 16384
    validated_params("ide/contextUpdate", tracker.params())


def test_close_and_rename() -> None:
    tracker = ContextTracker()
    tracker.activate("/w/a.py")
    tracker.activate("/w/b.py")
    tracker.rename("/w/a.py", "/w/renamed.py")
    tracker.close("/w/b.py")
    assert [f["path"] for f in files(tracker)] == ["/w/renamed.py"]


def test_paused_sharing_sends_an_empty_context() -> None:
    tracker = ContextTracker()
    tracker.activate("/w/a.py", Position(1, 1), "secret")
    tracker.set_paused(True)
    assert tracker.params() == {"workspaceState": {"openFiles": []}}
    tracker.set_paused(False)
    assert files(tracker)[0]["path"] == "/w/a.py"


def test_excluded_files_are_never_listed_and_their_selection_never_shared() -> None:
    tracker = ContextTracker()
    tracker.activate("/w/app.py")
    for secret in ("/w/.env", "/w/.env.local", "/w/certs/server.pem", "/home/me/.ssh/id_rsa", "/w/k.key"):
        tracker.activate(secret, Position(1, 1), "API_KEY=123")
    listed = files(tracker)
    assert [f["path"] for f in listed] == ["/w/app.py"]
    assert "cursor" not in listed[0] and "selectedText" not in listed[0]
    assert tracker.snapshot_paths() == ["/w/app.py"]


def test_custom_exclusions_match_names_and_paths() -> None:
    tracker = ContextTracker()
    tracker.set_policy(SharingPolicy(exclude=("*/private/*", "*.log")))
    for path in ("/w/private/notes.md", "/w/run.log", "/w/ok.py"):
        tracker.activate(path)
    assert tracker.snapshot_paths() == ["/w/ok.py"]


def test_exclusions_decide_as_fnmatch_does_for_every_pattern_and_path() -> None:
    # The patterns are matched as one expression; each must still match exactly what fnmatch
    # matches against the file's name or its whole path (brackets, ranges, an unclosed "[").
    patterns = [*DEFAULT_EXCLUDES, "*/private/*", "[!a]*.txt", "data[0-9].csv", "weird[", "", "a|b", "(x)"]
    paths = ["/w/.env", "/w/src/.env.prod", "/w/private/n.md", "/w/b.txt", "/w/a.txt", "/w/data7.csv",
             "/w/weird[", "/w/a|b", "/w/(x)", "/w/ok.py", "/home/me/.ssh/id_ed25519.pub", "/w/x.PEM"]  # fmt: skip
    for chosen in [(), (patterns[0],), tuple(patterns)]:
        policy = SharingPolicy(exclude=chosen)
        for path in paths:
            expected = any(fnmatch.fnmatch(os.path.basename(path), p) or fnmatch.fnmatch(path, p) for p in chosen)
            assert policy.excludes(path) is expected, (chosen, path)
    assert not SharingPolicy(exclude=()).excludes("/w/.env")  # no patterns exclude nothing


def test_selection_sharing_can_be_turned_off_keeping_the_cursor() -> None:
    tracker = ContextTracker()
    tracker.set_policy(SharingPolicy(share_selection=False))
    tracker.activate("/w/a.py", Position(3, 4), "private")
    assert files(tracker)[0]["cursor"] == {"line": 3, "character": 4}
    assert "selectedText" not in files(tracker)[0]


def test_closing_the_newest_files_reveals_older_open_ones() -> None:
    tracker = frozen_clock()
    for i in range(30):
        tracker.activate(f"/w/{i}.py")
    for i in range(20, 30):
        tracker.close(f"/w/{i}.py")
    assert [f["path"] for f in files(tracker)] == [f"/w/{i}.py" for i in range(19, 9, -1)]
    validated_params("ide/contextUpdate", tracker.params())


def test_excluded_files_do_not_take_a_place_among_the_ten() -> None:
    tracker = frozen_clock()
    for i in range(10):
        tracker.activate(f"/w/{i}.py")
    tracker.activate("/w/.env")
    assert len(files(tracker)) == 10


def test_timestamps_stay_strictly_increasing_when_the_clock_goes_backwards() -> None:
    ticks = iter([5_000, 4_000, 3_000, 3_000, 10])
    tracker = ContextTracker(clock=lambda: next(ticks))
    for name in "abcde":
        tracker.activate(f"/w/{name}.py")
    stamps = [f["timestamp"] for f in files(tracker)]
    assert [f["path"] for f in files(tracker)] == [f"/w/{n}.py" for n in "edcba"]
    assert all(newer > older for newer, older in itertools.pairwise(stamps)), stamps


@pytest.mark.anyio
async def test_secrets_and_paused_state_never_reach_a_connected_client(window: WindowHandle) -> None:
    async with connect(window.url, window.token) as client:
        window.context.activate("/w/app.py", Position(1, 1))
        window.context.activate("/w/.env", Position(1, 1), "API_KEY=123")
        window.context.activate("/w/tls/server.pem", Position(1, 1), "-----BEGIN PRIVATE KEY-----")
        await client.wait_for("ide/contextUpdate", lambda p: p["workspaceState"]["openFiles"] != [])
        window.context.set_paused(True)
        await client.wait_for("ide/contextUpdate", lambda p: p["workspaceState"]["openFiles"] == [])
        window.context.set_paused(False)
        window.context.set_policy(SharingPolicy(share_selection=False))
        window.context.activate("/w/public.py", Position(2, 2), "not to be shared")
        last = await client.wait_for(
            "ide/contextUpdate",
            lambda p: (
                p["workspaceState"]["openFiles"][:1] != []
                and p["workspaceState"]["openFiles"][0]["path"] == "/w/public.py"
            ),
        )
    everything = repr([r.params for r in client.received])
    for leaked in (".env", "API_KEY", "server.pem", "PRIVATE KEY", "not to be shared"):
        assert leaked not in everything
    assert last["workspaceState"]["openFiles"][0] == {
        "path": "/w/public.py",
        "timestamp": last["workspaceState"]["openFiles"][0]["timestamp"],
        "isActive": True,
        "cursor": {"line": 2, "character": 2},
    }
