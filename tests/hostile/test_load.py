"""Load correctness (no timing): several client processes hammer one window server while its context changes.

Runs bench/bench_load.py small: 5 SDK sessions in 2 client processes x 100 tool calls each
(openDiff accepted, openDiff held, closeDiff, tools/list) while the window's active file moves
through 40 numbered files. The full-size run (20 x 1000) is the benchmark itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_concurrent_sessions_lose_nothing_and_see_contexts_in_order() -> None:
    argv = [
        sys.executable,
        os.path.join(ROOT, "bench", "bench_load.py"),
        "--sessions",
        "5",
        "--calls",
        "100",
        "--burst",
        "40",
        "--procs",
        "2",
        "--rounds",
        "1",
        "--json-only",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.stdout.strip(), done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    (result,) = summary["rounds"]
    assert result["calls"] >= 5 * 100
    assert result["errors"] == 0, result["first_errors"]
    # Every session saw the final context, and never an older one after a newer one.
    assert result["contexts_final_missing"] == 0
    assert result["contexts_reordered"] == 0
    # Every accept of every session reached every session, with its content, in the order caused.
    assert result["accepts_received"] == 5 * 5 * 25
    assert result["accepts_missing"] == 0 and result["accepts_reordered"] == 0
    assert result["bad_notifications"] == []
    # Afterwards the server holds no session and no review.
    assert result["server_quiet_after"]
    assert summary["ok"] and done.returncode == 0, done.stderr[-3000:]
