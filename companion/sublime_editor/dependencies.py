"""Are the libraries the companion imports installed, at versions that work together?

Package Control installs them into `Data/Lib/python314` from `dependencies.json`, by name, without
versions. When one is missing or too old the package must not fail at import: it says so once (status
bar, plus the console with the names and the fix) and stays inactive; the Status and Troubleshooting
view lists them too (`doctor`). Only metadata is read here, on the loop thread (see `lifecycle`):
the plugin host never waits for the disk at load time. psutil is optional (PID checks fall back to the
standard library).
"""

from __future__ import annotations

from dataclasses import dataclass

import sublime

from .. import doctor


@dataclass
class Check:
    """What the loop thread found: the problems, and the versions installed at that moment."""

    missing: list[str]
    wrong: list[str]
    versions: dict[str, str | None]
    restart_needed: bool = False  # a wrong library's older version is already imported
    installed: frozenset[str] = frozenset()  # doctor.installed_distributions() at that moment

    @property
    def ok(self) -> bool:
        return not self.missing and not self.wrong


def check() -> Check:
    """See `doctor.library_issues`; wrong includes installed libraries that cannot be imported
    (`doctor.broken_libraries`: pywin32 on Windows). Runs off the main thread (disk reads)."""
    installed = doctor.installed_distributions()
    versions = doctor.library_versions()
    missing, wrong = doctor.library_issues(versions)
    wrong += doctor.broken_libraries()
    outdated = [entry.split(" ", 1)[0] for entry in doctor.split_wrong(wrong)[0]]
    restart = bool(doctor.loaded_libraries(outdated))
    return Check(missing, wrong, versions, restart_needed=restart, installed=installed)


def explanation(found: Check) -> str:
    lines = ["Gemini Companion: the companion cannot start because libraries it needs are not usable."]
    if found.missing:
        lines.append(f"  Missing: {', '.join(found.missing)}")
    outdated, broken = doctor.split_wrong(found.wrong)
    if outdated:
        lines.append(f"  Wrong version: {', '.join(outdated)}")
    if broken:
        lines.append(f"  Cannot be loaded: {', '.join(broken)}")
    then = (
        "then restart Sublime Text (an older version of one of them is already loaded)."
        if found.restart_needed
        else "the companion starts by itself once they are installed (no restart needed)."
    )
    lines += [
        f"  Fix: Command Palette > “Package Control: Satisfy Libraries”; {then}",
        "  If Package Control reports a library as not available, add the package's repository first:",
        f"  Command Palette > “Package Control: Add Repository” > {doctor.REPOSITORY_URL}",
        "  (the default channel does not carry mcp and some of its libraries), then Satisfy Libraries again.",
        "  “Gemini Companion: Status and Troubleshooting” shows this list too.",
    ]
    return "\n".join(lines)


def report(found: Check) -> None:
    """One status message, and the console explanation with the names and the fix."""
    names = found.missing + [w.split(" ", 1)[0] for w in found.wrong]
    then = "then restart Sublime Text" if found.restart_needed else "it starts by itself then"
    sublime.status_message(
        f"Gemini Companion: libraries missing or outdated ({', '.join(names)}); "
        f"run “Package Control: Satisfy Libraries”, {then} (details in the console)"
    )
    print(explanation(found))


def report_upgraded(upgraded: list[str]) -> None:
    sublime.status_message("Gemini Companion: libraries changed while Sublime Text runs; restart Sublime Text")
    print(
        "Gemini Companion: Package Control changed libraries while Sublime Text was running:\n  "
        + "\n  ".join(upgraded)
        + "\n  The old versions are still loaded, so the companion stopped rather than mix old and new code "
        "(a module imported later would come from the new version). Restart Sublime Text."
    )
