"""One warning per period for a kind of hostile input, with a count.

Kept apart from `connections.py` so that modules loaded when the package starts (`runtime.py`)
never import uvicorn: a Sublime whose libraries are missing must still load the package and say
which ones to install.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("gemini_companion")

REPORT_SECONDS = 30.0  # hostile input (and failed accepts) is reported once per period, with a count


class RateLimitedWarning:
    """One warning per REPORT_SECONDS for a kind of hostile input, saying how many there were:
    a local program can send thousands of requests a second, and a line (or a ~3 KB traceback)
    for each fills the log."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.count = 0
        self.last_report: float | None = None

    def __call__(self, *args: object) -> None:
        self.count += 1
        now = time.monotonic()
        if self.last_report is not None and now - self.last_report < REPORT_SECONDS:
            return
        log.warning(self.message + " (%d times since the last report)", *args, self.count)
        self.count, self.last_report = 0, now
