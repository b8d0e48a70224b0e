"""The Package Control submission, generated from `repository.json` (which `build_repository.py`
builds from `tools/libraries.py`), so the channels get exactly the pins our repository serves.

    python3 tools/channel_submission.py           # rewrite packaging/channel/*.json
    python3 tools/channel_submission.py --check   # exit 1 if they differ from what would be written

Two channels take part (their formats, read from their sources, are in packaging/README.md):
- the package channel, wbond/package_control_channel: our package's entry for `repository/g.json`
  (schema 3.0.0 keys: name, details, labels, releases with `tags`, never a url or version);
- the library channel, packagecontrol/channel: one entry per library it lacks
  (`new-libraries.json`) and a replacement for each entry of it we override
  (`changed-libraries.json`), as schema 4.0.0 entries whose releases name a fixed PyPI release
  (`base`: https://pypi.org/project/<name>/<version>) and the exact wheel (`asset`) per platform.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import libraries as L

OUT = os.path.join(L.ROOT, "packaging", "channel")
PACKAGE_ENTRY = "package-entry.json"
NEW_LIBRARIES = "new-libraries.json"
CHANGED_LIBRARIES = "changed-libraries.json"

# The keys the package channel's entries use (the channel fills in description, author and
# readme from the `details` repository).
PACKAGE_KEYS = ("name", "details", "labels", "releases")
LIBRARY_KEYS = ("name", "description", "author", "issues")


def package_entry(repository: dict[str, Any]) -> dict[str, Any]:
    (package,) = repository["packages"]
    return {key: package[key] for key in PACKAGE_KEYS}


def library_entry(library: dict[str, Any]) -> dict[str, Any]:
    entry = {key: library[key] for key in LIBRARY_KEYS}
    entry["releases"] = [channel_release(library["name"], release) for release in library["releases"]]
    return entry


def channel_release(name: str, release: dict[str, Any]) -> dict[str, Any]:
    """Our release (a file URL with its sha256) as the library channel's crawler takes it: the fixed
    PyPI release and the exact file name, which the crawler resolves to the same URL and sha256."""
    return {
        "base": f"https://pypi.org/project/{name}/{release['version']}",
        "asset": release["url"].rsplit("/", 1)[1],
        "platforms": release["platforms"],
        "python_versions": release["python_versions"],
    }


def library_files(repository: dict[str, Any]) -> dict[str, dict[str, Any]]:
    libraries = sorted(repository["libraries"], key=lambda lib: lib["name"].lower())
    new = [library_entry(lib) for lib in libraries if L.canonical(lib["name"]) not in L.OVERRIDES]
    changed = [library_entry(lib) for lib in libraries if L.canonical(lib["name"]) in L.OVERRIDES]
    return {
        NEW_LIBRARIES: _library_repository(new),
        CHANGED_LIBRARIES: _library_repository(changed),
    }


def _library_repository(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "$schema": "sublime://packagecontrol.io/schemas/repository",
        "schema_version": "4.0.0",
        "libraries": entries,
    }


def rendered(repository: dict[str, Any]) -> dict[str, str]:
    """File name -> text, as both channels format their files (tab indentation)."""
    files: dict[str, Any] = {PACKAGE_ENTRY: package_entry(repository), **library_files(repository)}
    return {name: json.dumps(data, indent="\t", ensure_ascii=False) + "\n" for name, data in files.items()}


# -- the channels' rules (sources and file references: packaging/README.md) --

# st-schema-reviewer-action, action.py: package_key_types_map, pck_release_key_types_map.
PACKAGE_KEY_TYPES: dict[str, Any] = {
    "name": str,
    "details": str,
    "description": str,
    "releases": list,
    "homepage": str,
    "author": (str, list),
    "readme": str,
    "issues": str,
    "donate": (str, type(None)),
    "buy": str,
    "previous_names": list,
    "labels": list,
}
PACKAGE_RELEASE_KEY_TYPES: dict[str, Any] = {
    "base": str,
    "tags": (bool, str),
    "branch": str,
    "sublime_text": str,
    "platforms": (list, str),
    "dependencies": (list, str),
    "version": str,
    "date": str,
    "url": str,
}
GITHUB_DETAILS = re.compile(r"^https://github\.com/[^/#?]+/[^/#?]+(?<!\.git)(/tree/[^#?]*[^/#?]|/)?$")
SUBLIME_TEXT_SELECTOR = re.compile(r"^(\*|<=?\d{4}|>=?\d{4}|\d{4} - \d{4})$")
PLATFORM = re.compile(r"^(\*|(osx|linux|windows)(-(x(32|64)|arm64))?)$")
BAD_FOLDER_NAME = re.compile(r'[/?<>\\:*|"\x00-\x19]')
# Sublime Text's own packages: no package may take their names.
DEFAULT_PACKAGES = frozenset(
    (
        *("ActionScript", "AppleScript", "ASP", "Batch File", "Binary", "C#", "C++", "Clojure"),
        *("Color Scheme - Default", "CSS", "D", "Default", "Diff", "Erlang", "Git Formats", "Go"),
        *("Graphviz", "Groovy", "Haskell", "HTML", "Java", "JavaScript", "Language - English", "LaTeX"),
        *("Lisp", "Lua", "Makefile", "Markdown", "Matlab", "Objective-C", "OCaml", "Pascal", "Perl"),
        *("PHP", "Python", "R", "Rails", "Regular Expressions", "RestructuredText", "Ruby", "Rust"),
        *("Scala", "ShellScript", "SQL", "TCL", "Text", "Textile", "Theme - Default", "Vintage", "XML", "YAML"),
    )
)

# packagecontrol/channel: the keys its library entries and their releases use, and how its crawler
# reads a PyPI release (PyPiClient.name_and_version, _make_download_info).
LIBRARY_ENTRY_KEYS = {"name", "description", "author", "issues", "releases"}
LIBRARY_RELEASE_KEYS = {"base", "asset", "platforms", "python_versions", "tags", "sublime_text"}
PYPI_BASE = re.compile(r"^https?://pypi\.org/project/([^/#?]+)(?:/([^/#?]+?)|/?)$")


def asset_regex(pattern: str, version: str) -> re.Pattern[str]:
    """The crawler's reading of an `asset` glob: `${version}` filled in, `.` literal, `?` any one
    character, `*` anything; matched from the start of a wheel's file name."""
    pattern = pattern.replace("${version}", version).replace(".", r"\.").replace("?", ".").replace("*", ".*?")
    return re.compile(pattern)


