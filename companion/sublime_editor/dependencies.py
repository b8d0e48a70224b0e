"""Are the libraries the companion imports installed, at versions that work together?

Package Control installs them into `Data/Lib/python314` from `dependencies.json`, by name, without
versions. When one is missing or too old the package must not fail at import: it says so once (status
bar, plus the console with the names and the fix) and stays inactive; the Status and Troubleshooting
view lists them too (`doctor`). Only metadata is read here, on the loop thread (see `lifecycle`):
the plugin host never waits for the disk at load time. psutil is optional (PID checks fall back to the
standard library).
"""

from __future__ import annotations

import sublime

from .. import doctor


def check() -> tuple[list[str], list[str]]:
    """(missing, wrong): see `doctor.library_issues`; wrong includes installed libraries that cannot
    be imported (`doctor.broken_libraries`: pywin32 on Windows). Runs on the loop thread."""
    missing, wrong = doctor.library_issues(doctor.library_versions())
    return missing, wrong + doctor.broken_libraries()


def explanation(missing: list[str], wrong: list[str]) -> str:
    lines = ["Gemini Companion: the companion cannot start because libraries it needs are not usable."]
    if missing:
        lines.append(f"  Missing: {', '.join(missing)}")
    outdated, broken = doctor.split_wrong(wrong)
    if outdated:
        lines.append(f"  Wrong version: {', '.join(outdated)}")
    if broken:
        lines.append(f"  Cannot be loaded: {', '.join(broken)}")
    lines += [
        "  Fix: Command Palette > “Package Control: Satisfy Libraries”, then restart Sublime Text.",
        "  If Package Control reports a library as not available, add the package's repository first:",
        f"  Command Palette > “Package Control: Add Repository” > {doctor.REPOSITORY_URL}",
        "  (the default channel does not carry mcp and some of its libraries), then Satisfy Libraries again.",
        "  “Gemini Companion: Status and Troubleshooting” shows this list too.",
    ]
    return "\n".join(lines)


def report(missing: list[str], wrong: list[str]) -> None:
    """One status message, and the console explanation with the names and the fix."""
    names = missing + [w.split(" ", 1)[0] for w in wrong]
    sublime.status_message(
        f"Gemini Companion: libraries missing or outdated ({', '.join(names)}); see the console "
        "(“Package Control: Satisfy Libraries” fixes it)"
    )
    print(explanation(missing, wrong))
