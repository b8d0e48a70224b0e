"""repository.json, dependencies.json, the doctor's version table and the version, kept in agreement."""

from __future__ import annotations

import concurrent.futures
import copy
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import companion
from companion import doctor
from tests.packaging.conftest import REPO
from tools import check_repository
from tools import libraries as L


def test_repository_json_passes_the_offline_checks() -> None:
    assert check_repository.check_offline(L.read_json(L.REPOSITORY_JSON)) == []


def test_the_offline_checks_catch_what_would_break_an_install() -> None:
    good = L.read_json(L.REPOSITORY_JSON)
    bad = copy.deepcopy(good)
    libs = {lib["name"]: lib for lib in bad["libraries"]}
    psutil = next(r for r in libs["psutil"]["releases"] if r["platforms"] == ["linux-x64"])
    psutil["url"] = psutil["url"].replace("cp36-abi3", "cp314-cp314t")  # the channel's free-threaded pick
    libs["mcp"]["releases"][0]["version"] = "2.2.0"
    libs["pydantic-core"]["releases"] = [
        r for r in libs["pydantic-core"]["releases"] if "osx-x64" not in r["platforms"]
    ]
    bad["libraries"] = [lib for lib in bad["libraries"] if lib["name"] != "uvicorn"]
    problems = "\n".join(check_repository.check_offline(bad))
    assert "psutil on linux-x64: psutil-7.2.2-cp314-cp314t" in problems and "cannot be imported" in problems
    assert "mcp on linux-x64: version 2.2.0, our pin is 2.3.0" in problems
    assert "pydantic-core: 0 releases for osx-x64, need exactly 1" in problems
    assert "uvicorn: needed (dependencies.json, not in the default channel) but not registered" in problems


def test_what_package_control_4_would_reject_or_skip_is_caught() -> None:
    """json_repository_provider.get_libraries drops the whole repository for a key it does not know;
    a release without python_versions counts as 3.3 (skipped on 3.14); selectors.py matches only its
    platform and version selector forms."""
    repo, deps = L.read_json(L.REPOSITORY_JSON), L.read_json(L.DEPENDENCIES_JSON)
    assert check_repository.package_control_problems(repo, deps) == []
    bad_repo, bad_deps = copy.deepcopy(repo), copy.deepcopy(deps)
    libs = {lib["name"]: lib for lib in bad_repo["libraries"]}
    libs["mcp"]["license"] = "MIT"
    libs["h11"]["releases"][0]["wheel"] = "x"
    del libs["click"]["releases"][0]["python_versions"]
    libs["uvicorn"]["releases"][0]["date"] = ""
    libs["starlette"]["releases"][0].pop("version")
    bad_repo["libraries"].append({**libs["h11"], "name": "H11"})
    bad_deps["macos"] = bad_deps["*"]
    bad_deps["*"] = {"4205+": bad_deps["*"][">=4205"]}
    problems = "\n".join(check_repository.package_control_problems(bad_repo, bad_deps))
    assert "mcp: Package Control rejects the repository for the keys ['license']" in problems
    assert "h11: Package Control rejects the repository for release keys ['wheel']" in problems
    assert "click: a release Package Control skips on Python 3.14" in problems
    assert "uvicorn: release date must be a non-empty string" in problems
    assert "starlette: a release with a url needs a version" in problems
    assert "differ case-insensitively" in problems
    assert "'macos' is no platform selector" in problems and "'4205+' is no Sublime Text selector" in problems


def test_the_online_check_catches_a_set_whose_pins_do_not_belong_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """The consistency half of the online check, fed the real METADATA of every pinned wheel except
    that pydantic now asks for another pydantic-core than the set pins."""
    try:
        L.check_reachable()
    except L.Unreachable as exc:
        pytest.skip(f"PyPI is unreachable: {exc}")
    real = L.remote_wheel_metadata

    def pydantic_wants_another_core(url: str) -> str:
        text = real(url)
        if "/pydantic-" in url and "/pydantic_core-" not in url:
            text = re.sub(r"Requires-Dist: pydantic-core==[^\s;]+", "Requires-Dist: pydantic-core==0.0.1", text)
        return text

    monkeypatch.setattr(L, "remote_wheel_metadata", pydantic_wants_another_core)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        problems = check_repository._check_consistency(L.read_json(L.REPOSITORY_JSON), pool)
    assert problems, "an inconsistent set passed"
    assert all("pydantic" in p and "requires pydantic-core==0.0.1" in p for p in problems), problems
    assert {p.split(":")[0] for p in problems} == {f"on {platform}" for platform in L.PLATFORMS}


