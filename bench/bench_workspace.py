"""Workspace benchmark: list_files over 100 000 files (target: at most 1 s).

    .venv/bin/python bench/bench_workspace.py [--files N] [--runs R]

Builds a tree of N files (1 000 folders of 100 files, a git repository with a .gitignore that
ignores a tenth of the files) in a temporary folder, then times `list_files` with Sublime's
default exclude patterns: the pure listing (gitignore off), with .gitignore, and through the MCP
tool on a window server (SDK client over loopback, as another agent calls it). Prints a table and
writes bench/results/workspace.json. One run of medians on this machine; a cold file-system cache
is not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from companion.core.files.listing import ListOptions, list_files  # noqa: E402
from companion.core.files.paths import PathPolicy  # noqa: E402
from companion.headless.editor import HeadlessEditor  # noqa: E402
from companion.mcp_tools.factory import tool_factory  # noqa: E402
from companion.mcp_tools.settings import WorkspaceToolSettings  # noqa: E402
from companion.runtime import Runtime  # noqa: E402

FOLDER_EXCLUDES = [".svn", ".git", ".hg", "CVS", ".Trash", ".Trash-*"]
FILE_EXCLUDES = ["*.pyc", "*.pyo", "*.exe", "*.dll", "*.obj", "*.o", "*.a", "*.lib", "*.so", "*.dylib", ".DS_Store"]


def build_tree(root: str, files: int) -> None:
    os.makedirs(os.path.join(root, ".git"))
    with open(os.path.join(root, ".gitignore"), "w") as handle:
        handle.write("*.log\nbuild/\n")
    per_folder = 100
    for i in range(max(1, files // per_folder)):
        folder = os.path.join(root, f"pkg{i // 50:02}", f"mod{i:04}")
        os.makedirs(folder)
        for j in range(per_folder):
            name = f"file{j:03}.log" if j % 10 == 0 else f"file{j:03}.py"
            with open(os.path.join(folder, name), "w"):
                pass


def time_listing(root: str, runs: int, gitignore: bool, limit: int) -> dict[str, float | int | bool]:
    policy = PathPolicy([root])
    options = ListOptions(
        limit=limit, folder_excludes=FOLDER_EXCLUDES, file_excludes=FILE_EXCLUDES, use_gitignore=gitignore
    )
    samples, count, truncated = [], 0, False
    for _ in range(runs):
        start = time.perf_counter()
        listing = list_files(policy, options)
        samples.append(time.perf_counter() - start)
        count, truncated = len(listing.entries), listing.truncated
    return {"median_s": statistics.median(samples), "min_s": min(samples), "entries": count, "truncated": truncated}


async def time_tool(url: str, token: str, runs: int) -> dict[str, float | int]:
    from tests.mcp_client import connect, text_of

    samples, lines = [], 0
    async with connect(url, token, name="bench") as client:
        for _ in range(runs):
            start = time.perf_counter()
            result = await client.session.call_tool("list_files", {"recursive": True})
            samples.append(time.perf_counter() - start)
            lines = len(text_of(result).splitlines())
    return {"median_s": statistics.median(samples), "min_s": min(samples), "lines": lines}


TARGET_S = 1.0  # issue: 100 000 files listed in at most 1 s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="bench-workspace-")
    root = os.path.realpath(os.path.join(base, "tree"))
    try:
        start = time.perf_counter()
        build_tree(root, args.files)
        print(f"built {args.files} files in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        limit = args.files + 1000
        results: dict[str, object] = {"files": args.files}
        results["list_files (no gitignore)"] = time_listing(root, args.runs, False, limit)
        results["list_files (gitignore)"] = time_listing(root, args.runs, True, limit)
        results["list_files (default limit 10000)"] = time_listing(root, args.runs, True, 10_000)
        runtime = Runtime(discovery_directory=os.path.join(base, "discovery"))
        try:
            settings = WorkspaceToolSettings(
                list_limit=limit,
                folder_exclude_patterns=tuple(FOLDER_EXCLUDES),
                file_exclude_patterns=tuple(FILE_EXCLUDES),
            )
            handle = runtime.open_window(HeadlessEditor("reject"), [root], tool_factory=tool_factory(settings))
            handle.ready.result(30)
            results["list_files tool over MCP (gitignore)"] = asyncio.run(
                time_tool(handle.url, handle.token, args.runs)
            )
        finally:
            runtime.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("| measurement | median | min | entries |")
    print("|---|---|---|---|")
    for name, value in results.items():
        if isinstance(value, dict):
            entries = value.get("entries", value.get("lines"))
            print(f"| {name} | {value['median_s']:.3f} s | {value['min_s']:.3f} s | {entries} |")
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "workspace.json"), "w") as out:
        json.dump(results, out, indent=2)
    slow = [name for name, value in results.items() if isinstance(value, dict) and value["median_s"] > TARGET_S]
    if slow:
        print(f"over the {TARGET_S:g} s target: {', '.join(slow)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
