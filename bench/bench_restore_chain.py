"""Restore benchmark (issue 37): `changes --restore` of an agent's chain of nested folders (the
hostile agent's `nest`: N folders `d`, a file at the bottom), in process, for 500, 1 000 and 2 000
levels. Timed: the turn end (checkpoint and change set), then the restore (every folder and the
file removed, bottom-up). The restore opens each folder once (a held chain of folder descriptors,
`fdpath.FolderChain`) and lists the chain once, so the time grows with the depth, not its square
(before: 3.6 s for 250 levels, 19 s for 500, over 120 s for 2 000). On the ext4 disk it was measured
on, the system's own rmdir (about 2 ms each, 3.6 s for 2 000 bottom-up in a bare loop) is most of
the restore's 5.5 s. One run each.

    .venv/bin/python bench/bench_restore_chain.py [--depths 500,1000,2000]

Writes bench/results/restore_chain.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from companion.core.history.turns import Turns  # noqa: E402


def measure(depth: int) -> dict[str, float | int]:
    temp = tempfile.mkdtemp(prefix="gemini-companion-bench-")
    try:
        ws = os.path.join(temp, "ws")
        os.mkdir(ws)
        turns = Turns(os.path.join(temp, "cache"), [ws])
        turns.begin()
        path = ws
        for _ in range(depth):
            path = os.path.join(path, "d")
            os.mkdir(path)
        with open(os.path.join(path, "f"), "w", encoding="utf-8") as handle:
            handle.write("at the bottom\n")
        started = time.perf_counter()
        turns.end("bench", {})
        ended = time.perf_counter()
        turns.revert(None)
        restored = time.perf_counter()
        assert os.listdir(ws) == [], "the chain was not removed"
        turns.close()
        return {
            "depth": depth,
            "turn_end_ms": round((ended - started) * 1000, 1),
            "restore_ms": round((restored - ended) * 1000, 1),
        }
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="500,1000,2000")
    args = parser.parse_args()
    rows = [measure(int(depth)) for depth in args.depths.split(",")]
    print("| depth | turn end | restore |")
    print("|---:|---:|---:|")
    for r in rows:
        print(f"| {r['depth']} | {r['turn_end_ms']} ms | {r['restore_ms']} ms |")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "restore_chain.json"), "w") as handle:
        json.dump({"python": sys.version.split()[0], "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