def test_every_pinned_wheel_is_on_pypi_and_the_set_is_consistent() -> None:
    """tools/check_repository.py, online. Skipped (with its reason) only when PyPI is unreachable."""
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "check_repository.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode == check_repository.UNREACHABLE:
        print(result.stdout)
        pytest.skip(result.stdout.strip().splitlines()[-1])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"OK: {len(L.read_json(L.REPOSITORY_JSON)['libraries'])} libraries"), result.stdout


def test_registered_libraries_are_the_closure_less_the_channel_and_overrides_are_explained() -> None:
    names = {L.canonical(lib["name"]) for lib in L.read_json(L.REPOSITORY_JSON)["libraries"]}
    deps = {L.canonical(n) for n in L.all_dependencies()}
    assert names == deps - set(L.CHANNEL_LIBRARIES)
    assert set(L.OVERRIDES) <= names and set(L.CHANNEL_LIBRARIES) <= deps
    # The channel's entries we rely on are for pure wheels or per-platform templates; psutil is ours.
    assert "psutil" not in L.CHANNEL_LIBRARIES and "cryptography" in names


def test_the_doctor_knows_every_library_and_the_versions_the_set_needs() -> None:
    for platform, sys_platform in (("linux-x64", "linux"), ("osx-arm64", "darwin"), ("windows-x64", "win32")):
        listed = {L.canonical(n) for n in L.dependencies(platform)}
        assert set(doctor.required_libraries(sys_platform)) == listed, platform
    assert doctor.OPTIONAL == ("psutil", "truststore")
    pins = L.runtime_pins()
    required = doctor.library_requirements()
    for name, spec in required.items():
        assert doctor.satisfies(pins[name], spec), f"our pin {name} {pins[name]} fails the doctor's {spec}"
    # Each lower bound is the highest any library of the set declares (installed metadata, 3.14).
    env = L.marker_environment("linux-x64")
    lower: dict[str, Version] = {}
    for name in doctor.REQUIRED:
        for text in importlib.metadata.requires(name) or []:
            req = Requirement(text)
            target = L.canonical(req.name)
            if target not in doctor.REQUIRED or (req.marker and not req.marker.evaluate({**env, "extra": "crypto"})):
                continue
            for clause in req.specifier:
                if clause.operator == ">=":
                    lower[target] = max(lower.get(target, Version("0")), Version(clause.version))
    for name, bound in lower.items():
        match = re.search(r"(?:>=|==)([\w.]+)", required[name])
        assert match and Version(match.group(1)) == bound, f"{name}: doctor says {required[name]!r}, metadata >={bound}"
    assert required["pydantic-core"] == f"=={pins['pydantic-core']}"


def test_without_truststore_the_companion_still_starts() -> None:
    """truststore serves only New Chat's registry fetch (which then trusts Python's certificates and
    says so when that fails): a Package Control that has not installed it yet blocks nothing."""
    pins = L.runtime_pins()
    versions: dict[str, str | None] = {n: pins[L.canonical(n)] for n in doctor.LIBRARIES}
    assert doctor.library_issues(versions) == ([], [])
    assert doctor.library_issues({**versions, "truststore": None}) == ([], [])
    assert doctor.library_issues({**versions, "mcp": None})[0] == ["mcp"]


@pytest.mark.parametrize(
    ("version", "spec", "ok"),
    [
        ("2.3.0", "==2.3.0", True),
        ("2.3", "==2.3.0", True),
        ("2.2.0", "==2.3.0", False),
        ("4.16.0", ">=4.10,<5", True),
        ("5.0.0", ">=4.10,<5", False),
        ("4.9.9", ">=4.10,<5", False),
        ("0.0.34", ">=0.0.9", True),
        ("1.10.0", ">=0.49.1", True),
        ("2026.9.1", "", True),
    ],
)
def test_doctor_version_comparison(version: str, spec: str, ok: bool) -> None:
    assert doctor.satisfies(version, spec) is ok


