#!/usr/bin/env python3
"""Write `repository.json`: the package and the libraries it needs, pinned to exact PyPI wheels.

    python3 tools/build_repository.py          # rewrite repository.json from PyPI's JSON API
    python3 tools/check_repository.py          # prove it (run by the test suite too)

Every library of `dependencies.json` that the default channel lacks (or registers wrongly, see
`libraries.OVERRIDES`) gets, for each platform whose `dependencies.json` entry names it (all five,
but pywin32 on Windows only) and Python 3.14, the wheel pip would pick
for our pinned version (requirements/runtime.txt), with its files.pythonhosted.org address and sha256.
Needs `packaging` (in the dev environment: `.venv/bin/python tools/build_repository.py`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from companion import __version__
from companion.core.troubleshooting import PROJECT_URL
from tools import libraries as L

PACKAGE_DESCRIPTION = (
    "Gemini CLI companion: Gemini CLI sees your open files and selection, and its proposed changes open "
    "as diffs you edit, accept or reject; other agents get workspace tools through the same server."
)


def library_entry(name: str, pins: dict[str, str]) -> dict[str, Any]:
    with L.http(L.PYPI_JSON.format(name=name)) as response:
        data = json.load(response)
    info, releases = data["info"], data["releases"]
    by_file: dict[str, dict[str, Any]] = {}
    for platform in L.platforms_of(name):
        version = L.version_for(name, platform, pins)
        files = releases.get(version)
        if not files:
            raise SystemExit(f"{name} {version} is not on PyPI")
        entry = L.select_wheel(files, platform)
        if entry is None:
            raise SystemExit(f"{name} {version} has no wheel for {platform} on Python {L.PYTHON}")
        release = by_file.setdefault(
            entry["filename"],
            {
                "platforms": [],
                "python_versions": [L.PYTHON],
                "version": version,
                "url": L.file_url(entry),
                "sha256": entry["digests"]["sha256"],
                "date": entry["upload_time"].replace("T", " ")[:19],
            },
        )
        release["platforms"].append(platform)
    urls = info.get("project_urls") or {}
    issues = next(
        (urls[k] for k in urls if k.lower() in ("issues", "issue tracker", "bug tracker", "tracker", "bugs")),
        urls.get("Source")
        or urls.get("Repository")
        or urls.get("Homepage")
        or info.get("home_page")
        or f"https://pypi.org/project/{name}/",
    )
    return {
        "name": name,
        "description": (info.get("summary") or name).strip(),
        "author": _author(info),
        "issues": issues,
        "releases": sorted(by_file.values(), key=lambda r: L.PLATFORMS.index(r["platforms"][0])),
    }


def _author(info: dict[str, Any]) -> str:
    for key in ("author", "maintainer", "author_email", "maintainer_email"):
        value = (info.get(key) or "").strip()
        if value:
            return re.sub(r"\s*<[^>]*>", "", value).strip() or value
    return "unknown"


def build() -> dict[str, Any]:
    pins = L.runtime_pins()
    names = L.registered_libraries(L.all_dependencies())
    return {
        "$schema": "sublime://packagecontrol.io/schemas/repository",
        "schema_version": "4.0.0",
        "packages": [
            {
                "name": L.PACKAGE_NAME,
                "details": PROJECT_URL,
                "description": PACKAGE_DESCRIPTION,
                "labels": ["ai", "gemini", "mcp", "diff", "terminal"],
                "releases": [{"sublime_text": f">={L.MIN_BUILD}", "tags": True}],
            }
        ],
        "libraries": [library_entry(name, pins) for name in names],
    }


def main() -> int:
    L.check_reachable()
    data = build()
    with open(L.REPOSITORY_JSON, "w", encoding="utf-8", newline="\n") as handle:
        json.dump(data, handle, indent="\t")
        handle.write("\n")
    count = sum(len(lib["releases"]) for lib in data["libraries"])
    print(
        f"wrote {L.REPOSITORY_JSON}: {len(data['libraries'])} libraries, {count} wheel releases (package {__version__})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