def package_entry_problems(entry: dict[str, Any]) -> list[str]:
    problems = _typed(entry, PACKAGE_KEY_TYPES, "package")
    name = entry.get("name", "")
    if not GITHUB_DETAILS.match(entry.get("details", "")):
        problems.append(f"details {entry.get('details')!r} is not a GitHub repository URL")
    labels = entry.get("labels", [])
    if any("," in label for label in labels) or len(set(labels)) != len(labels):
        problems.append("labels: one label per string, none repeated")
    if BAD_FOLDER_NAME.search(name) or name.startswith(".") or name in DEFAULT_PACKAGES:
        problems.append(f"name {name!r} is not a valid, free folder name")
    if "sublime" in name.lower():
        problems.append(f"name {name!r}: the channel's style guide keeps 'Sublime' out of names")
    if name[:1].lower() != "g":
        problems.append(f"name {name!r} does not belong in repository/g.json")
    for release in entry.get("releases", []):
        problems += _typed(release, PACKAGE_RELEASE_KEY_TYPES, "release")
        if ("tags" in release) == ("branch" in release):
            problems.append("a release needs exactly one of tags and branch")
        for key in ("url", "version", "date"):
            if key in release:
                problems.append(f"release key {key!r} is not allowed in the main repository")
        if not SUBLIME_TEXT_SELECTOR.match(str(release.get("sublime_text", ""))):
            problems.append(f"sublime_text {release.get('sublime_text')!r} is not a valid selector")
    if not entry.get("releases"):
        problems.append("no releases")
    return problems


