"""A chat's turns in one workspace: a checkpoint before each prompt, the state at its end, the change
set between them, revert/restore of the last turn (which the `changes` command works on later), and
restore of the workspace to how it was before any prompt of the chat (`restore_plan.py`).

The record of the last turn (`last_turn.json` in the workspace's store, keyed by the folders' real
paths) names both checkpoints, the agent and what it wrote through us, the checkpoint before each
prompt of the chat and each "before restore" point (pinned from pruning), and the notes for the
agent's next prompt (what was reverted); a later chat in the same folders replaces it. Blocking
I/O: run it on a worker thread, never on Sublime's main thread.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from time import monotonic_ns, time_ns
from typing import Any

from . import checkpoint_pins
from .change_set import FileChange, changed_paths, diff
from .checkpoint_store import GONE_DAYS, CheckpointStore, StoreDamaged, damaged, remove_gone_stores
from .checkpoints import Checkpoint, Checkpointer, Entry, Limits, load, load_checked, new_id, unknown_before
from .restore import RestoreFailed, RestoreRefused, current_entry, restore
from .restore_plan import Conflict, RestorePlan, apply_plan, make_plan
from .revert_note import reverted_note
from .turn_writes import left_as_written

# A file's ctime comes from the kernel's coarse clock (a few ms behind time.time_ns): a file whose
# ctime is this much older than the prompt's checkpoint was not changed by the turn (a second more
# where the file system keeps whole seconds).
CLOCK_SLACK_NS = 100_000_000
_SECOND_NS = 1_000_000_000


class NoTurn(Exception):
    """No chat left a turn in this workspace (or its checkpoints are gone); the message says so."""


@dataclass(frozen=True)
class Point:
    """A checkpoint the workspace can be restored to: before a prompt, or before a restore (its undo)."""

    label: str  # "prompt 2", "before restore to prompt 2"
    id: str


@dataclass(frozen=True)
class LastTurn:
    agent: str
    before: Checkpoint
    after: Checkpoint
    writes: dict[str, bool]
    changed: tuple[str, ...] = ()  # reviewed, but not left with the accepted bytes (change_set.CHANGED_AFTER_REVIEW)


class Turns:
    def __init__(
        self,
        cache_folder: str,
        folders: Sequence[str],
        limits: Limits | None = None,
        watch: bool = False,
        gone_days: float = GONE_DAYS,
    ) -> None:
        """`watch`: a chat's, which checkpoints before every prompt (`Checkpointer`); close() it.
        `gone_days`: the first turn end removes the stores of workspaces gone and unused this long."""
        self.cache_folder = cache_folder
        self.gone_days: float | None = gone_days
        self.store = CheckpointStore(cache_folder, folders)
        self.checkpointer = Checkpointer(self.store, folders, limits, watch)
        self.chat = secrets.token_hex(8)  # whose prompts and notes the record holds
        self.prompts: list[str] = []  # the checkpoint before each prompt of this chat, in order
        self._before: Checkpoint | None = None
        self._begun = (0, 0, False)  # the prompt's checkpoint: (wall clock, monotonic clock, from the watch alone)
        self._running = False
        self._checking: threading.Thread | None = None
        self._early: Checkpoint | None = None  # that scan's checkpoint
        self._undo: list[str] = []  # this chat's "before restore" points
        self._closed = False
        self._after = ""  # the end state of this chat's last turn, as reverts and restores left it
        self._lock = threading.Lock()  # the record is read and rewritten whole
        # One checkpoint operation at a time: a restore (on a worker thread of the editor) and the
        # next prompt's checkpoint never interleave, nor write the workspace under each other.
        self._work = threading.Lock()
        # The pin file's writes and the closing's removal, one at a time: a write that saw the chat
        # open is done before the removal runs, and every later one sees it closed.
        self._pins = threading.Lock()

    def close(self) -> None:
        """The chat ended: stop watching its folders (its checkpoints stay usable; the record names
        the last chat's, and the other chats' prunes no longer keep the rest)."""
        self.checkpointer.close()
        self._closed = True
        # From any thread, never waits (an event loop's call): the pin file goes on a thread of its own.
        threading.Thread(
            target=self._unshare,
            name="gemini-companion-unpin",
            daemon=True,
        ).start()

    def _unshare(self) -> None:
        with self._pins:
            checkpoint_pins.unshare(self.store.root, self.chat)

    def _share(self, *more: str) -> None:
        """Pin this chat's checkpoints in the store, for every chat of every process: its prompts, its
        undo points, the last turn's two (a prune by another chat never takes a running chat's).
        Once closed, none: the pin file goes (a turn ending after the close must not leave its
        "being taken" pin, which would stop every prune of the store)."""
        ids = {*self.prompts, *self._undo, *more, self._after}
        if self._before is not None:
            ids.add(self._before.id)
        ids.discard("")
        with self._pins:
            if ids and not self._closed:
                checkpoint_pins.share(self.store.root, self.chat, ids)
            else:  # closed; or `changes`, which pins nothing; or a first checkpoint that failed
                checkpoint_pins.unshare(self.store.root, self.chat)

    def _take_pinned(self) -> Checkpoint:
        """A checkpoint, with every prune of the store (in any process) skipped while it is taken: its
        new contents reach the store before the checkpoint that names them."""
        self.store.prepare()
        try:
            with self._pins:  # even once closed: the `_share` below removes it
                checkpoint_pins.share(self.store.root, self.chat, None)  # other processes' prunes
            checkpoint_pins.hold(self.store.root, self.chat)  # this one's: waits for a prune already running
            try:
                point = self.checkpointer.take()
            finally:
                checkpoint_pins.unpin(self.store.root, self.chat)
        except BaseException:
            self._share()
            raise
        self._share(point.id)
        return point

    def begin(self) -> Checkpoint:
        """The checkpoint before a prompt."""
        with self._work:
            wall, monotonic = time_ns(), monotonic_ns()
            self._before = self._take_pinned()
            self._begun = (wall, monotonic, self.checkpointer.quick)
            self.prompts.append(self._before.id)
            self._running = True
            self._early = None
            if self.checkpointer.quick:
                self._check_early()
            return self._before

    def _check_early(self) -> None:
        """The prompt left on the watch's word: scan now, beside the turn, so that a change the watch
        could not see is found before the agent has likely touched the file (`_unseen_before`)."""

        def scan() -> None:
            try:
                self._early = self.checkpointer.take(full=True)
            except Exception:  # the turn's end scans again, and says what fails
                self._early = None

        self._checking = threading.Thread(target=scan, name="gemini-companion-checkpoint-check", daemon=True)
        self._checking.start()

    def checked(self) -> None:
        """Wait for the scan `begin` started beside the turn, if any."""
        checking, self._checking = self._checking, None
        if checking is not None:
            checking.join()

    def end(
        self,
        agent: str,
        writes: dict[str, bool],
        digests: Mapping[str, str] | None = None,
        changed: Collection[str] = (),
    ) -> list[FileChange]:
        """Record the turn's end state and return its change set. `digests` (TurnWrites.take_turn):
        a written file the turn left with other content is not the agent's (turn_writes.py);
        `changed`: the reviewed files whose bytes were not the accepted ones, listed as such."""
        with self._work:
            self._running = False
            return self._end(agent, writes, digests or {}, tuple(changed))

    def _end(
        self, agent: str, writes: dict[str, bool], digests: Mapping[str, str], changed: tuple[str, ...]
    ) -> list[FileChange]:
        self.checked()
        before = self._before or self._take_pinned()
        after = self._take_pinned()
        if self._before is not None:
            for found in (self._early, after):  # the early scan's contents first: what the agent did not touch yet
                if found is not None:
                    before = self._unseen_before(before, found)
        if self._before is not None:
            before = self._untouched_before(before, after)
        after = self._still_there(after, before)
        writes = left_as_written(writes, digests, after)
        with self._lock:
            record = self.store.load_record() or {}
            mine = record.get("chat") == self.chat
            restores = record.get("restores", []) if mine else []
            notes = record.get("notes", []) if mine else []  # a chat before this one took none of its own
            self._write(LastTurn(agent, before, after, writes, changed), restores, notes)
        self._after = after.id
        self._share(before.id)
        pinned = (before.id, after.id, *self.prompts, *(point_id for _label, point_id in restores))
        self.checkpointer.prune(pinned=pinned)
        if self.gone_days is not None:  # once a chat (a prune also does it, past `keep` checkpoints)
            self.store.remove_stale_temps()
            remove_gone_stores(self.cache_folder, self.gone_days)
            self.gone_days = None
        return diff(before, after, self.store, writes, agent, changed=changed)

    def _still_there(self, point: Checkpoint, reference: Checkpoint, save: bool = True) -> Checkpoint:
        """`point`, with each path `reference` has and `point` left out though it is still there: a
        file the turn made ignored (`app.py` appended to `.gitignore`) is still the turn's change, and
        revertible; leaving it out made it "deleted" and every revert refuse it as changed since.
        Saved as a new checkpoint (`save`) when anything was added."""
        extra: dict[str, Entry] = {}
        if point is reference:
            return point  # nothing changed: no set of 100 000 paths to build
        for path in reference.entries.keys() - point.entries.keys():
            if os.path.realpath(os.path.dirname(path)) != os.path.dirname(path):
                continue  # its folder is gone, or now a link: not read through it
            try:
                size = os.lstat(path).st_size
            except OSError:
                continue
            limit = self.checkpointer.limits.max_file_bytes
            now = current_entry(path, None, 0, self.store if size <= limit else None)
            if now is not None and now.kind == "file" and size > limit:
                now = now._replace(digest="", reason=f"larger than the {limit}-byte limit")
            if now is not None:
                extra[path] = now
        if not extra:
            return point
        if save:
            return self.checkpointer.amended(point, extra)
        return Checkpoint(new_id(), point.folders, point.taken_ns, {**point.entries, **extra}, point.ignored)

    def _untouched_before(self, before: Checkpoint, after: Checkpoint) -> Checkpoint:
        """`before`, with each path the turn's end has and the prompt's checkpoint left out though
        nothing changed it since before the prompt (its ctime, and that of each folder above it the
        prompt's checkpoint did not have, older than the prompt): a file ignored until the turn
        changed `.gitignore` is not the turn's addition, and a revert must never delete it. A folder
        the agent moved in has a new ctime: its files stay added. Not when the wall clock was stepped
        during the turn. Saved as a new checkpoint, as `_unseen_before` does.
        The others the prompt's checkpoint saw ignored (or below a folder it saw ignored) existed
        then, whatever their ctime (the agent edited and un-ignored them): they join it as not
        covered (`unknown_before`), so a restore leaves them as they are and says so."""
        if before is after:
            return before
        added = after.entries.keys() - before.entries.keys()
        if not added:
            return before
        wall, monotonic, _quick = self._begun
        stepped = abs((time_ns() - monotonic_ns()) - (wall - monotonic)) > CLOCK_SLACK_NS
        old: dict[str, bool] = {folder: True for folder in after.folders}

        def untouched(path: str) -> bool:  # up the folders, without recursion (deep trees)
            chain: list[str] = []
            while True:
                if path in old:
                    found = old[path]
                    break
                if path in before.entries:
                    found = True
                    break
                entry = after.entries.get(path)
                if entry is None or not _older(entry.ctime_ns, wall):
                    found = False
                    break
                chain.append(path)
                path = os.path.dirname(path)
            for link in chain:
                old[link] = found
            return found

        extra = {path: after.entries[path] for path in added if not stepped and untouched(path)}
        for path in unknown_before(before, added - extra.keys()):
            extra[path] = _unknown(after.entries[path])
        if not extra:
            return before
        amended = self.checkpointer.amended(before, extra)
        self.prompts = [amended.id if point_id == before.id else point_id for point_id in self.prompts]
        return amended

    def _unseen_before(self, before: Checkpoint, after: Checkpoint) -> Checkpoint:
        """`before`, with what changed before the prompt unseen by the folders' watch (a write through
        a memory map or through a hard link made outside: no event, folder_watch.py), when the watch
        alone vouched for it: a file changed in place (the same inode) whose ctime is older than the
        prompt held at the prompt what it holds now. Not after a scan (nothing is unseen; on Windows
        st_ctime is the creation time), nor when the wall clock was stepped during the turn. Saved as
        a new checkpoint: `before` may be the last turn's end."""
        wall, monotonic, quick = self._begun
        if not quick or abs((time_ns() - monotonic_ns()) - (wall - monotonic)) > CLOCK_SLACK_NS:
            return before
        unseen = {
            path: entry
            for path, entry in after.entries.items()
            if entry.kind == "file"
            and entry.covered
            and entry.ctime_ns < wall - CLOCK_SLACK_NS - (_SECOND_NS if entry.ctime_ns % _SECOND_NS == 0 else 0)
            and (old := before.entries.get(path)) is not None
            and old.kind == "file"
            and entry.ino == old.ino != 0  # in place: a folder moved over it keeps its files' ctimes
            and not entry.same_content(old)
        }
        if not unseen:
            return before
        amended = self.checkpointer.amended(before, unseen)
        self.prompts = [amended.id if point_id == before.id else point_id for point_id in self.prompts]
        return amended

    def last(self) -> LastTurn:
        record = self.store.load_record()
        if record is None:
            raise NoTurn("no chat has left a turn in this workspace; run `chat --checkpoints` there first.")
        try:
            before, after = load_checked(self.store, record["before"]), load_checked(self.store, record["after"])
            writes = {str(k): bool(v) for k, v in record["writes"].items()}
            changed = tuple(str(p) for p in record.get("changed", []))
            return LastTurn(str(record["agent"]), before, after, writes, changed)
        except OSError:
            raise NoTurn("the last turn's checkpoints are gone from the cache; nothing can be restored.") from None
        except StoreDamaged as exc:
            raise NoTurn(str(exc)) from None
        except (KeyError, TypeError, AttributeError):
            raise NoTurn(str(damaged(self.store.root, "its turn record is not one it wrote"))) from None

    def change_set(self, counted: bool = False) -> list[FileChange]:
        """The last turn's files, with +/- line counts when `counted` (`changes --json` prints none)."""
        turn = self.last()
        return diff(turn.before, turn.after, self.store, turn.writes, turn.agent, counted=counted, changed=turn.changed)

    def revert(self, paths: Sequence[str] | None) -> list[str]:
        """Revert `paths` (all when None) to the last turn's checkpoint; RestoreRefused writes
        nothing. Returns the paths left alone as not covered. The turn's end state is updated, so a
        later restore does not take these reverts for someone else's change; the chat's next prompt
        tells the agent what was reverted."""
        with self._work:
            turn = self.last()
            after, skipped = restore(self.store, turn.before, turn.after, paths)
        reverted = [p for p in changed_paths(turn.after, after) if not _is_folder(turn.after, after, p)]
        self._update(after, notes=[reverted_note(reverted)] if reverted else [])
        return skipped

    # -- restore to any prompt --

    def points(self) -> list[Point]:
        """The points this workspace can be restored to: before each prompt of this chat (of the chat
        that left the record, for `changes`), in order, then each "before restore" point."""
        record = self.store.load_record() or {}
        theirs = record.get("chat") != self.chat
        if self.prompts and theirs:  # this chat's first turn has not ended yet: only its own
            return [Point(f"prompt {n}", i) for n, i in enumerate(self.prompts, 1)]
        prompts = [Point(f"prompt {n}", str(i)) for n, i in enumerate(record.get("prompts", []), 1)]
        return prompts + [Point(str(label), str(i)) for label, i in record.get("restores", [])]

    def prompt_point(self, number: int) -> Point:
        """The checkpoint before prompt `number` (1 = the chat's first); NoTurn when there is none."""
        prompts = [p for p in self.points() if p.label.startswith("prompt ")]
        if not 1 <= number <= len(prompts):
            count = len(prompts)
            raise NoTurn(f"there is no prompt {number} to restore (this chat has {count}); give 1 to {count}.")
        return prompts[number - 1]

    def plan(self, point: Point, buffers: Mapping[str, str] | None = None) -> RestorePlan:
        """What restoring `point` changes, and the conflicts (see restore_plan.py). `buffers`: path
        -> the text of its open buffer with unsaved changes."""
        with self._work:
            self._refuse_while_running()
            try:
                target = load_checked(self.store, point.id)
            except OSError:
                raise NoTurn(
                    f"the checkpoint of {point.label} is gone from the cache; it cannot be restored."
                ) from None
            except StoreDamaged as exc:
                raise NoTurn(str(exc)) from None
            current = self._still_there(self.checkpointer.take(), target, save=False)
            record = self.store.load_record()
            settled = load(self.store, record["after"]) if record else None
            return make_plan(self.store, point.label, target, current, settled or current, buffers)

    def apply(self, plan: RestorePlan, take: Collection[str] = ()) -> Point:
        """Restore the plan: every file but the conflicts not in `take` (left exactly as they are).
        Refused, nothing written, when a file to write changed since the plan. Returns the undo
        point ("before restore to ..."), a checkpoint of the workspace taken just before writing."""
        with self._work:
            self._refuse_while_running()
            now = self._still_there(self._take_pinned(), plan.target)
            self._undo.append(now.id)
            self._share(now.id)
            after = apply_plan(self.store, plan, now, take)
        undo = Point(f"before restore to {plan.label}", now.id)
        kept = sorted(c.path for c in plan.conflicts if c.path not in take)
        restored = [c.path for c in plan.changes if c.path not in kept]
        why = f"restored to how they were before {plan.label}"
        self._update(after, undo, [reverted_note(restored, why=why, kept=kept)] if restored else [])
        return undo

    def _refuse_while_running(self) -> None:
        if self._running:
            raise RestoreRefused("a turn is running; restore when it ends (or cancel it). Nothing was written.")

    # -- the note to the agent --

    def applied(self, path: str, hunks: Sequence[tuple[int, int]]) -> None:
        """The user wrote their own version of `path` over the turn's (hunks reverted, lines edited):
        the turn's end state takes it, so a later revert of the file does not take it for someone
        else's change, and the chat's next prompt names the lines of the agent's version that went."""
        with self._work:
            turn = self.last()
            now = current_entry(path, None, 0, self.store)  # this one file, not a walk of the folders
            entries = dict(turn.after.entries)
            if now is not None:
                entries[path] = now
            else:
                entries.pop(path, None)
            after = Checkpoint(new_id(), turn.after.folders, turn.after.taken_ns, entries, turn.after.ignored)
        self._update(after, notes=[reverted_note([path], hunks={path: hunks})] if hunks else [])

    def note_reverted(self, paths: Sequence[str], hunks: Mapping[str, Sequence[tuple[int, int]]] | None = None) -> None:
        """Tell the agent, with the chat's next prompt, that the user reverted these files (or only
        these hunks of them: path -> (first line, last line) in the agent's version)."""
        if not paths:
            return
        self._update(notes=[reverted_note(paths, hunks=hunks)])

    def take_notes(self) -> list[str]:
        """The notes for this chat's next prompt, once (a note left for an earlier chat is not its)."""
        with self._lock:
            record = self.store.load_record()
            if record is None or record.get("chat") != self.chat or not record.get("notes"):
                return []
            notes = [str(n) for n in record["notes"]]
            record["notes"] = []
            self.store.save_record(record)
            return notes

    # -- the record --

    def _update(self, after: Checkpoint | None = None, undo: Point | None = None, notes: Sequence[str] = ()) -> None:
        """Change the record: the files as a revert or restore left them (what the next one compares
        with), a new undo point, notes for the next prompt."""
        if after is not None:
            self.store.save_point(after.id, after.payload())
        with self._lock:
            record = self.store.load_record()
            if record is None:
                return
            if after is not None:
                record["after"] = after.id
                if record.get("chat") == self.chat:
                    self._after = after.id
            if undo is not None:
                record["restores"] = [*record.get("restores", []), [undo.label, undo.id]]
            record["notes"] = [*record.get("notes", []), *notes]
            self.store.save_record(record)
        if after is not None:
            self._share()

    def _write(self, turn: LastTurn, restores: Sequence[Any], notes: Sequence[str]) -> None:
        self.store.save_record(
            {
                "agent": turn.agent,
                "before": turn.before.id,
                "after": turn.after.id,
                "writes": turn.writes,
                "changed": list(turn.changed),
                "chat": self.chat,
                "prompts": list(self.prompts),
                "restores": list(restores),
                "notes": list(notes),
            }
        )


UNKNOWN_BEFORE = "ignored when the prompt began: what it held then is not known"


def _unknown(entry: Entry) -> Entry:
    """What the prompt's checkpoint says of a path it saw ignored: a folder was there (its files
    decide), a file's content is not known (not covered: a restore leaves it as it is)."""
    return entry if entry.kind == "dir" else Entry(entry.path, "file", reason=UNKNOWN_BEFORE)


def _older(ctime_ns: int, wall: int) -> bool:
    """Whether a ctime is before the prompt's wall clock (`CLOCK_SLACK_NS`, a second more where the
    file system keeps whole seconds)."""
    return ctime_ns < wall - CLOCK_SLACK_NS - (_SECOND_NS if ctime_ns % _SECOND_NS == 0 else 0)


def _is_folder(a: Checkpoint, b: Checkpoint, path: str) -> bool:
    return any(e is not None and e.kind == "dir" for e in (a.entries.get(path), b.entries.get(path)))


__all__ = ["Conflict", "NoTurn", "Point", "RestoreFailed", "RestorePlan", "RestoreRefused", "Turns"]
