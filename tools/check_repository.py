#!/usr/bin/env python3
"""Prove `repository.json`: every pinned wheel exists on PyPI for every platform, and the set fits.

    .venv/bin/python tools/check_repository.py        # exit 0 ok, 1 problems, 2 PyPI unreachable

Offline: schema 4.0.0; the package entry; exactly the libraries `dependencies.json` needs that the
default channel lacks or gets wrong; for each of them one release per platform that installs it
(linux-x64, linux-arm64, osx-arm64, osx-x64, windows-x64; pywin32 on windows-x64 only) and none
for the others, for Python 3.14, at our pinned version
(requirements/runtime.txt, equal to pyproject's), whose wheel tags a normal CPython 3.14 on that
platform accepts (never a free-threaded `cp314t` wheel).

Online (PyPI's JSON API and file host): each file is the one PyPI lists for that version, not
yanked, with the same sha256 and address, and is the wheel pip itself would pick; a HEAD request
answers 200 with the listed size; and the whole set is consistent: every `Requires-Dist` of every
library in the set (read from the pinned wheels' METADATA), for each platform, is met by the
version the set gives that platform (pydantic <-> pydantic-core, cryptography <-> cffi, ...).
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import sys
from email.parser import Parser
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from companion.core.troubleshooting import PROJECT_URL
from tools import libraries as L

OK, PROBLEMS, UNREACHABLE = 0, 1, 2


def pyproject_pins(python_version: str = "3.14") -> dict[str, str]:
    """canonical name -> version of the `name==version` entries of pyproject's [project] dependencies
    that a pip install on `python_version` takes (entries whose marker says otherwise are left out)."""
    with open(os.path.join(L.ROOT, "pyproject.toml"), encoding="utf-8") as handle:
        text = handle.read()
    block = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.S | re.M)
    pins = {}
    for name, version, marker in re.findall(
        r'"([A-Za-z0-9_.-]+)==([^";\s]+)\s*(?:;\s*([^"]*))?"', block.group(1) if block else ""
    ):
        if _python_marker_holds(marker, python_version):
            pins[L.canonical(name)] = version
    return pins


def _python_marker_holds(marker: str, python_version: str) -> bool:
    """`marker` is empty or one `python_version <op> 'X.Y'` clause (all pyproject uses)."""
    if not marker:
        return True
    found = re.fullmatch(r"python_version\s*(<|>=)\s*'(\d+)\.(\d+)'", marker.strip())
    if found is None:
        raise ValueError(f"pyproject.toml: unsupported marker {marker!r}")
    op, bound = found.group(1), (int(found.group(2)), int(found.group(3)))
    version = tuple(int(part) for part in python_version.split("."))
    return version < bound if op == "<" else version >= bound


# What Package Control 4 accepts (wbond/package_control b56cb2d; packaging/README.md has the details).
# providers/json_repository_provider.py, get_libraries, schema 4: a key it does not know in a library
# or in one of its releases raises ProviderException, which drops the whole repository.
PC_LIBRARY_KEYS = {"name", "description", "author", "homepage", "issues", "releases"}
PC_LIBRARY_RELEASE_KEYS = {
    *("base", "version", "sublime_text", "platforms", "python_versions"),
    *("branch", "tags", "asset", "url", "date", "sha256"),
}
# selectors.py: the platform keys it can match (`sublime.platform()[-sublime.arch()]` or `*`) and the
# Sublime Text version selectors is_compatible_version understands (anything else never matches).
PC_PLATFORM_KEY = re.compile(r"^(\*|(osx|linux|windows)(-(x32|x64|arm64))?)$")
PC_VERSION_SELECTOR = re.compile(r"^(\*|[<>]=?\d{4}|\d{4} - \d{4})$")


def package_control_problems(repo: dict[str, Any], dependencies: dict[str, Any]) -> list[str]:
    """What Package Control 4 would reject or skip in our repository.json and dependencies.json."""
    problems: list[str] = []
    for lib in repo.get("libraries", []):
        name = lib.get("name", "?")
        if unknown := set(lib) - PC_LIBRARY_KEYS:
            problems.append(f"{name}: Package Control rejects the repository for the keys {sorted(unknown)}")
        for release in lib.get("releases", []):
            if unknown := set(release) - PC_LIBRARY_RELEASE_KEYS:
                problems.append(f"{name}: Package Control rejects the repository for release keys {sorted(unknown)}")
            if "url" in release and not release.get("version"):
                problems.append(f"{name}: a release with a url needs a version, or Package Control rejects it")
            for key in ("date", "version", "sha256"):  # copied_release_keys: non-empty strings
                if key in release and not (isinstance(release[key], str) and release[key]):
                    problems.append(f"{name}: release {key} must be a non-empty string")
            if L.PYTHON not in release.get("python_versions", ["3.3"]):  # the default when absent
                problems.append(f"{name}: a release Package Control skips on Python {L.PYTHON}")
    names = [lib.get("name", "") for lib in repo.get("libraries", [])]
    if len({n.lower() for n in names}) != len(names):
        problems.append("library names must differ case-insensitively (Package Control keys them lower-cased)")
    for platform_key, by_version in dependencies.items():
        if platform_key.startswith("$"):
            continue  # "$schema": select_libraries never matches it against a platform
        if not PC_PLATFORM_KEY.match(platform_key):
            problems.append(f"dependencies.json: {platform_key!r} is no platform selector Package Control matches")
        for selector in by_version:
            if not PC_VERSION_SELECTOR.match(selector):
                problems.append(f"dependencies.json: {selector!r} is no Sublime Text selector Package Control reads")
    return problems


def check_offline(repo: dict[str, Any]) -> list[str]:
    problems: list[str] = package_control_problems(repo, L.read_json(L.DEPENDENCIES_JSON))
    pins = L.runtime_pins()
    deps = L.all_dependencies()
    for name, version in pyproject_pins().items():
        if pins.get(name) != version:
            problems.append(f"pyproject pins {name}=={version}, requirements/runtime.txt {pins.get(name)}")
    py310_pins = L.runtime_pins(os.path.join(L.ROOT, "requirements", "runtime-py310.txt"))
    for name, version in pyproject_pins("3.10").items():
        if py310_pins.get(name) != version:
            problems.append(
                f"pyproject pins {name}=={version} on Python 3.10, runtime-py310.txt {py310_pins.get(name)}"
            )
    for name in deps:
        if L.canonical(name) not in pins:
            problems.append(f"{name} (dependencies.json) has no pin in requirements/runtime.txt")
    if repo.get("schema_version") != "4.0.0":
        problems.append(f"schema_version is {repo.get('schema_version')!r}, not '4.0.0'")
    packages = repo.get("packages", [])
    if [p.get("name") for p in packages] != [L.PACKAGE_NAME]:
        problems.append(f"packages must register exactly {L.PACKAGE_NAME!r}, found {[p.get('name') for p in packages]}")
    else:
        package = packages[0]
        if package.get("details") != PROJECT_URL:
            problems.append(f"package details {package.get('details')!r} is not the project URL {PROJECT_URL!r}")
        builds = {r.get("sublime_text") for r in package.get("releases", [])}
        if builds != {f">={L.MIN_BUILD}"}:
            problems.append(f"package releases must all need Sublime Text >={L.MIN_BUILD}, found {builds}")
    libraries = {L.canonical(lib["name"]): lib for lib in repo.get("libraries", [])}
    wanted = {L.canonical(n) for n in L.registered_libraries(deps)}
    for name in sorted(wanted - set(libraries)):
        problems.append(f"{name}: needed (dependencies.json, not in the default channel) but not registered")
    for name in sorted(set(libraries) - wanted):
        problems.append(f"{name}: registered but not needed (not in dependencies.json, or left to the channel)")
    for name, lib in sorted(libraries.items()):
        for key in ("description", "author", "issues"):
            if not lib.get(key):
                problems.append(f"{name}: no {key!r}")
        problems += _check_releases(name, lib.get("releases", []), pins)
    return problems


def _check_releases(name: str, releases: list[dict[str, Any]], pins: dict[str, str]) -> list[str]:
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    problems: list[str] = []
    covered: dict[str, int] = {}
    for release in releases:
        url = release.get("url", "")
        filename = url.rsplit("/", 1)[-1]
        platforms = release.get("platforms", [])
        if release.get("python_versions") != [L.PYTHON]:
            problems.append(
                f"{name} {filename}: python_versions {release.get('python_versions')} is not [{L.PYTHON!r}]"
            )
        if not url.startswith(L.FILES_HOST):
            problems.append(f"{name}: {url!r} is not a files.pythonhosted.org address")
        if not re.fullmatch(r"[0-9a-f]{64}", release.get("sha256", "")):
            problems.append(f"{name} {filename}: no valid sha256")
        try:
            dist, version, _, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            problems.append(f"{name}: {filename!r} is not a wheel")
            continue
        if canonicalize_name(dist) != name or str(version) != release.get("version"):
            problems.append(f"{name}: {filename} does not match name {name} version {release.get('version')}")
        for platform in platforms:
            if platform not in L.PLATFORMS:
                problems.append(f"{name} {filename}: unknown platform {platform!r}")
                continue
            covered[platform] = covered.get(platform, 0) + 1
            want = L.version_for(name, platform, pins)
            if release.get("version") != want:
                problems.append(f"{name} on {platform}: version {release.get('version')}, our pin is {want}")
            if not set(tags) & set(L.compatible_tags(platform)):
                problems.append(f"{name} on {platform}: {filename} cannot be imported by CPython {L.PYTHON} there")
    for platform in L.PLATFORMS:
        need = 1 if platform in L.platforms_of(name) else 0
        if covered.get(platform, 0) != need:
            problems.append(f"{name}: {covered.get(platform, 0)} releases for {platform}, need exactly {need}")
    return problems


def check_online(repo: dict[str, Any]) -> list[str]:
    """PyPI's own listing, the files themselves and the set's consistency (network)."""
    problems: list[str] = []
    libraries = repo.get("libraries", [])
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        listings = dict(
            zip(
                [lib["name"] for lib in libraries],
                pool.map(lambda lib: L.pypi_releases(lib["name"]), libraries),
                strict=True,
            )
        )
        heads = []
        for lib in libraries:
            for release in lib["releases"]:
                problems += _check_listing(lib["name"], release, listings[lib["name"]].get(release["version"], []))
                heads.append(pool.submit(_check_head, lib["name"], release, listings[lib["name"]]))
        for future in heads:
            problems += future.result()
        problems += _check_consistency(repo, pool)
    return problems


def _check_listing(name: str, release: dict[str, Any], files: list[dict[str, Any]]) -> list[str]:
    filename = release["url"].rsplit("/", 1)[-1]
    entry = next((f for f in files if f["filename"] == filename), None)
    if entry is None:
        return [f"{name} {release['version']}: PyPI lists no file {filename}"]
    problems = []
    if entry.get("yanked"):
        problems.append(f"{name}: {filename} is yanked ({entry.get('yanked_reason')})")
    if entry["digests"]["sha256"] != release["sha256"]:
        problems.append(f"{name}: {filename} sha256 differs from PyPI's")
    if L.file_url(entry) != release["url"]:
        problems.append(f"{name}: {filename} is at {L.file_url(entry)}, not {release['url']}")
    for platform in release["platforms"]:
        best = L.select_wheel(files, platform)
        if best is None or best["filename"] != filename:
            chosen = best and best["filename"]
            problems.append(f"{name} on {platform}: pip would pick {chosen} for CPython {L.PYTHON}, not {filename}")
    return problems


def _check_head(name: str, release: dict[str, Any], listing: dict[str, list[dict[str, Any]]]) -> list[str]:
    size = next(
        (f["size"] for f in listing.get(release["version"], []) if L.file_url(f) == release["url"]),
        None,
    )
    try:
        with L.http(release["url"], "HEAD") as response:
            length = response.headers.get("Content-Length")
    except Exception as exc:
        return [f"{name}: {release['url']} does not answer: {exc}"]
    if size is not None and length is not None and int(length) != size:
        return [f"{name}: {release['url']} is {length} bytes, PyPI lists {size}"]
    return []


def _check_consistency(repo: dict[str, Any], pool: concurrent.futures.Executor) -> list[str]:
    from packaging.requirements import Requirement
    from packaging.version import Version

    pins = L.runtime_pins()
    registered = {L.canonical(lib["name"]): lib for lib in repo.get("libraries", [])}
    # The file whose METADATA speaks for (name, version): the pinned wheel, or for a library left to
    # the channel, the wheel pip would pick on linux-x64 at our pin.
    sources: dict[tuple[str, str], str] = {}
    for name in map(L.canonical, L.all_dependencies()):
        for platform in L.platforms_of(name):
            version = L.version_for(name, platform, pins)
            if name in registered:
                release = next(r for r in registered[name]["releases"] if platform in r["platforms"])
                sources.setdefault((name, release["version"]), release["url"])
            elif (name, version) not in sources:
                entry = L.select_wheel(L.pypi_releases(name).get(version, []), platform)
                if entry is None:
                    return [f"{name} {version} (left to the channel) has no wheel for {platform}"]
                sources[(name, version)] = L.file_url(entry)

    def read(key: tuple[str, str]) -> Any:
        try:
            return Parser().parsestr(L.remote_wheel_metadata(sources[key]))
        except Exception as exc:
            return exc

    keys = list(sources)
    metadata: dict[tuple[str, str], Any] = {}
    problems = []
    for key, meta in zip(keys, pool.map(read, keys), strict=True):
        if isinstance(meta, Exception):
            problems.append(f"{key[0]} {key[1]}: METADATA of {sources[key]} unreadable: {meta}")
        elif L.canonical(meta["Name"]) != key[0] or meta["Version"] != key[1]:
            problems.append(f"{sources[key]}: METADATA says {meta['Name']} {meta['Version']}")
        else:
            metadata[key] = meta
    if problems:
        return problems
    for platform in L.PLATFORMS:
        chosen = {L.canonical(n): L.version_for(n, platform, pins) for n in L.dependencies(platform)}
        env = L.marker_environment(platform)
        for name, version in chosen.items():
            for text in metadata[(name, version)].get_all("Requires-Dist") or []:
                req = Requirement(text)
                target = L.canonical(req.name)
                if target not in chosen or (req.marker is not None and not req.marker.evaluate(env)):
                    continue
                if not req.specifier.contains(Version(chosen[target]), prereleases=True):
                    problems.append(
                        f"on {platform}: {name} {version} requires {req}, the set gives {target} {chosen[target]}"
                    )
    return problems


def run(path: str = L.REPOSITORY_JSON) -> tuple[int, list[str]]:
    repo = L.read_json(path)
    problems = check_offline(repo)
    try:
        L.check_reachable()
    except L.Unreachable as exc:
        return UNREACHABLE, [*problems, f"PyPI unreachable, online checks not run: {exc}"]
    problems += check_online(repo)
    return (PROBLEMS if problems else OK), problems


def main() -> int:
    status, messages = run()
    for message in messages:
        print(message)
    if status == UNREACHABLE and len(messages) > 1:
        status = PROBLEMS  # offline problems fail whether or not PyPI answers
    if status == OK:
        repo = L.read_json(L.REPOSITORY_JSON)
        files = {r["url"] for lib in repo["libraries"] for r in lib["releases"]}
        print(
            f"OK: {len(repo['libraries'])} libraries, {len(files)} wheel files, "
            f"{len(L.PLATFORMS)} platforms, Python {L.PYTHON}: all on PyPI, consistent"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
