"""list_files: exclude patterns, .gitignore inside git repositories, limits, several folders."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.core.files.listing import ListOptions, list_files
from companion.core.files.paths import PathPolicy
from companion.core.files.patterns import IgnoreFile, SublimePatterns

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="symlinks and FIFOs need POSIX here")

SUBLIME_DEFAULT_FOLDERS = [".svn", ".git", ".hg", "CVS", ".Trash", ".Trash-*"]
SUBLIME_DEFAULT_FILES = ["*.pyc", "*.pyo", "*.exe", "*.dll", "*.obj", "*.o", ".DS_Store", "*.sublime-workspace"]


def make(root: str, *paths: str, content: str = "") -> None:
    for path in paths:
        full = os.path.join(root, *path.split("/"))
        if path.endswith("/"):
            os.makedirs(full, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as handle:
            handle.write(content)


def write(root: str, path: str, content: str) -> None:
    make(root, path, content=content)


def listed(folders: list[str], **options: object) -> list[str]:
    return list_files(PathPolicy(folders), ListOptions(**options)).entries  # type: ignore[arg-type]


def test_sublime_exclude_patterns_hide_folders_and_files(workspace: str) -> None:
    make(workspace, "a.py", "a.pyc", "node_modules/x.js", "src/b.py", "src/b.o", ".git/HEAD", "docs/build/x.html")
    entries = listed(
        [workspace],
        folder_excludes=[*SUBLIME_DEFAULT_FOLDERS, "node_modules", "//docs/build"],
        file_excludes=SUBLIME_DEFAULT_FILES,
        use_gitignore=False,
    )
    assert entries == ["a.py", "src/b.py"]


def test_sublime_pattern_rules() -> None:
    names = SublimePatterns.compile(["*.min.js", "tmp?"])
    assert names.matches("app.min.js", "/w/app.min.js", "app.min.js")
    assert names.matches("tmp1", "/w/tmp1", "tmp1") and not names.matches("tmp12", "/w/tmp12", "tmp12")
    paths = SublimePatterns.compile(["mydir/one", "//top/only", "/abs/path/*"])
    assert paths.matches("one", "/parent/mydir/one", "mydir/one")  # "*/" implied in front
    assert not paths.matches("one", "/parent/notmydir/one", "notmydir/one")
    assert paths.matches("only", "/w/top/only", "top/only")
    assert not paths.matches("only", "/w/sub/top/only", "sub/top/only")  # "//" anchors at the folder
    assert paths.matches("x", "/abs/path/x/y", "x/y")  # "/*" at the end may cross "/"


def test_gitignore_applies_inside_a_repository(workspace: str) -> None:
    os.mkdir(os.path.join(workspace, ".git"))
    write(workspace, ".gitignore", "# build output\n*.log\n!keep.log\nbuild/\n/root-only.txt\ndocs/**/draft.md\n")
    write(workspace, "sub/.gitignore", "local.txt\n!important.log\n")
    make(
        workspace,
        "a.log",
        "keep.log",
        "root-only.txt",
        "sub/root-only.txt",
        "sub/local.txt",
        "sub/important.log",
        "sub/other.log",
        "build/out.js",
        "sub/build/deep.js",
        "docs/a/b/draft.md",
        "docs/draft.md",
        "docs/final.md",
    )
    entries = listed([workspace])
    assert entries == [
        ".gitignore",
        "keep.log",
        "docs/final.md",
        "sub/.gitignore",
        "sub/important.log",  # re-included by the deeper .gitignore
        "sub/root-only.txt",  # "/root-only.txt" is anchored to the top
    ]


def test_gitignore_is_ignored_outside_a_repository_and_can_be_switched_off(workspace: str) -> None:
    write(workspace, ".gitignore", "*.log\n")
    make(workspace, "a.log")
    assert listed([workspace]) == [".gitignore", "a.log"]
    os.mkdir(os.path.join(workspace, ".git"))
    assert listed([workspace]) == [".gitignore"]
    assert listed([workspace], use_gitignore=False) == [".gitignore", "a.log"]


def test_a_folder_inside_a_repository_gets_the_rules_from_above_and_info_exclude(tmp_path: str) -> None:
    repo = os.path.realpath(os.path.join(str(tmp_path), "repo"))
    write(repo, ".git/info/exclude", "*.secret\n")
    write(repo, ".gitignore", "generated/\n")
    make(repo, "pkg/a.py", "pkg/generated/x.py", "pkg/k.secret")
    assert listed([os.path.join(repo, "pkg")]) == ["a.py"]


def test_gitignore_pattern_details() -> None:
    rules = IgnoreFile.parse("\\#hash\n\\!bang\ntrailing   \nescaped\\ \n[ab]?.txt\n[!x]y\na/**/b\n**/deep\nlogs/**\n")
    assert rules.decide("#hash", False) and rules.decide("!bang", False)
    assert rules.decide("trailing", False) and not rules.decide("trailing   ", False)
    assert rules.decide("escaped ", False)
    assert rules.decide("a1.txt", False) and not rules.decide("c1.txt", False)
    assert rules.decide("zy", False) and not rules.decide("xy", False)
    assert rules.decide("a/b", False) and rules.decide("a/x/y/b", False) and not rules.decide("ab", False)
    assert rules.decide("x/y/deep", True) and rules.decide("deep", False)
    assert rules.decide("logs/x/y", False) and not rules.decide("logs", True)
    only_dirs = IgnoreFile.parse("cache/\n")
    assert only_dirs.decide("cache", True) and only_dirs.decide("a/cache", True)
    assert only_dirs.decide("cache", False) is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab*?/.[]!", min_size=1, max_size=12), st.text(alphabet="ab/.", min_size=1, max_size=12))
def test_gitignore_parser_never_crashes(pattern: str, path: str) -> None:
    rules = IgnoreFile.parse(pattern)
    rules.decide(path.strip("/") or "a", False)


def test_the_limit_ends_the_listing_with_a_truncated_marker(workspace: str) -> None:
    make(workspace, *[f"f{i:03}.txt" for i in range(30)])
    result = list_files(PathPolicy([workspace]), ListOptions(limit=10))
    assert result.truncated and len(result.entries) == 10
    text = result.text().splitlines()
    assert text[:10] == [f"f{i:03}.txt" for i in range(10)]
    assert text[10].startswith("[truncated: only the first 10 entries are listed")
    complete = list_files(PathPolicy([workspace]), ListOptions(limit=30))
    assert not complete.truncated and "truncated" not in complete.text()


def test_several_folders_are_prefixed_and_non_recursive_shows_folders(tmp_path: str) -> None:
    one = os.path.realpath(os.path.join(str(tmp_path), "one"))
    two = os.path.realpath(os.path.join(str(tmp_path), "two"))
    make(one, "a.txt", "sub/b.txt")
    make(two, "c.txt")
    assert listed([one, two]) == ["one/a.txt", "one/sub/b.txt", "two/c.txt"]
    assert listed([one, two], recursive=False) == ["one/a.txt", "one/sub/", "two/c.txt"]
    policy = PathPolicy([one, two])
    start = policy.resolve("one/sub", kind="folder")
    assert list_files(policy, ListOptions(), start).entries == ["one/sub/b.txt"]


@posix_only
def test_links_pointing_out_fifos_and_folder_links_are_not_listed(workspace: str, outside: str) -> None:
    make(workspace, "real.txt", "dir/x.txt")
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(workspace, "out-link"))
    os.symlink(os.path.join(workspace, "real.txt"), os.path.join(workspace, "in-link"))
    os.symlink(outside, os.path.join(workspace, "out-dir"))
    os.symlink(os.path.join(workspace, "dir"), os.path.join(workspace, "loop-dir"))
    os.mkfifo(os.path.join(workspace, "pipe"))
    assert listed([workspace]) == ["in-link", "real.txt", "dir/x.txt"]
