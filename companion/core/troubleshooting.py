"""Where the README explains a failure: every message that names a fix can link to it (the doctor's
report, the tools' errors), so the report and the README explain each failure the same way."""

from __future__ import annotations

PROJECT_URL = "https://github.com/gemini-companion/sublime-gemini-companion"


def troubleshooting(entry: str) -> str:
    """The README's Troubleshooting entry `entry` (GitHub's anchor for its heading): the report and the
    README explain each failure the same way."""
    return f"{PROJECT_URL}#{entry}"
