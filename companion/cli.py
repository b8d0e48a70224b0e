"""`python -m companion serve`: the companion without Sublime, on the current folder."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .headless import POLICIES, HeadlessEditor
from .runtime import Runtime


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion", description="Gemini Companion without Sublime.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve one workspace folder to Gemini CLI until Ctrl-C")
    serve.add_argument("--workspace", default=os.getcwd(), help="folder to serve (default: the current folder)")
    serve.add_argument("--diff-policy", choices=POLICIES, default="prompt", help="how diffs are answered")
    serve.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    serve.add_argument("--debug", action="store_true", help="verbose logging")
    args = parser.parse_args(argv)
    return run_serve(args.workspace, args.diff_policy, args.port, args.debug)


def run_serve(workspace: str, policy: str, port: int, debug: bool) -> int:
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(message)s")
    folder = os.path.realpath(workspace)
    if not os.path.isdir(folder):
        print(f"error: {workspace} is not a folder; pass --workspace with an existing folder.", file=sys.stderr)
        return 2
    runtime = Runtime()
    handle = runtime.open_window(HeadlessEditor(policy), [folder], port=port)
    try:
        handle.ready.result(30)
    except Exception as exc:
        runtime.stop()
        print(f"error: the companion could not start: {exc}", file=sys.stderr)
        return 1
    print(f"Gemini Companion listening on {handle.url}", flush=True)
    print(f"Discovery file: {handle.discovery_path}", flush=True)
    print(f"Workspace: {folder}  (diff policy: {policy})", flush=True)
    print("Run `gemini` in that folder (once: `/ide enable`). Press Ctrl-C to stop.", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    finally:
        runtime.stop()
        print("Stopped; the discovery file was removed.", flush=True)
    return 0
