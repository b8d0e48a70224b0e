"""A chat's checkpoints with the folders watched (core/history/folder_watch.py): an unchanged workspace is
not scanned again, and every change is still seen, whatever made it (hypothesis compares each
watched checkpoint with a full scan into a store of its own); what the watch cannot vouch for (a
file with other hard links, rules read through a link, a file system that is not local, the watch
limit) makes the next checkpoint scan; what raises no event at all (a write through a memory map,
or through a hard link made after the scan) is caught at the turn's end and never reverted. The
watch is Linux's inotify: elsewhere there is none and every checkpoint scans, which the comparison
tests check as well. Proofs of the holes an independent review found are kept as these tests."""

from __future__ import annotations

import gc
import mmap
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.core.files import patterns
from companion.core.history import checkpoints, folder_watch, turns
from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import Checkpoint, Checkpointer
from companion.core.history.turns import Turns
from tests.core.history.test_checkpoints import write

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watch is inotify (Linux)")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="modes, links and hard links as on POSIX")


def shape(point: Checkpoint) -> dict[str, tuple[Any, ...]]:
    """What a restore would bring back, and what is covered, per path."""
    return {p: (e.kind, e.size, e.mode & 0o111, e.digest, e.target, bool(e.reason)) for p, e in point.entries.items()}


def scanned(folder: str, cache: str) -> Checkpoint:
    """A full scan of `folder` into a store of its own (nothing reused from the watched one)."""
    return Checkpointer(CheckpointStore(cache, [folder]), [folder]).take()


@pytest.fixture
def scandirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The folders listed (os.scandir) since the list was last cleared."""
    listed: list[str] = []
    real = os.scandir

    def counting(path: Any = ".") -> Any:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    yield listed


def tree(root: str) -> str:
    for name in ("a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt"):
        write(os.path.join(root, name), f"{name}\n")
    return root


@pytest.fixture
def ws(tmp_path: Any) -> str:
    return tree(os.path.realpath(os.path.join(str(tmp_path), "ws")))


@pytest.fixture
def watched(ws: str, tmp_path: Any) -> Iterator[Checkpointer]:
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    yield checkpointer
    checkpointer.close()


@linux_only
def test_an_unchanged_watched_workspace_is_not_listed_again(watched: Checkpointer, scandirs: list[str]) -> None:
    first = watched.take()
    assert scandirs, "the first checkpoint lists every folder"
    scandirs.clear()
    assert watched.take() is first and watched.take() is first
    assert scandirs == []


def test_without_a_watch_every_checkpoint_lists_the_folders(ws: str, tmp_path: Any, scandirs: list[str]) -> None:
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws])
    first = checkpointer.take()
    scandirs.clear()
    assert checkpointer.take() is first
    assert len(scandirs) == 3  # ws, sub, sub/deep


@posix_only
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda ws: write(os.path.join(ws, "sub/deep/d.txt"), "SUB/DEEP/D.TXT\n"), id="same-size-and-mtime"
        ),
        pytest.param(lambda ws: os.chmod(os.path.join(ws, "a.txt"), 0o755), id="mode"),
        pytest.param(lambda ws: write(os.path.join(ws, "sub/new/e.txt"), "new\n"), id="new-folder"),
        pytest.param(lambda ws: os.remove(os.path.join(ws, "sub/c.txt")), id="deleted"),
        pytest.param(lambda ws: os.rename(os.path.join(ws, "a.txt"), os.path.join(ws, "sub/a.txt")), id="moved"),
        pytest.param(lambda ws: write(os.path.join(ws, ".gitignore"), "*.txt\n"), id="gitignore"),
    ],
)
def test_each_change_after_a_watched_checkpoint_is_in_the_next(
    ws: str, watched: Checkpointer, tmp_path: Any, change: Callable[[str], object]
) -> None:
    first = watched.take()
    change(ws)
    after = watched.take()
    assert after is not first
    assert shape(after) == shape(scanned(ws, os.path.join(str(tmp_path), "other")))


@posix_only
def test_a_file_written_through_a_hard_link_outside_the_folders_is_seen(
    ws: str, watched: Checkpointer, tmp_path: Any
) -> None:
    outside = os.path.join(str(tmp_path), "outside.txt")
    os.link(os.path.join(ws, "sub/c.txt"), outside)  # no event in the folders: the watch cannot see it
    first = watched.take()
    with open(outside, "ab") as handle:
        handle.write(b"written through the other link\n")
    after = watched.take()
    assert after is not first
    assert shape(after) == shape(scanned(ws, os.path.join(str(tmp_path), "other")))


@posix_only
def test_rules_above_the_folder_are_watched(tmp_path: Any) -> None:
    """A repository's .gitignore or info/exclude above the workspace folder decides what is covered."""
    repo = os.path.realpath(os.path.join(str(tmp_path), "repo"))
    os.makedirs(os.path.join(repo, ".git"))
    ws = tree(os.path.join(repo, "ws"))
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    try:
        first = checkpointer.take()
        assert os.path.join(ws, "b.txt") in first.entries
        write(os.path.join(repo, ".gitignore"), "b.txt\n")
        second = checkpointer.take()
        assert os.path.join(ws, "b.txt") not in second.entries
        write(os.path.join(repo, ".git", "info", "exclude"), "c.txt\n")  # info/ did not exist
        third = checkpointer.take()
        assert os.path.join(ws, "sub", "c.txt") not in third.entries
        assert shape(third) == shape(scanned(ws, os.path.join(str(tmp_path), "other")))
    finally:
        checkpointer.close()


