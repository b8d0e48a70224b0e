"""Checkpoint benchmark (issue 30): a checkpoint of a workspace, first and incremental, for 1 000,
20 000 and 100 000 files; the turn-end change set for 100 changed files; peak RSS. One run.

    .venv/bin/python bench/bench_checkpoints.py [--sizes 1000,20000,100000] [--runs R]
    .venv/bin/python bench/bench_checkpoints.py --profile 20000   # cProfile of the first and of 5 unchanged

Each tree (folders of 100 small files, each file's text its own; a `.git` folder and a .gitignore,
so its rules apply as in a repository) is built in a temporary folder with its files' mtimes set
10 s back (a workspace's files are older than the racy-mtime window, `checkpoints.RACY_NS`, except
those just written). Timed:
- first: every file read, hashed and copied into an empty store, by a chat's Checkpointer (its
  folders watched: core/history/folder_watch.py, Linux);
- incremental, watched: the unchanged tree again with that live Checkpointer (p50 of R);
- incremental, scanned: the same with a Checkpointer that does not watch (macOS and Windows, or a
  folder the watch cannot cover), beside the bare walk (scandir + one lstat per entry, p50 of R:
  the floor of any stat-based checkpoint here);
- one file changed: a file appended to, then a checkpoint, watched and scanned (p50 of R);
- new process: a new Checkpointer that loads the saved checkpoint (a new `chat` or `changes`);
- change set (20 000-file tree): `Turns.end` (checkpoint, record, change set with line counts)
  after 100 files were changed.
Peak RSS: psutil, sampled every 5 ms on a thread. Goal from the issue: an unchanged 20 000-file
workspace in at most 100 ms p50 after the first. Writes bench/results/checkpoints.json.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _stats import percentile  # noqa: E402

from companion.core.history.checkpoint_store import CheckpointStore  # noqa: E402
from companion.core.history.checkpoints import Checkpointer  # noqa: E402
from companion.core.history.turns import Turns  # noqa: E402

PER_FOLDER = 100


class PeakRss:
    """The highest RSS of this process seen since `reset`."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def reset(self) -> None:
        self.peak = self.process.memory_info().rss

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def build_tree(root: str, files: int) -> list[str]:
    os.makedirs(os.path.join(root, ".git"))
    with open(os.path.join(root, ".gitignore"), "w") as handle:
        handle.write("*.log\nbuild/\n")
    paths, old = [], time.time() - 10
    for i in range(files):
        folder = os.path.join(root, f"pkg{i // (PER_FOLDER * 50):02}", f"mod{i // PER_FOLDER:04}")
        if i % PER_FOLDER == 0:
            os.makedirs(folder)
        path = os.path.join(folder, f"file{i % PER_FOLDER:03}.py")
        with open(path, "w") as handle:
            handle.write(f"# file {i}\nVALUE = {i}\n\ndef f():\n    return VALUE\n")
        os.utime(path, (old, old))
        paths.append(path)
    return paths


def lstat_walk(folder: str) -> int:
    """The floor: one scandir per folder and one lstat per entry, nothing else."""
    count = 0
    with os.scandir(folder) as it:
        for item in it:
            item.stat(follow_symlinks=False)
            count += lstat_walk(item.path) if item.is_dir(follow_symlinks=False) else 1
    return count


