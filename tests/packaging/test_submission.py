"""The Package Control submission (packaging/channel/) is current and obeys the channels' own rules
(packaging/README.md names them and where they come from); each rule catches what it is for."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tools import channel_submission as S
from tools import libraries as L


@pytest.fixture(scope="module")
def repository() -> dict[str, Any]:
    return L.read_json(L.REPOSITORY_JSON)


def test_the_submission_files_are_current_and_obey_both_channels(repository: dict[str, Any]) -> None:
    assert S.check(repository) == []


def test_the_library_entries_are_exactly_the_libraries_our_repository_registers(repository: dict[str, Any]) -> None:
    files = S.library_files(repository)
    new = {e["name"] for e in files[S.NEW_LIBRARIES]["libraries"]}
    changed = {e["name"] for e in files[S.CHANGED_LIBRARIES]["libraries"]}
    assert new | changed == {lib["name"] for lib in repository["libraries"]}
    assert {L.canonical(n) for n in changed} == set(L.OVERRIDES)
    assert not {L.canonical(n) for n in new} & (set(L.CHANNEL_LIBRARIES) | set(L.OVERRIDES))
    assert {"mcp", "mcp-types", "starlette", "uvicorn"} <= new


def test_the_package_entry_is_our_repositorys_with_one_tagged_release_for_4205(repository: dict[str, Any]) -> None:
    entry = S.package_entry(repository)
    assert entry["name"] == L.PACKAGE_NAME
    assert entry["releases"] == [{"sublime_text": f">={L.MIN_BUILD}", "tags": True}]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda e: e["releases"][0].update(url="https://example.com/x.zip"), "'url' is not allowed"),
        (lambda e: e["releases"][0].update(branch="main"), "exactly one of tags and branch"),
        (lambda e: e["releases"][0].pop("tags"), "exactly one of tags and branch"),
        (lambda e: e["releases"][0].update(sublime_text="4205+"), "not a valid selector"),
        (lambda e: e.update(details="https://github.com/a/b.git"), "not a GitHub repository URL"),
        (lambda e: e.update(labels=["ai, gemini"]), "one label per string"),
        (lambda e: e.update(labels=["ai", "ai"]), "none repeated"),
        (lambda e: e.update(name="Gemini: Companion"), "not a valid, free folder name"),
        (lambda e: e.update(name="Gemini for Sublime"), "keeps 'Sublime' out"),
        (lambda e: e.update(name="Python"), "does not belong in repository/g.json"),
        (lambda e: e.update(stars=5), "unknown key 'stars'"),
    ],
)
def test_each_package_channel_rule_catches_its_violation(repository: dict[str, Any], change: Any, problem: str) -> None:
    entry = copy.deepcopy(S.package_entry(repository))
    change(entry)
    assert any(problem in p for p in S.package_entry_problems(entry)), S.package_entry_problems(entry)


def _first_release(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """click's first release: the violations below are written for click's wheel."""
    return next(e for e in entries if e["name"] == "click")["releases"][0]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda es: _first_release(es).update(base="https://pypi.org/project/click"), "is not https://pypi.org"),
        (lambda es: _first_release(es).update(base="https://pypi.org/project/click/7.0"), "but our pin is"),
        (lambda es: _first_release(es).update(asset="click-*-py3-none-any.whl"), "is a pattern"),
        (lambda es: _first_release(es).update(asset="click-8.5.1-py2-none-any.whl"), "does not select"),
        (lambda es: _first_release(es).update(platforms=["linux-x64", "linux-x64"]), "are not valid"),
        (lambda es: _first_release(es).update(platforms=["freebsd"]), "are not valid"),
        (lambda es: _first_release(es).update(python_versions=["3.8"]), "python_versions"),
        (lambda es: _first_release(es).update(url="https://x/y.whl"), "'url' is unknown"),
        (lambda es: es[0].pop("issues"), "keys"),
        (lambda es: es.reverse(), "sorted by name"),
    ],
)
def test_each_library_channel_rule_catches_its_violation(repository: dict[str, Any], change: Any, problem: str) -> None:
    entries = copy.deepcopy(S.library_files(repository)[S.NEW_LIBRARIES]["libraries"])
    assert any(e["name"] == "click" for e in entries)
    change(entries)
    found = S.library_problems(entries, repository, L.runtime_pins())
    assert any(problem in p for p in found), found


def test_the_asset_is_read_as_the_crawler_reads_it() -> None:
    regex = S.asset_regex("mcp-${version}-py3-none-any.whl", "2.3.0")
    assert regex.match("mcp-2.3.0-py3-none-any.whl")
    assert not regex.match("mcp-2.3.0-py3Xnone-any.whl")  # "." is literal
    assert S.asset_regex("psutil-*-cp36-abi3-*.whl", "7.2.2").match("psutil-7.2.2-cp36-abi3-win_amd64.whl")


def test_stale_files_are_reported(repository: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "OUT", str(tmp_path))
    assert any("out of date" in p for p in S.check(repository))
    assert S.main([]) == 0
    assert S.check(repository) == []