@posix_only
def test_a_folder_swapped_for_a_link_to_outside_is_recorded_as_the_link(
    ws: str, watched: Checkpointer, tmp_path: Any
) -> None:
    outside = tree(os.path.join(str(tmp_path), "outside"))
    watched.take()
    os.rename(os.path.join(ws, "sub"), os.path.join(str(tmp_path), "moved-away"))
    os.symlink(outside, os.path.join(ws, "sub"))
    after = watched.take()
    assert after.entries[os.path.join(ws, "sub")].kind == "symlink"
    assert not any(p.startswith(outside) or p.startswith(os.path.join(ws, "sub") + os.sep) for p in after.entries)


@linux_only
@pytest.mark.parametrize("limit", ["not local", "watch limit"])
def test_a_watch_that_cannot_cover_every_folder_lists_them_each_time(
    ws: str, watched: Checkpointer, scandirs: list[str], monkeypatch: pytest.MonkeyPatch, limit: str
) -> None:
    if limit == "not local":
        monkeypatch.setattr(folder_watch, "_LOCAL", set())  # as on NFS, SMB, FUSE or WSL's 9p drives
    else:
        monkeypatch.setattr(folder_watch, "MAX_FOLDERS", 2)  # 3 folders
    first = watched.take()
    scandirs.clear()
    assert watched.take() is first
    assert len(scandirs) == 3


@linux_only
def test_closing_or_dropping_a_watched_checkpointer_frees_its_watch(ws: str, tmp_path: Any) -> None:
    process = psutil.Process()
    store = CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws])
    before = process.num_fds()
    for _ in range(20):
        Checkpointer(store, [ws], watch=True).take()  # dropped without close(): freed when collected
    for _ in range(20):
        checkpointer = Checkpointer(store, [ws], watch=True)
        checkpointer.take()
        checkpointer.close()
        checkpointer.close()  # idempotent
        assert checkpointer.take() is not None  # still usable, without a watch
    gc.collect()
    # No watch left open (an earlier test's daemon thread may close a file of its own meanwhile, so
    # the count may drop; it must never grow).
    assert process.num_fds() <= before


# -- every change seen: a watched checkpoint equals a full scan, after any sequence of changes --

NAMES = ["a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt", "sub/new.txt", "other/e.txt"]
CHANGES = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(NAMES), st.binary(max_size=24)),
    st.tuples(st.just("append"), st.sampled_from(NAMES), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("chmod"), st.sampled_from(NAMES), st.sampled_from([0o644, 0o755])),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("symlink"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("rmtree"), st.sampled_from(["sub", "other", "sub/deep"]), st.none()),
    st.tuples(st.just("ignore"), st.sampled_from(["", "*.txt", "sub/", "!b.txt\n*.txt"]), st.none()),
    st.tuples(st.just("nothing"), st.none(), st.none()),
)


