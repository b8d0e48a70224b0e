"""The checkpoint store under attack (issue #37): two chats of one window, two chats of two
processes, a tampered store, hostile trees the agent makes. Each test is the attack; each failed
before its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from companion.core.history import checkpoint_pins
from companion.core.history import restore as restore_module
from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import Checkpoint, Checkpointer, load
from companion.core.history.restore import RestoreFailed
from companion.core.history.turns import NoTurn, Turns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write(path: str, data: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(data)


def workspace(tmp_path: object, name: str = "ws") -> str:
    ws = os.path.realpath(os.path.join(str(tmp_path), name))
    os.makedirs(ws)
    return ws


def test_two_chats_of_one_window_end_their_turns_at_the_same_moment(tmp_path: object) -> None:
    """C2: both write the store's turn record at once; a temporary name shared by the process made
    one rename the other's file away (FileNotFoundError on 10-22 of 80 turn ends)."""
    ws = workspace(tmp_path)
    cache = os.path.join(str(tmp_path), "cache")
    chats = [Turns(cache, [ws]), Turns(cache, [ws])]
    rounds = 40
    together = threading.Barrier(2)
    failures: list[BaseException] = []

    def chat(n: int) -> None:
        for turn in range(rounds):
            chats[n].begin()
            write(os.path.join(ws, f"chat{n}.txt"), f"turn {turn}\n")
            together.wait()  # both end now
            try:
                chats[n].end("Scripted", {})
            except BaseException as exc:  # the attack's result, reported below
                failures.append(exc)

    threads = [threading.Thread(target=chat, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert chats[0].store.load_record() is not None


def test_a_chat_never_prunes_another_chats_running_prompt_in_the_same_process(tmp_path: object) -> None:
    """C1: chat B's prompt is running; chat A in the same folder ends 22 turns (more than the 20
    checkpoints kept). B's turn must still revert to the user's text."""
    ws = workspace(tmp_path)
    cache = os.path.join(str(tmp_path), "cache")
    notes = os.path.join(ws, "notes.txt")
    write(notes, "the user's own text\n")
    a, b = Turns(cache, [ws]), Turns(cache, [ws])
    b.begin()
    write(notes, "the agent's rewrite\n")  # B's agent, its turn still running
    for turn in range(22):
        a.begin()
        write(os.path.join(ws, "a.txt"), f"A's turn {turn}\n")  # each turn a new content
        a.end("Scripted", {})
    assert notes in [c.path for c in b.end("Scripted", {})]  # with A's a.txt
    b.revert([notes])
    with open(notes, encoding="utf-8") as handle:
        assert handle.read() == "the user's own text\n"


CHAT_B = """
import os, sys
from companion.core.history import restore as restore_module
from companion.core.history.restore import RestoreFailed
from companion.core.history.turns import NoTurn, Turns
cache, ws = sys.argv[1], sys.argv[2]
notes = os.path.join(ws, "notes.txt")
turns = Turns(cache, [ws])
turns.begin()
with open(notes, "w") as handle:
    handle.write("the agent's rewrite\\n")
print("running", flush=True)
if sys.stdin.readline().strip() == "end":
    print(",".join(c.path for c in turns.end("Scripted", {})), flush=True)
    turns.revert([notes])
    print("reverted", flush=True)
"""


def chat_process(cache: str, ws: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen(
        [sys.executable, "-c", CHAT_B, cache, ws], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def a_chat_of_22_turns(cache: str, ws: str) -> None:
    a = Turns(cache, [ws])
    for turn in range(22):
        a.begin()
        write(os.path.join(ws, "a.txt"), f"A's turn {turn}\n")
        a.end("Scripted", {})
    a.close()
    for thread in threading.enumerate():
        if thread.name == "gemini-companion-unpin":  # a closed chat's pin file goes on a thread
            thread.join()


def test_a_chat_never_prunes_the_running_prompt_of_a_chat_in_another_process(tmp_path: object) -> None:
    """C1, two processes: B (another process) is in a turn while A ends 22 turns."""
    ws = workspace(tmp_path)
    cache = os.path.join(str(tmp_path), "cache")
    notes = os.path.join(ws, "notes.txt")
    write(notes, "the user's own text\n")
    chat_b = chat_process(cache, ws)
    try:
        assert chat_b.stdout is not None and chat_b.stdin is not None
        assert chat_b.stdout.readline().strip() == "running"
        a_chat_of_22_turns(cache, ws)
        out, _err = chat_b.communicate("end\n", timeout=60)
    finally:
        if chat_b.poll() is None:
            chat_b.kill()
    changed, reverted = out.split()
    assert notes in changed.split(",") and reverted == "reverted"
    assert chat_b.returncode == 0
    with open(notes, encoding="utf-8") as handle:
        assert handle.read() == "the user's own text\n"


def test_the_pins_of_a_killed_chat_do_not_keep_its_checkpoints_forever(tmp_path: object) -> None:
    """C1, the other way: a chat killed in its turn leaves its pin file; the next prune by a living
    chat finds its process gone, removes the pin, and prunes as usual."""
    ws = workspace(tmp_path)
    cache = os.path.join(str(tmp_path), "cache")
    write(os.path.join(ws, "notes.txt"), "the user's own text\n")
    chat_b = chat_process(cache, ws)
    assert chat_b.stdout is not None
    assert chat_b.stdout.readline().strip() == "running"
    chat_b.kill()
    chat_b.wait()
    store = CheckpointStore(cache, [ws])
    b_points = set(store.point_ids())
    assert os.listdir(os.path.join(store.root, checkpoint_pins.PINS))  # B's pin file is there
    a_chat_of_22_turns(cache, ws)
    assert os.listdir(os.path.join(store.root, checkpoint_pins.PINS)) == []
    assert not b_points & set(store.point_ids())


def ended_turn(tmp_path: object, change: Callable[[str], None]) -> tuple[Turns, str]:
    ws = workspace(tmp_path)
    os.mkdir(os.path.join(ws, ".git"))  # a repository: its .gitignore rules are honoured
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    write(os.path.join(ws, "app.py"), "print('the user')\n")
    turns.begin()
    change(ws)
    turns.end("Scripted", {})
    return turns, ws


def tamper(turns: Turns, which: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """A hostile local program with write access to the private store rewrites a checkpoint."""
    record = turns.store.load_record()
    assert record is not None
    path = os.path.join(turns.store.points, f"{record[which]}.json")
    with open(path, encoding="utf-8") as handle:
        payload = json.load(handle)
    edit(payload)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)


def listing(folder: str) -> dict[str, bytes]:
    found = {}
    for base, _dirs, files in os.walk(folder):
        for name in files:
            with open(os.path.join(base, name), "rb") as handle:
                found[os.path.join(base, name)] = handle.read()
    return found


def test_a_digest_that_leads_out_of_the_store_is_never_read_nor_deleted(tmp_path: object) -> None:
    """I6: the deleted file's digest in the prompt's checkpoint is a relative path to a file outside
    the store; `--revert` read it, found it "damaged" and deleted it."""
    turns, ws = ended_turn(tmp_path, lambda ws: os.remove(os.path.join(ws, "app.py")))
    outside = os.path.join(str(tmp_path), "precious.txt")
    write(outside, "not the store's\n")
    relative = os.path.relpath(outside, turns.store.blobs)

    def edit(payload: dict[str, Any]) -> None:
        for row in payload["entries"]:
            row[7] = relative

    tamper(turns, "before", edit)
    with pytest.raises(NoTurn, match=r"is damaged .* Delete that folder"):
        Turns(os.path.dirname(os.path.dirname(turns.store.root)), [ws]).revert(None)
    with open(outside, encoding="utf-8") as handle:
        assert handle.read() == "not the store's\n"
    assert os.listdir(ws) == [".git"]  # nothing restored either


def test_an_entry_outside_the_workspace_is_never_written(tmp_path: object) -> None:
    """I7: the prompt's checkpoint names a file outside the workspace (an executable), or claims the
    workspace is another folder: `--restore` wrote it there and exited 0."""
    turns, ws = ended_turn(tmp_path, lambda ws: os.remove(os.path.join(ws, "app.py")))
    elsewhere = os.path.join(str(tmp_path), "elsewhere")
    os.makedirs(elsewhere)
    cache = os.path.dirname(os.path.dirname(turns.store.root))
    attacks: list[Callable[[dict[str, Any]], None]] = [
        lambda p: [row.__setitem__(0, os.path.join(elsewhere, "evil.sh")) for row in p["entries"]],
        lambda p: [row.__setitem__(0, os.path.join(ws, "..", "elsewhere", "evil.sh")) for row in p["entries"]],
        lambda p: (
            p.__setitem__("folders", [elsewhere]),
            [row.__setitem__(0, os.path.join(elsewhere, "evil.sh")) for row in p["entries"]],
        ),
        lambda p: [row.__setitem__(6, 0o104755) for row in p["entries"]],  # a mode no file has
        lambda p: [row.__setitem__(1, "hardlink") for row in p["entries"]],
    ]
    for attack in attacks:
        point = turns.store.load_record()["before"]  # type: ignore[index]
        saved = turns.store.load_point(point)
        tamper(turns, "before", attack)
        with pytest.raises(NoTurn, match="is damaged"):
            Turns(cache, [ws]).revert(None)
        assert listing(elsewhere) == {} and os.listdir(ws) == [".git"]
        turns.store.save_point(point, saved)
    Turns(cache, [ws]).revert(None)  # the genuine store still restores
    assert sorted(os.listdir(ws)) == [".git", "app.py"]


def test_a_turn_record_naming_a_checkpoint_out_of_the_store_is_refused(tmp_path: object) -> None:
    """I6: the record's checkpoint id is a relative path to a JSON file the attacker wrote elsewhere."""
    turns, ws = ended_turn(tmp_path, lambda ws: os.remove(os.path.join(ws, "app.py")))
    record = turns.store.load_record()
    assert record is not None
    forged = os.path.join(str(tmp_path), "forged.json")
    with open(os.path.join(turns.store.points, f"{record['before']}.json"), "rb") as handle:
        data = handle.read()
    with open(forged, "wb") as handle:
        handle.write(data)
    record["before"] = os.path.relpath(forged, turns.store.points)[: -len(".json")]
    turns.store.save_record(record)
    cache = os.path.dirname(os.path.dirname(turns.store.root))
    with pytest.raises(NoTurn, match="is not a checkpoint's name"):
        Turns(cache, [ws]).revert(None)
    assert os.listdir(ws) == [".git"]


HOSTILE_AGENT = os.path.join(ROOT, "tests", "acp", "hostile_agent.py")


def remove_deep(path: str) -> None:
    """Remove a chain of thousands of nested folders: Python 3.10-3.12's `shutil.rmtree` recurses
    once per level and overflows, and pytest's own clean-up of old temporary folders would then fail
    a later run on this machine. GNU `rm` walks it without recursion."""
    if sys.version_info >= (3, 13) or shutil.which("rm") is None:
        shutil.rmtree(path, ignore_errors=True)
    else:
        subprocess.run(["rm", "-rf", "--", path], check=False)


def test_a_chain_of_2000_nested_folders_does_not_kill_the_headless_chat(tmp_path: object) -> None:
    """X1: the agent makes 2 000 nested folders; the turn end's walk died with a RecursionError
    traceback (exit 1). Bounded: the chat runs in a process of its own with a time limit."""
    ws = workspace(tmp_path)
    depth = 2000
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", ws, "--diff-policy", "accept"]
    argv += ["--checkpoints", "--prompt", "Nest.", "--", sys.executable, HOSTILE_AGENT, "nest"]
    env = {**os.environ, "GEMINI_COMPANION_CACHE": os.path.join(str(tmp_path), "cache")}
    env.update(HOSTILE_ROOT=ws, HOSTILE_DEPTH=str(depth), PYTHONPATH=ROOT)
    try:
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120)
    finally:
        remove_deep(os.path.join(ws, "d"))
    assert "RecursionError" not in result.stderr
    assert result.returncode == 0, result.stderr[-2000:]
    bottom = os.path.join(ws, *["d"] * depth, "f")
    assert f"added  {bottom}  +1 -0  by outside  not reviewed" in result.stdout


def agent_ignores_what_it_edited(ws: str) -> None:
    """The agent edits app.py, then appends it to .gitignore (its edit now hidden from git)."""
    write(os.path.join(ws, "app.py"), "print('the agent')\n")
    with open(os.path.join(ws, ".gitignore"), "a", encoding="utf-8") as handle:
        handle.write("app.py\n")


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_a_file_the_agent_made_ignored_is_still_its_change_and_revertible(tmp_path: object) -> None:
    """I8: the change set said app.py was `deleted`, and `--revert`, `--restore`, `/restore 1` all
    refused with a false "changed since the turn ended"."""
    turns, ws = ended_turn(tmp_path, agent_ignores_what_it_edited)
    app = os.path.join(ws, "app.py")
    found = {c.path: c.change for c in turns.change_set()}
    assert found == {app: "modified", os.path.join(ws, ".gitignore"): "added"}
    turns.revert([app])  # changes --revert
    assert read_text(app) == "print('the user')\n"

    turns, ws = ended_turn(tmp_path / "restore", agent_ignores_what_it_edited)  # type: ignore[operator]
    turns.revert(None)  # changes --restore
    assert read_text(os.path.join(ws, "app.py")) == "print('the user')\n"
    assert not os.path.exists(os.path.join(ws, ".gitignore"))

    turns, ws = ended_turn(tmp_path / "prompt", agent_ignores_what_it_edited)  # type: ignore[operator]
    plan = turns.plan(turns.prompt_point(1))  # /restore 1
    assert plan.conflicts == []
    turns.apply(plan)
    assert read_text(os.path.join(ws, "app.py")) == "print('the user')\n"
    assert not os.path.exists(os.path.join(ws, ".gitignore"))


def test_a_deleted_file_with_a_255_byte_name_comes_back(tmp_path: object) -> None:
    """I4: the restore's temporary name (the file's name and a suffix) was over NAME_MAX for names of
    242-255 bytes: "File name too long", the file never came back."""
    for length in (242, 255):
        name = "n" * (length - 4) + ".txt"
        turns, ws = ended_turn(tmp_path / str(length), lambda ws, name=name: write(os.path.join(ws, name), "kept\n"))  # type: ignore[operator]
        turns.begin()
        os.remove(os.path.join(ws, name))
        turns.end("Scripted", {})  # the agent's turn deleted it
        turns.revert(None)
        assert read_text(os.path.join(ws, name)) == "kept\n"


def test_a_chat_in_the_folder_that_holds_the_cache_never_checkpoints_nor_restores_the_store(
    tmp_path: object,
) -> None:
    """P10: a chat in the home folder, the default cache inside it: the store's own files were in the
    change set, `--restore` deleted them, and the turn was then gone."""
    home = workspace(tmp_path, "home")
    cache = os.path.join(home, ".cache", "gemini-companion")  # made by the first checkpoint
    turns = Turns(cache, [home])
    turns.begin()
    write(os.path.join(home, "notes.txt"), "the agent's\n")
    assert [c.path for c in turns.end("Scripted", {})] == [os.path.join(home, "notes.txt")]
    turns.revert(None)  # changes --restore
    assert os.listdir(home) == [".cache"]
    assert turns.last().before.id == turns.prompts[0]  # the store and its record are intact

    turns.begin()
    write(os.path.join(home, "notes.txt"), "the agent's again\n")
    turns.end("Scripted", {})
    turns.apply(turns.plan(turns.prompt_point(1)))  # /restore 1
    assert os.listdir(home) == [".cache"]
    assert turns.points()[0].id == turns.prompts[0]


def age(path: str, days: float) -> None:
    """Set `path` and everything in it `days` old."""
    then = time.time() - days * 86400
    for base, dirs, files in os.walk(path, topdown=False):
        for name in (*dirs, *files):
            os.utime(os.path.join(base, name), (then, then), follow_symlinks=False)
    os.utime(path, (then, then))


def test_a_temporary_blob_left_by_a_killed_chat_is_pruned_after_a_day(tmp_path: object) -> None:
    """X9: a chat killed (SIGKILL) while copying leaves its temporary blob; no prune removed it."""
    ws = workspace(tmp_path)
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.store.prepare()
    left, fresh = (os.path.join(turns.store.blobs, f".{n}.tmp") for n in ("0" * 16, "1" * 16))
    point = os.path.join(turns.store.points, ".00000000000000000001-000000.json.99.0000.tmp")
    for path in (left, fresh, point):
        write(path, "half a copy")
    age(left, 1.1)
    age(point, 1.1)
    turns.begin()
    turns.end("Scripted", {})
    assert not os.path.exists(left) and not os.path.exists(point)
    assert os.path.exists(fresh)  # perhaps being written now


def test_the_store_of_a_deleted_workspace_is_removed_after_30_days(tmp_path: object) -> None:
    """P9: a workspace deleted after its chats left its store (with its `.env` copies) forever."""
    cache = os.path.join(str(tmp_path), "cache")
    stores = {}
    for name in ("gone-long", "gone-lately", "still-here"):
        ws = workspace(tmp_path, name)
        write(os.path.join(ws, ".env"), "TOKEN=secret\n")
        turns = Turns(cache, [ws])
        turns.begin()
        turns.end("Scripted", {})
        turns.close()
        stores[name] = turns.store.root
    for thread in threading.enumerate():
        if thread.name == "gemini-companion-unpin":
            thread.join()
    shutil.rmtree(os.path.join(str(tmp_path), "gone-long"))
    shutil.rmtree(os.path.join(str(tmp_path), "gone-lately"))
    age(stores["gone-long"], 31)
    age(stores["gone-lately"], 29)
    age(stores["still-here"], 400)
    chat = Turns(cache, [workspace(tmp_path, "another")])
    chat.begin()
    chat.end("Scripted", {})
    assert not os.path.exists(stores["gone-long"])
    assert os.path.isdir(stores["gone-lately"]) and os.path.isdir(stores["still-here"])
    setting = Turns(cache, [workspace(tmp_path, "a third")], gone_days=28)  # the setting
    setting.begin()
    setting.end("Scripted", {})
    assert not os.path.exists(stores["gone-lately"]) and os.path.isdir(stores["still-here"])


def test_a_sparse_file_is_kept_whole_and_comes_back_exact(tmp_path: object) -> None:
    """X6, the choice: a sparse file is kept at its full size (the README says so under the limits):
    the per-file and file-count limits bound the store as for any file, and a sparse file the user
    has (a preallocated database) stays revertible. The agent rewrites a 16 MiB sparse file: the
    store holds its 16 MiB, and a revert gives back every byte."""
    ws = workspace(tmp_path)
    path = os.path.join(ws, "data.db")
    size = 16 * 1024 * 1024
    with open(path, "wb") as handle:
        handle.truncate(size)  # a hole, a few blocks on disk at most
        handle.seek(size // 2)
        handle.write(b"the user's record")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.begin()
    with open(path, "r+b") as handle:
        handle.seek(size // 2)
        handle.write(b"the agent's entry")
    assert [c.change for c in turns.end("Scripted", {})] == ["modified"]
    blob_sizes = sorted(os.path.getsize(os.path.join(turns.store.blobs, n)) for n in os.listdir(turns.store.blobs))
    assert blob_sizes == [size, size]  # each kept whole: the cost the README states
    turns.revert([path])
    with open(path, "rb") as handle:
        data = handle.read()
    assert len(data) == size and data[size // 2 : size // 2 + 17] == b"the user's record"
    assert data.count(0) == size - 17


def test_a_prune_never_deletes_what_another_process_is_checkpointing_meanwhile(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C1, the race the pins cannot close: chat A's prune has read the pins and decided what is
    unused; chat B, in another process (no pin in A's memory, its pin file written after A read
    them), checkpoints now: a new content, and a content A is about to delete as unused. Both, and
    B's checkpoint, must survive A's prune."""
    ws = workspace(tmp_path)
    cache = os.path.join(str(tmp_path), "cache")
    path = os.path.join(ws, "a.txt")
    a = Checkpointer(CheckpointStore(cache, [ws]), [ws])
    a.keep = 1
    for n in range(3):
        write(path, f"v{n}\n")
        a.take()
    other = Checkpointer(CheckpointStore(cache, [ws]), [ws])  # shares nothing with A but the store
    taken: list[Checkpoint] = []
    remove_unused = a.store.remove_unused

    def meanwhile(kept: Any, used: Any, *since: Any) -> None:
        write(path, "v0\n")  # a content A's prune is about to delete as unused
        write(os.path.join(ws, "b.txt"), "new\n")
        taken.append(other.take())
        remove_unused(kept, used, *since)

    monkeypatch.setattr(a.store, "remove_unused", meanwhile)
    a.prune([])
    assert taken[0].id in a.store.point_ids()
    saved = load(a.store, taken[0].id)
    assert saved is not None
    contents = {a.store.read_blob(e.digest) for e in saved.entries.values() if e.digest}
    assert contents == {b"v0\n", b"new\n"}


def test_files_the_turn_unignored_are_not_its_additions_and_a_revert_keeps_them(tmp_path: object) -> None:
    """I8, the other way: the agent empties `.gitignore` and adds a file. The user's ignored files
    (a file rule and a folder rule) were listed as `added`, and `--restore` deleted them; they were
    never in the store."""
    ws = workspace(tmp_path)
    os.mkdir(os.path.join(ws, ".git"))
    write(os.path.join(ws, ".gitignore"), "secret.txt\nbuild/\n")
    write(os.path.join(ws, "secret.txt"), "the user's secret\n")
    os.mkdir(os.path.join(ws, "build"))
    write(os.path.join(ws, "build", "out.bin"), "the user's build\n")
    outside = os.path.join(str(tmp_path), "moved")
    os.mkdir(outside)
    write(os.path.join(outside, "old.txt"), "made before the prompt\n")
    time.sleep(0.15)  # the files are older than the prompt (turns.CLOCK_SLACK_NS), as folder_watch tests do
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.begin()
    write(os.path.join(ws, ".gitignore"), "")
    write(os.path.join(ws, "new.txt"), "the agent's\n")
    os.rename(outside, os.path.join(ws, "moved"))  # a folder the agent moved in is its addition
    found = {os.path.relpath(c.path, ws): c.change for c in turns.end("Scripted", {})}
    assert found == {".gitignore": "modified", "new.txt": "added", os.path.join("moved", "old.txt"): "added"}
    turns.revert(None)  # changes --restore
    assert sorted(os.listdir(ws)) == [".git", ".gitignore", "build", "secret.txt"]
    assert read_text(os.path.join(ws, "build", "out.bin")) == "the user's build\n"


def test_a_turn_record_of_the_wrong_shape_is_refused_as_damaged(tmp_path: object) -> None:
    """I6: a record whose fields are not what the store writes is a clear error, not a traceback."""
    turns, ws = ended_turn(tmp_path, lambda ws: os.remove(os.path.join(ws, "app.py")))
    record = turns.store.load_record()
    assert record is not None
    record["writes"] = ["app.py"]
    turns.store.save_record(record)
    cache = os.path.dirname(os.path.dirname(turns.store.root))
    with pytest.raises(NoTurn, match="is damaged"):
        Turns(cache, [ws]).revert(None)
    assert os.listdir(ws) == [".git"]


def user_files_ignored_at_the_prompt(tmp_path: object) -> str:
    """A workspace whose `.gitignore` hides the user's `secret.txt`, `build/`, `*.log`, `node_modules/`."""
    ws = workspace(tmp_path)
    os.mkdir(os.path.join(ws, ".git"))
    write(os.path.join(ws, ".gitignore"), "secret.txt\nbuild/\n*.log\nnode_modules/\n")
    os.makedirs(os.path.join(ws, "node_modules", "pkg"))
    write(os.path.join(ws, "node_modules", "pkg", "index.js"), "a package\n")
    write(os.path.join(ws, "secret.txt"), "the user's secret\n")
    os.makedirs(os.path.join(ws, "build", "deep"))
    write(os.path.join(ws, "build", "deep", "out.bin"), "the user's build\n")
    return ws


def agent_edits_and_unignores(ws: str) -> None:
    """The agent edits the user's ignored files (new ctimes), makes a log of its own, un-ignores all."""
    write(os.path.join(ws, "secret.txt"), "the agent's\n")
    write(os.path.join(ws, "build", "deep", "out.bin"), "the agent's\n")
    write(os.path.join(ws, "new.log"), "the agent's log\n")
    write(os.path.join(ws, ".gitignore"), "node_modules/\n")


def test_a_file_ignored_at_the_prompt_that_the_agent_edits_and_unignores_is_never_deleted(tmp_path: object) -> None:
    """Data loss: the reverse-I8 check missed a file ignored at the prompt that the agent edited
    and un-ignored in one turn (its ctime new): it was the turn's `added`, and `changes --restore`
    and `/restore 1` deleted the user's file. The prompt's checkpoint knows the names it left out:
    such a file is listed as not covered and left as it is; a file the agent made under an ignored
    name that did not exist at the prompt is still its addition, and goes."""
    ws = user_files_ignored_at_the_prompt(tmp_path)
    secret, built = os.path.join(ws, "secret.txt"), os.path.join(ws, "build", "deep", "out.bin")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    before = turns.begin()
    agent_edits_and_unignores(ws)
    found = {c.path: (c.change, c.note) for c in turns.end("Scripted", {})}
    unknown = "before not covered (ignored when the prompt began: what it held then is not known)"
    assert found == {
        os.path.join(ws, ".gitignore"): ("modified", ""),
        os.path.join(ws, "new.log"): ("added", ""),
        secret: ("modified", unknown),
        built: ("modified", unknown),
    }
    left = turns.revert(None)  # changes --restore
    assert sorted(left) == [built, secret]
    assert sorted(os.listdir(ws)) == [".git", ".gitignore", "build", "node_modules", "secret.txt"]
    assert read_text(secret) == read_text(built) == "the agent's\n"  # what they held before is not known
    # Noted by name only: an ignored folder is not walked (node_modules costs one name).
    assert before.ignored == {os.path.join(ws, n) for n in (".git", "build", "node_modules", "secret.txt")}


def test_restore_to_an_earlier_prompt_never_deletes_a_file_that_was_ignored_then(tmp_path: object) -> None:
    """The same, two prompts later: `/restore 1` brings back the first prompt's checkpoint, which
    never had the ignored files; they are listed as not covered and left, not deleted."""
    ws = user_files_ignored_at_the_prompt(tmp_path)
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.begin()
    write(os.path.join(ws, "a.txt"), "turn 1\n")
    turns.end("Scripted", {})
    turns.begin()
    agent_edits_and_unignores(ws)
    turns.end("Scripted", {})
    plan = turns.plan(turns.prompt_point(1))  # /restore 1
    secret, built = os.path.join(ws, "secret.txt"), os.path.join(ws, "build", "deep", "out.bin")
    assert sorted(plan.not_covered) == [built, secret]
    turns.apply(plan)
    assert sorted(os.listdir(ws)) == [".git", ".gitignore", "build", "node_modules", "secret.txt"]
    assert read_text(secret) == read_text(built) == "the agent's\n"
    assert read_text(os.path.join(ws, ".gitignore")) == "secret.txt\nbuild/\n*.log\nnode_modules/\n"


def test_changes_restore_of_a_chain_of_2000_nested_folders_ends(tmp_path: object) -> None:
    """Restore, X1's chain: `changes --restore` of the hostile agent's 2 000 nested folders did not
    end in 120 s (each removal walked the whole chain again from the workspace folder, and each
    folder to remove was listed with all the folders inside it). The limit is only against a hang."""
    ws = workspace(tmp_path)
    depth = 2000
    cache = os.path.join(str(tmp_path), "cache")
    argv = [sys.executable, "-m", "companion", "chat", "--workspace", ws, "--diff-policy", "accept"]
    argv += ["--checkpoints", "--prompt", "Nest.", "--", sys.executable, HOSTILE_AGENT, "nest"]
    env = {**os.environ, "GEMINI_COMPANION_CACHE": cache, "PYTHONPATH": ROOT}
    env.update(HOSTILE_ROOT=ws, HOSTILE_DEPTH=str(depth))
    try:
        chat = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120)
        assert chat.returncode == 0, chat.stderr[-2000:]
        argv = [sys.executable, "-m", "companion", "changes", "--workspace", ws, "--restore"]
        restored = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120
        )
        assert restored.returncode == 0, restored.stderr[-2000:]
        assert os.listdir(ws) == []  # the chain is gone, bottom file and all
    finally:
        remove_deep(os.path.join(ws, "d"))  # left only when the restore failed


@pytest.mark.skipif(not restore_module.DIR_FD, reason="this OS has no dir_fd: each write is checked by name")
def test_a_folder_swapped_for_a_link_between_two_writes_of_one_restore_is_not_followed(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restore keeps the folders above its next path open (linear in a deep chain): a folder it
    has not opened yet, swapped for a link to the outside between two of its writes, is refused."""
    ws = workspace(tmp_path)
    outside = os.path.join(str(tmp_path), "outside")
    os.mkdir(outside)
    inner = os.path.join(ws, "a", "b", "y.txt")
    os.makedirs(os.path.dirname(inner))
    write(os.path.join(ws, "a", "x.txt"), "x\n")
    write(inner, "y\n")
    turns = Turns(os.path.join(str(tmp_path), "cache"), [ws])
    turns.begin()
    shutil.rmtree(os.path.join(ws, "a", "b"))  # the agent's turn
    turns.end("Scripted", {})
    create = restore_module._create

    def then_swap(*args: Any) -> None:
        create(*args)
        if os.path.isdir(os.path.join(ws, "a", "b")) and not os.path.islink(os.path.join(ws, "a", "b")):
            os.rmdir(os.path.join(ws, "a", "b"))  # a hostile program, between the restore's writes
            os.symlink(outside, os.path.join(ws, "a", "b"))

    monkeypatch.setattr(restore_module, "_create", then_swap)
    with pytest.raises(RestoreFailed, match="a symbolic link appeared"):
        turns.revert(None)
    assert os.listdir(outside) == []