def library_problems(entries: list[dict[str, Any]], repository: dict[str, Any], pins: dict[str, str]) -> list[str]:
    """The library channel's rules, and that each release resolves to the wheel our repository.json
    serves for the same platforms, at the version `pins` gives (`L.version_for`)."""
    problems: list[str] = []
    names = [entry.get("name", "") for entry in entries]
    if names != sorted(names, key=str.lower) or len({n.lower() for n in names}) != len(names):
        problems.append("libraries must be sorted by name and unique")
    ours = {lib["name"]: lib for lib in repository["libraries"]}
    for entry in entries:
        name = entry.get("name", "")
        if set(entry) != LIBRARY_ENTRY_KEYS:
            problems.append(f"{name}: keys {sorted(entry)} are not {sorted(LIBRARY_ENTRY_KEYS)}")
        if not str(entry.get("issues", "")).startswith(("https://", "http://")):
            problems.append(f"{name}: issues is not a URL")
        for release in entry.get("releases", []):
            problems += [f"{name}: {p}" for p in _library_release_problems(name, release, ours.get(name), pins)]
    return problems


def _library_release_problems(
    name: str, release: dict[str, Any], ours: dict[str, Any] | None, pins: dict[str, str]
) -> list[str]:
    problems = [f"release key {key!r} is unknown" for key in release if key not in LIBRARY_RELEASE_KEYS]
    base = PYPI_BASE.match(str(release.get("base", "")))
    if base is None or base.group(1) != name or not base.group(2):
        return [*problems, f"base {release.get('base')!r} is not https://pypi.org/project/{name}/<version>"]
    version, asset = base.group(2), str(release.get("asset", ""))
    platforms = release.get("platforms", [])
    if not platforms or not all(PLATFORM.match(p) for p in platforms) or len(set(platforms)) != len(platforms):
        problems.append(f"platforms {platforms!r} are not valid")
    if release.get("python_versions") != [L.PYTHON]:
        problems.append(f"python_versions {release.get('python_versions')!r} is not [{L.PYTHON!r}]")
    if "*" in asset or "?" in asset:
        problems.append(f"asset {asset!r} is a pattern; name the exact wheel")
    for platform in platforms:
        wanted = L.version_for(name, platform, pins)
        if version != wanted:
            problems.append(f"{platform}: version {version}, but our pin is {wanted}")
        served = _served_file(ours, platform)
        if served is None or not asset_regex(asset, version).match(served):
            problems.append(f"{platform}: asset {asset!r} does not select {served!r}, the wheel repository.json serves")
    return problems


def _served_file(library: dict[str, Any] | None, platform: str) -> str | None:
    for release in (library or {}).get("releases", []):
        if platform in release["platforms"]:
            return release["url"].rsplit("/", 1)[1]
    return None


def _typed(data: dict[str, Any], types: dict[str, Any], what: str) -> list[str]:
    problems = []
    for key, value in data.items():
        if key not in types:
            problems.append(f"{what}: unknown key {key!r}")
        elif not isinstance(value, types[key]):
            problems.append(f"{what}: {key} has the wrong type")
    return problems


def tab_indented(text: str) -> bool:
    return all(re.match(r"^\t*\S", line) for line in text.splitlines())


def check(repository: dict[str, Any]) -> list[str]:
    """Every problem with the files on disk: stale, or against the channels' rules."""
    files = rendered(repository)
    problems = [
        f"packaging/channel/{name} is out of date: run python3 tools/channel_submission.py"
        for name, text in files.items()
        if _read(os.path.join(OUT, name)) != text
    ]
    problems += [f"{name}: not indented with tabs" for name, text in files.items() if not tab_indented(text)]
    problems += package_entry_problems(package_entry(repository))
    pins = L.runtime_pins()
    for data in library_files(repository).values():
        problems += library_problems(data["libraries"], repository, pins)
    return problems


def main(argv: list[str]) -> int:
    repository = L.read_json(L.REPOSITORY_JSON)
    files = rendered(repository)
    if argv == ["--check"]:
        problems = check(repository)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(OUT, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        print(f"wrote packaging/channel/{name}")
    return 0


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