def apply(root: str, change: tuple[str, Any, Any]) -> None:
    what, name, arg = change
    path = os.path.join(root, name) if isinstance(name, str) else root
    try:
        if what == "write":
            write(path, arg, old=False)
        elif what == "append" and os.path.isfile(path):
            with open(path, "ab") as handle:
                handle.write(arg)
        elif what == "chmod" and os.path.isfile(path):
            os.chmod(path, arg)
        elif what == "remove" and os.path.lexists(path) and not os.path.isdir(path):
            os.remove(path)
        elif what == "rename" and os.path.lexists(path):
            target = os.path.join(root, arg)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(path, target)
        elif what == "symlink" and not os.path.lexists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(arg, path)
        elif what == "rmtree" and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif what == "ignore":
            write(os.path.join(root, ".gitignore"), name + "\n", old=False)
    except (IsADirectoryError, NotADirectoryError, FileExistsError, OSError):
        pass  # a change the tree's shape does not allow now (a file where a folder is, ...)


@posix_only
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.lists(CHANGES, max_size=3), min_size=1, max_size=6))
def test_after_any_changes_a_watched_checkpoint_equals_a_full_scan(
    tmp_path_factory: pytest.TempPathFactory, changes: list[list[tuple[str, Any, Any]]]
) -> None:
    base = str(tmp_path_factory.mktemp("watched"))
    root = tree(os.path.realpath(os.path.join(base, "ws")))
    os.makedirs(os.path.join(root, ".git"))  # its .gitignore rules apply
    checkpointer = Checkpointer(CheckpointStore(os.path.join(base, "cache"), [root]), [root], watch=True)
    try:
        checkpointer.take()
        for step, batch in enumerate(changes):
            for change in batch:
                apply(root, change)
            point = checkpointer.take()
            assert shape(point) == shape(scanned(root, os.path.join(base, f"scan-{step}")))
    finally:
        checkpointer.close()


@posix_only
def test_a_folder_above_the_workspace_renamed_is_seen(tmp_path: Any) -> None:
    """No event reaches the workspace's own watches when a folder above it is renamed."""
    above = os.path.join(os.path.realpath(str(tmp_path)), "above")
    ws = tree(os.path.join(above, "ws"))
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    try:
        assert os.path.join(ws, "a.txt") in checkpointer.take().entries
        os.rename(above, above + "-renamed")
        assert checkpointer.take().entries == {}
        tree(ws)  # another folder at the same path
        assert shape(checkpointer.take()) == shape(scanned(ws, os.path.join(str(tmp_path), "other")))
    finally:
        checkpointer.close()


# -- what raises no event in the folders: caught at the turn's end --


class UnseenChange:
    """A change to ws/a.txt that raises no event in the folders' watch: a write through a hard link
    made after the last scan, or through a memory map made before it (still open: closing a file
    opened for writing is an event)."""

    def __init__(self, ws: str, tmp_path: Any, how: str) -> None:
        self.path, self.how = os.path.join(ws, "a.txt"), how
        self.link = os.path.join(str(tmp_path), "outside-link.txt")
        if how == "memory map":
            self.handle = open(self.path, "r+b")  # noqa: SIM115 (open across the scan)
            self.mapped = mmap.mmap(self.handle.fileno(), 0)

    def make(self) -> bytes:
        if self.how == "hard link":
            os.link(self.path, self.link)  # after the scan: not among the files lstat-ed each time
            with open(self.link, "r+b") as handle:
                handle.write(b"USER")
        else:
            self.mapped[:4] = b"USER"
            self.mapped.flush()
        time.sleep(turns.CLOCK_SLACK_NS / 1e9 * 1.5)  # the user's change, a moment before the prompt
        with open(self.path, "rb") as handle:
            return handle.read()

    def close(self) -> None:
        if self.how == "memory map":
            self.mapped.close()
            self.handle.close()


