"""A stand-in `gemini` executable for ask_gemini tests (the real CLI needs a model behind it).

`install(folder)` writes `gemini` (POSIX, on PATH) and returns the command that runs it on any
platform. The stand-in appends what it was run with to `$STANDIN_LOG` (JSON lines) and acts on the
prompt: "fail" -> a JSON error on stderr and exit code 1, "crash" -> plain text on stderr and exit
code 3, "hang" -> starts a child, records both PIDs in `$STANDIN_PIDS` and sleeps; otherwise it
answers `{"response": "echo: <prompt>"}` like `gemini -o json` does.
"""

from __future__ import annotations

import os
import stat
import sys

SCRIPT = r"""
import json, os, subprocess, sys, time
argv = sys.argv[1:]
prompt = next((a[len("--prompt="):] for a in argv if a.startswith("--prompt=")), "")
log = os.environ.get("STANDIN_LOG")
if log:
    with open(log, "a") as f:
        f.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")
if prompt == "fail":
    sys.stderr.write("Loaded cached credentials.\n")
    error = {"type": "Error", "message": "Quota exceeded for model gemini-x", "code": 1}
    sys.stderr.write(json.dumps({"error": error}, indent=2) + "\n")
    sys.exit(1)
if prompt == "crash":
    sys.stderr.write("node: something broke badly\n")
    sys.exit(3)
if prompt == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["STANDIN_PIDS"], "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(600)
print(json.dumps({"session_id": "s1", "response": "echo: " + prompt, "stats": {"models": {}}}, indent=2))
"""


def install(folder: str) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "gemini_standin.py")
    with open(script, "w") as handle:
        handle.write(SCRIPT)
    if sys.platform != "win32":
        launcher = os.path.join(folder, "gemini")
        with open(launcher, "w") as handle:
            handle.write(f"#!/bin/sh\nexec '{sys.executable}' '{script}' \"$@\"\n")
        os.chmod(launcher, os.stat(launcher).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return [sys.executable, script]