def test_one_version_everywhere() -> None:
    version = companion.__version__
    with open(os.path.join(REPO, "messages.json"), encoding="utf-8") as handle:
        messages = json.load(handle)
    versions = [k for k in messages if k != "install"]
    assert max(versions, key=Version) == version, f"messages.json has no entry for {version}"
    for key, path in messages.items():
        assert os.path.isfile(os.path.join(REPO, path)), f"messages.json {key}: {path} is missing"
    with open(os.path.join(REPO, messages[version]), encoding="utf-8") as handle:
        assert version in handle.readline(), f"{messages[version]} does not start with its version"
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as handle:
        assert 'version = { attr = "companion.__version__" }' in handle.read()
    # Nothing else in the package hard-codes a version.
    for folder, _, files in os.walk(os.path.join(REPO, "companion")):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    assert f'"{version}"' not in handle.read(), f"{name} repeats the version"


def test_the_changelog_has_every_released_version_and_agrees_with_its_message() -> None:
    with open(os.path.join(REPO, "messages.json"), encoding="utf-8") as handle:
        messages = json.load(handle)
    with open(os.path.join(REPO, "CHANGELOG.md"), encoding="utf-8") as handle:
        changelog = handle.read()
    assert "## [Unreleased]" in changelog
    for version in (k for k in messages if k != "install"):
        assert f"## [{version}]" in changelog, f"CHANGELOG.md has no entry for {version}"
        entry = changelog.split(f"## [{version}]", 1)[1].split("\n## [", 1)[0]
        with open(os.path.join(REPO, messages[version]), encoding="utf-8") as handle:
            note = handle.read().split("\n\n", 1)[1].strip()  # after the title
        assert " ".join(note.split()) in " ".join(entry.split()), f"{messages[version]} and CHANGELOG.md disagree"


def test_gitattributes_keeps_development_files_out_of_the_package() -> None:
    with open(os.path.join(REPO, ".gitattributes"), encoding="utf-8") as handle:
        ignored = {line.split()[0].strip("/") for line in handle if "export-ignore" in line}
    for path in ("tests", "bench", "tools", ".ci", "dev.py", "pyproject.toml", "pyrightconfig.json", "requirements",
                 ".gitignore", ".gitattributes", "repository.json", "packaging", "CONTRIBUTING.md"):  # fmt: skip
        assert path in ignored, f"{path} would ship to users"
    for path in ("plugin.py", "companion", "dependencies.json", ".python-version", "messages.json", "messages"):
        assert path not in ignored, f"{path} must ship"
    # What `git archive` (how Package Control's download of a tag is made) would contain.
    listing = subprocess.run(
        ["git", "archive", "--worktree-attributes", "--format=tar", "HEAD"], cwd=REPO, capture_output=True, timeout=60
    )
    assert listing.returncode == 0, listing.stderr
    with tarfile.open(fileobj=io.BytesIO(listing.stdout)) as archive:
        top = {name.split("/", 1)[0] for name in archive.getnames()}
    assert not top & ignored, f"git archive ships {sorted(top & ignored)}"
    assert {"plugin.py", "companion", "dependencies.json", "messages.json"} <= top, sorted(top)


def test_readme_install_names_the_repository_url_and_the_libraries_it_registers() -> None:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        readme = re.sub(r"\s+", " ", handle.read())
    assert f"`{doctor.REPOSITORY_URL}`" in readme
    section = readme[readme.index("## Install") : readme.index("## First run")]
    for lib in L.read_json(L.REPOSITORY_JSON)["libraries"]:
        assert lib["name"] in section, f"README Install does not mention {lib['name']}"
    counts = {platform: len(L.dependencies(platform)) for platform in L.PLATFORMS}
    assert f"{counts['linux-x64']} libraries listed in `dependencies.json`" in section
    assert f"{counts['windows-x64']} on Windows, where mcp needs pywin32" in section
    assert "tools/dev_install.py --data" in section