@posix_only
@pytest.mark.parametrize("how", ["hard link", "memory map"])
def test_a_change_the_watch_cannot_see_before_a_prompt_is_never_reverted(ws: str, tmp_path: Any, how: str) -> None:
    chat = Turns(os.path.join(str(tmp_path), "cache"), [ws], watch=True)
    unseen = UnseenChange(ws, tmp_path, how)
    try:
        first = chat.checkpointer.take()  # the chat's first checkpoint
        users = unseen.make()
        if sys.platform.startswith("linux"):  # watched: the prompt's checkpoint is the first, unaware
            assert chat.begin() is first
        else:
            chat.begin()
        write(os.path.join(ws, "b.txt"), "the agent's\n", old=False)  # the turn
        found = chat.end("Agent", {os.path.join(ws, "b.txt"): True})
        assert [c.path for c in found] == [os.path.join(ws, "b.txt")]
        chat.revert(None)  # Revert All
        with open(os.path.join(ws, "a.txt"), "rb") as handle:
            assert handle.read() == users
        with open(os.path.join(ws, "b.txt"), "rb") as handle:
            assert handle.read() == b"b.txt\n"
        # Restore checkpoint before the prompt gives the user's text too.
        assert (
            chat.last().before.entries[os.path.join(ws, "a.txt")].digest
            == chat.last().after.entries[os.path.join(ws, "a.txt")].digest
        )
    finally:
        unseen.close()
        chat.close()


# -- what the watch cannot vouch for: every checkpoint scans --


@linux_only
@pytest.mark.parametrize("link", [".gitignore", ".git/info"])
def test_rules_read_through_a_link_are_not_vouched_for(ws: str, tmp_path: Any, scandirs: list[str], link: str) -> None:
    elsewhere = os.path.join(str(tmp_path), "elsewhere")
    write(os.path.join(elsewhere, "exclude"), "b.txt\n")
    os.makedirs(os.path.join(ws, ".git"))
    target = os.path.join(elsewhere, "exclude") if link == ".gitignore" else elsewhere
    os.symlink(target, os.path.join(ws, link))
    rules_changed_unseen_are_read_again(ws, tmp_path, scandirs, os.path.join(elsewhere, "exclude"))


def rules_changed_unseen_are_read_again(ws: str, tmp_path: Any, scandirs: list[str], other_name: str) -> None:
    """b.txt left out by the rules; the rules rewritten as "c.txt" through `other_name` (no event in
    the folders): the next checkpoint scans, and b.txt is covered again."""
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    try:
        assert os.path.join(ws, "b.txt") not in checkpointer.take().entries  # the rules apply
        write(other_name, "c.txt\n")
        scandirs.clear()
        after = checkpointer.take()
        assert scandirs
        assert os.path.join(ws, "b.txt") in after.entries
    finally:
        checkpointer.close()