def timed(call: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def measure(files: int, runs: int, rss: PeakRss) -> dict[str, float | int]:
    work = tempfile.mkdtemp(prefix="bench-checkpoints-")
    try:
        tree, cache = os.path.join(work, "ws"), os.path.join(work, "cache")
        os.makedirs(tree)
        paths = build_tree(tree, files)
        rss.reset()
        checkpointer = Checkpointer(CheckpointStore(cache, [tree]), [tree], watch=True)  # a chat's
        start = time.perf_counter()
        first = checkpointer.take()
        first_s = time.perf_counter() - start
        incremental = timed(checkpointer.take, runs)
        scanning = Checkpointer(CheckpointStore(cache, [tree]), [tree])
        scanning.take()
        scanned = timed(scanning.take, runs)
        # Before the store holds more than its 20 kept checkpoints (prune would read them back).
        turn = turn_end(tree, cache, paths) if files == 20_000 else {}
        changed = {
            name: timed(lambda c=c: change_one(paths, c), runs)
            for name, c in (("watched", checkpointer), ("scanned", scanning))
        }
        checkpointer.close()
        floor = timed(lambda: lstat_walk(tree), runs)
        start = time.perf_counter()
        Checkpointer(CheckpointStore(cache, [tree]), [tree]).take()
        from_saved = time.perf_counter() - start
        row: dict[str, float | int] = {
            "files": files,
            "covered": sum(1 for e in first.entries.values() if e.digest),
            "first_ms": ms(first_s),
            "incremental_p50_ms": round(percentile(incremental, 50) * 1000, 3),  # well under a millisecond
            "incremental_max_ms": round(max(incremental) * 1000, 3),
            "scanned_p50_ms": ms(percentile(scanned, 50)),
            "one_changed_watched_p50_ms": ms(percentile(changed["watched"], 50)),
            "one_changed_scanned_p50_ms": ms(percentile(changed["scanned"], 50)),
            "new_process_ms": ms(from_saved),
            "lstat_walk_p50_ms": ms(percentile(floor, 50)),
        }
        row.update(turn)
        row["peak_rss_mb"] = round(rss.peak / 2**20, 1)
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def change_one(paths: list[str], checkpointer: Checkpointer) -> None:
    with open(paths[len(paths) // 2], "a") as handle:
        handle.write("# one more line\n")
    checkpointer.take()


def turn_end(tree: str, cache: str, paths: list[str]) -> dict[str, float | int]:
    turns = Turns(cache, [tree], watch=True)
    turns.begin()
    for path in paths[:: len(paths) // 100][:100]:
        with open(path, "a") as handle:
            handle.write("# changed by the turn\n")
    start = time.perf_counter()
    found = turns.end("bench", {})
    turns.close()
    return {"change_set_100_ms": ms(time.perf_counter() - start), "changed_listed": len(found)}


def profile(files: int) -> None:
    """Where the time goes: cProfile of the first checkpoint, then of 5 of the unchanged tree."""
    work = tempfile.mkdtemp(prefix="bench-checkpoints-")
    try:
        tree = os.path.join(work, "ws")
        os.makedirs(tree)
        build_tree(tree, files)
        checkpointer = Checkpointer(CheckpointStore(os.path.join(work, "cache"), [tree]), [tree])
        for title, runs in (("first", 1), ("unchanged, 5 runs", 5)):
            profiler = cProfile.Profile()
            for _ in range(runs):
                profiler.runcall(checkpointer.take)
            print(f"== {title}: {files} files")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000,100000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--profile", type=int, metavar="FILES", help="profile one tree of FILES files instead")
    args = parser.parse_args()
    if args.profile:
        profile(args.profile)
        return
    rss = PeakRss()
    rows = [measure(int(size), args.runs, rss) for size in args.sizes.split(",")]
    rss.stop()
    print(
        "| files | first | unchanged, watched p50 (max) | unchanged, scanned p50 | bare lstat walk p50 "
        "| one changed, watched / scanned p50 | new process | change set, 100 files | RSS |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        change = f"{r['change_set_100_ms']} ms" if "change_set_100_ms" in r else "—"
        print(
            f"| {r['files']} | {r['first_ms']} ms | {r['incremental_p50_ms']} ms ({r['incremental_max_ms']} ms) "
            f"| {r['scanned_p50_ms']} ms | {r['lstat_walk_p50_ms']} ms "
            f"| {r['one_changed_watched_p50_ms']} / {r['one_changed_scanned_p50_ms']} ms "
            f"| {r['new_process_ms']} ms | {change} | {r['peak_rss_mb']} MB |"
        )
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "checkpoints.json"), "w") as handle:
        json.dump({"runs": args.runs, "python": sys.version.split()[0], "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
