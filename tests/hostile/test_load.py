"""Load correctness (no timing): several client processes hammer one window server while its context changes.

Runs bench/bench_load.py small: 5 SDK sessions in 2 client processes x 100 tool calls each
(openDiff accepted, openDiff held, closeDiff, tools/list) while the window's active file moves
through 40 numbered files, twice. The full-size run (20 x 1000) is the benchmark itself.
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
        "2",
        "--flat-mib",
        "1",  # measured: +0.04 to +0.07 MiB per round of this size
        "--json-only",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.stdout.strip(), done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(summary["rounds"]) == 2
    result = summary["rounds"][-1]
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
    # A second round as big as the first leaves the server's memory where the first left it.
    assert summary["memory_flat"], summary["rss_growth_after_first_round_mib"]
    assert summary["ok"] and done.returncode == 0, done.stderr[-3000:]