@linux_only
def test_the_folders_rules_changed_while_they_are_first_read_are_seen(
    ws: str, watched: Checkpointer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    os.makedirs(os.path.join(ws, ".git"))
    real = patterns.Exclusions.start

    def start_then_edit(self: patterns.Exclusions, folder: str) -> Any:
        found = real(self, folder)
        write(os.path.join(ws, ".gitignore"), "a.txt\n")  # just after the rules were read
        monkeypatch.setattr(patterns.Exclusions, "start", real)
        return found

    monkeypatch.setattr(patterns.Exclusions, "start", start_then_edit)
    first = watched.take()
    assert os.path.join(ws, "a.txt") in first.entries
    after = watched.take()
    assert os.path.join(ws, "a.txt") not in after.entries


@linux_only
def test_past_the_watch_limit_the_chat_stops_watching_and_frees_its_watches(
    ws: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, scandirs: list[str]
) -> None:
    monkeypatch.setattr(folder_watch, "MAX_FOLDERS", 2)  # 3 folders and the rules above
    process = psutil.Process()
    before = process.num_fds()
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    first = checkpointer.take()
    assert process.num_fds() == before  # the inotify instance is closed: its watches are free
    scandirs.clear()
    assert checkpointer.take() is first
    assert scandirs


@linux_only
def test_a_chat_closed_while_its_checkpoint_is_taken_frees_its_watch(
    ws: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = psutil.Process()
    before = process.num_fds()
    checkpointer = Checkpointer(CheckpointStore(os.path.join(str(tmp_path), "cache"), [ws]), [ws], watch=True)
    real = checkpoints.Scan.folder

    def closed_meanwhile(scan: checkpoints.Scan, root: str) -> None:
        real(scan, root)
        checkpointer.close()  # the loop thread, while this take holds the lock

    monkeypatch.setattr(checkpoints.Scan, "folder", closed_meanwhile)
    checkpointer.take()
    assert process.num_fds() == before


@posix_only
def test_a_folder_the_agent_moves_over_another_is_its_change_and_reverts(ws: str, tmp_path: Any) -> None:
    """Files in a moved folder keep their old ctimes: the turn's change, not an unseen one."""
    lib, v2 = os.path.join(ws, "lib"), os.path.join(ws, "lib_v2")
    write(os.path.join(lib, "x.py"), "print('v1')\n")
    write(os.path.join(v2, "x.py"), "print('v2')\n")
    chat = Turns(os.path.join(str(tmp_path), "cache"), [ws], watch=True)
    try:
        chat.checkpointer.take()
        time.sleep(turns.CLOCK_SLACK_NS / 1e9 * 1.5)  # the files are older than the prompt
        chat.begin()
        shutil.rmtree(lib)  # the agent: rm -rf lib && mv lib_v2 lib
        os.rename(v2, lib)
        found = {c.path: c.change for c in chat.end("Agent", {})}
        assert found == {os.path.join(lib, "x.py"): "modified", os.path.join(v2, "x.py"): "deleted"}
        chat.revert(None)
        with open(os.path.join(lib, "x.py"), "rb") as handle:
            assert handle.read() == b"print('v1')\n"
    finally:
        chat.close()


@posix_only
def test_a_wall_clock_stepped_during_the_turn_hides_no_agent_change(
    ws: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wall clock 2 s fast at the prompt (then stepped back): the agent's edit, with a ctime
    "before" the prompt, is still the turn's."""
    chat = Turns(os.path.join(str(tmp_path), "cache"), [ws], watch=True)
    try:
        chat.checkpointer.take()
        real = time.time_ns  # the turn's view of the clock only: the scan beside the turn keeps the real one
        monkeypatch.setattr(turns, "time_ns", lambda: real() + 2_000_000_000)
        chat.begin()
        monkeypatch.setattr(turns, "time_ns", real)
        path = os.path.join(ws, "a.txt")
        with open(path, "r+b") as handle:  # in place: the same inode
            handle.write(b"AGENT")
        assert [c.path for c in chat.end("Agent", {path: True})] == [path]
        chat.revert(None)
        with open(path, "rb") as handle:
            assert handle.read() == b"a.txt\n"
    finally:
        chat.close()


@linux_only
def test_a_rule_file_with_another_hard_link_is_not_vouched_for(tmp_path: Any, scandirs: list[str]) -> None:
    repo = os.path.realpath(os.path.join(str(tmp_path), "repo"))
    os.makedirs(os.path.join(repo, ".git"))
    ws = tree(os.path.join(repo, "ws"))
    write(os.path.join(repo, ".gitignore"), "b.txt\n")
    other = os.path.join(str(tmp_path), "shared-ignore")
    os.link(os.path.join(repo, ".gitignore"), other)
    rules_changed_unseen_are_read_again(ws, tmp_path, scandirs, other)  # through the other link


@posix_only
@pytest.mark.parametrize("how", ["hard link", "memory map"])
def test_a_change_the_watch_cannot_see_then_the_agents_edit_of_that_file_reverts_to_the_users(
    ws: str, tmp_path: Any, how: str
) -> None:
    """The prompt leaves on the watch's word; the scan it starts beside the turn finds the unseen
    change before the agent edits the file, so a revert gives back the user's text, not the older one."""
    chat = Turns(os.path.join(str(tmp_path), "cache"), [ws], watch=True)
    unseen = UnseenChange(ws, tmp_path, how)
    try:
        chat.checkpointer.take()
        users = unseen.make()
        chat.begin()
        chat.checked()  # the agent's first edit comes after its model answers: after this scan, here
        path = os.path.join(ws, "a.txt")
        write(path, "the agent's\n", old=False)
        assert [c.path for c in chat.end("Agent", {path: True})] == [path]
        chat.revert(None)
        with open(path, "rb") as handle:
            assert handle.read() == users
    finally:
        unseen.close()
        chat.close()
