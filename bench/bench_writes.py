"""Writes and change sets of large files, before and after in one run (issue #36: quadratic diffs).

    .venv/bin/python bench/bench_writes.py [--before DIR] [--runs R] [--before-runs R] [--cap S]  (~2 min)

Keeping each untouched line's ending, the review's text and the change set's +/- counts compare
the old and the new text line by line. Measured through `write_file` (the MCP tool on a window
server whose editor accepts every review, SDK client over loopback), a 20 000-line source-like file
(15 % blank lines, 15 % `}`): written new, then replaced with one line edited and with 100 edits
spread over it, LF, CRLF and mixed (CRLF with every 1000th line in LF: each line's own ending is
kept, the case that needs the line diff). Then the change set of a 60 000-line file after a turn (`Turns.end`,
then `Turns.change_set(counted=True)`, median of the runs): source-like with 100 edits, and 60 000 equal lines with one
edited. Goal: a replace at most 3x the new write; a change set within 100 ms.

`--before DIR` measures a second copy of the package too (e.g. a checkout of main, /work/main), in
the same run, each leg in a process of its own importing its own `companion`; a case that takes
longer than `--cap` seconds is stopped and shown as "> cap" (the before copy: one run by default).
Prints a table and writes
bench/results/writes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRITE_LINES = 20_000
CHANGE_SET_LINES = 60_000
SPREAD_EDITS = 100


def source_lines(count: int, seed: int = 36) -> list[str]:
    """Source-like lines: 15 % blank, 15 % a lone `}`, the rest distinct statements."""
    rnd = random.Random(seed)
    lines: list[str] = []
    for n in range(count):
        r = rnd.random()
        lines.append("" if r < 0.15 else "}" if r < 0.30 else f"    value_{n} = compute(value_{n - 1}, {n % 97})")
    return lines


def edited(lines: list[str], edits: int) -> list[str]:
    """`lines` with `edits` lines changed, spread evenly (one edit: the middle line)."""
    out = list(lines)
    step = len(lines) // edits
    for n in range(edits):
        at = step // 2 + n * step
        out[at] = out[at] + "  # edited"
    return out


def joined(lines: list[str], newline: str) -> str:
    """The lines with `newline` after each; "mixed": CRLF, but every 1000th line ends in LF alone."""
    if newline == "mixed":
        return "".join(line + ("\n" if n % 1000 == 999 else "\r\n") for n, line in enumerate(lines))
    return "".join(line + newline for line in lines)


# -- one leg: runs inside a process whose sys.path starts with the measured copy --


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


async def _write_cases(url: str, token: str, folder: str, runs: int, label: str, case: str) -> dict[str, float]:
    from tests.mcp_client import connect, text_of

    base = source_lines(WRITE_LINES)
    found: dict[str, float] = {}
    async with connect(url, token, name="bench") as client:

        async def write(path: str, text: str) -> float:
            start = time.perf_counter()
            result = await client.session.call_tool("write_file", {"path": path, "content": text})
            took = time.perf_counter() - start
            if "Accepted" not in text_of(result):
                raise RuntimeError(text_of(result))
            return took

        await write(os.path.join(folder, "warm-up.txt"), "warm up\n")  # the first call's set-up, untimed
        newline = NEWLINES[label]
        original = joined(base, newline)
        cases = {"new": None, "one edit": edited(base, 1), f"{SPREAD_EDITS} edits": edited(base, SPREAD_EDITS)}
        lines = cases[case]
        samples = []
        for _ in range(runs):
            path = os.path.join(folder, "big.c")
            if os.path.exists(path):
                os.remove(path)
            if lines is not None:
                with open(path, "w", encoding="utf-8", newline="") as handle:
                    handle.write(original)
            samples.append(await write(path, original if lines is None else joined(lines, newline)))
        found[f"write_file {label}, {case}"] = ms(statistics.median(samples))
    return found


def leg_writes(runs: int, label: str, case: str) -> dict[str, float]:
    from companion.headless.editor import HeadlessEditor
    from companion.mcp_tools.factory import tool_factory
    from companion.mcp_tools.settings import WorkspaceToolSettings
    from companion.runtime import Runtime

    base = tempfile.mkdtemp(prefix="bench-writes-")
    folder = os.path.realpath(os.path.join(base, "tree"))
    os.makedirs(folder)
    runtime = Runtime(discovery_directory=os.path.join(base, "discovery"))
    try:
        handle = runtime.open_window(
            HeadlessEditor("accept"), [folder], tool_factory=tool_factory(WorkspaceToolSettings())
        )
        handle.ready.result(30)
        return asyncio.run(_write_cases(handle.url, handle.token, folder, runs, label, case))
    finally:
        runtime.stop()
        shutil.rmtree(base, ignore_errors=True)


def leg_change_set(kind: str, runs: int) -> dict[str, float]:
    from companion.core.history.turns import Turns

    if kind == "source":
        before = source_lines(CHANGE_SET_LINES)
        after = edited(before, SPREAD_EDITS)
        label = f"source-like, {SPREAD_EDITS} edits"
    else:
        before = ["}"] * CHANGE_SET_LINES
        after = edited(before, 1)
        label = "equal lines, one edit"
    base = tempfile.mkdtemp(prefix="bench-change-set-")
    tree = os.path.join(base, "tree")
    os.makedirs(tree)
    path = os.path.join(tree, "big.c")
    try:
        with open(path, "w", newline="") as handle:
            handle.write(joined(before, "\n"))
        turns = Turns(os.path.join(base, "cache"), [tree], watch=True)
        try:
            turns.begin()
            with open(path, "w", newline="") as handle:
                handle.write(joined(after, "\n"))
            start = time.perf_counter()
            turns.end("bench", {})
            ended = time.perf_counter() - start
            samples = []
            for _ in range(runs):
                start = time.perf_counter()
                found = turns.change_set(counted=True)
                samples.append(time.perf_counter() - start)
            counted = statistics.median(samples)
        finally:
            turns.close()
        if [(c.added, c.removed) for c in found] != [(_changed(before, after),) * 2]:
            raise RuntimeError(f"unexpected change set: {found}")
        return {f"turn end, {label}": ms(ended), f"change set, {label}": ms(counted)}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _changed(before: list[str], after: list[str]) -> int:
    return sum(a != b for a, b in zip(before, after, strict=True))


def run_leg(args: argparse.Namespace) -> None:
    sys.path.insert(0, args.code)
    if args.leg in CHANGE_SETS:
        found = leg_change_set(args.leg, args.runs)
    else:
        label, case = args.leg.split(" ", 1)
        found = leg_writes(args.runs, label, case)
    print(json.dumps(found))


# -- the parent: each leg of each copy in a process of its own --


NEWLINES = {"LF": "\n", "CRLF": "\r\n", "mixed": "mixed"}
CASES = ("new", "one edit", f"{SPREAD_EDITS} edits")
CHANGE_SETS = ("source", "equal")
LEGS = (*(f"{label} {case}" for label in NEWLINES for case in CASES), *CHANGE_SETS)


def _row(leg: str) -> str:
    """The table's row of a leg (its measurements' names)."""
    if leg in CHANGE_SETS:
        return "change set, " + ("source-like, 100 edits" if leg == "source" else "equal lines, one edit")
    label, case = leg.split(" ", 1)
    return f"write_file {label}, {case}"


def measure(code: str, runs: int, cap: float) -> dict[str, float | str]:
    found: dict[str, float | str] = {}
    for leg in LEGS:
        command = [sys.executable, os.path.abspath(__file__), "--leg", leg, "--code", code, "--runs", str(runs)]
        try:
            done = subprocess.run(command, cwd=code, capture_output=True, text=True, timeout=cap, check=True)
        except subprocess.TimeoutExpired:
            found[_row(leg)] = f"> {cap:g} s"
            continue
        except subprocess.CalledProcessError as exc:
            raise SystemExit(f"{code} {leg}: {exc.stderr}") from None
        found.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="another copy of the repository to measure beside this one")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before-runs", type=int, default=1, help="runs of the --before copy (slow there)")
    parser.add_argument("--cap", type=float, default=20.0, help="seconds a leg may take before it is stopped")
    parser.add_argument("--leg", choices=LEGS, help=argparse.SUPPRESS)
    parser.add_argument("--code", default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.leg:
        run_leg(args)
        return
    columns: dict[str, dict[str, float | str]] = {}
    if args.before:
        columns["before"] = measure(os.path.abspath(args.before), args.before_runs, args.cap)
    columns["after" if args.before else "this copy"] = measure(ROOT, args.runs, args.cap)
    names = list(dict.fromkeys(name for column in columns.values() for name in column))
    print("| measurement (median ms) | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name in names:
        print(f"| {name} | " + " | ".join(str(column.get(name, "—")) for column in columns.values()) + " |")
    for title, column in columns.items():
        for newline in NEWLINES:
            new = column.get(f"write_file {newline}, new")
            for case in ("one edit", f"{SPREAD_EDITS} edits"):
                replace = column.get(f"write_file {newline}, {case}")
                if isinstance(new, float) and isinstance(replace, float):
                    print(f"{title}: {newline} {case} = {replace / new:.1f}x the new write (goal <= 3x)")
    results: dict[str, Any] = {"lines_written": WRITE_LINES, "change_set_lines": CHANGE_SET_LINES, **columns}
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "writes.json"), "w") as out:
        json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
