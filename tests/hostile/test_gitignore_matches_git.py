"""The checkpoints leave out exactly what the real `git check-ignore` says git ignores (issue 37):
generated rules (BOM, CRLF, POSIX classes, `**`, negation, escapes, trailing spaces, brackets git
cannot close) in every rule file git reads (nested `.gitignore`s, `info/exclude`, a worktree's
common `info/exclude`, `core.excludesFile` and the default global ignore), over generated trees.

git runs with a scratch HOME and XDG_CONFIG_HOME and GIT_CONFIG_NOSYSTEM=1 (the product reads no
system config either); the product reads the same environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.core.files.patterns import IgnoreFile
from companion.core.history.checkpoint_store import CheckpointStore
from companion.core.history.checkpoints import Checkpointer

GIT = shutil.which("git")
if GIT is None:
    print("tests/hostile/test_gitignore_matches_git.py: skipped, git is not installed here")
pytestmark = [
    pytest.mark.skipif(GIT is None, reason="git is not installed: nothing to compare the ignore rules with"),
    pytest.mark.skipif(
        sys.platform == "win32", reason="file names with '*', '?' or trailing spaces are not possible on Windows"
    ),
]

# Names chosen so that the rule tokens below match some and not others.
NAMES = [
    "a",
    "b",
    "ab",
    "x.txt",
    "a1",
    "A",
    "B9",
    "#a",
    "!a",
    "a b",
    "x ",
    "[x]",
    "a-b",
    "9",
    "-",
    "_a",
    "a*",
    "Ab.LOG",
]
DIRS = ["d", "a", "x.txt", "sub dir", "D1", "#a"]
TOKENS = [
    *("a", "b", "x", "txt", ".", "A", "1", "9", "LOG", "-", "_", " ", "#", "!"),
    *("*", "**", "***", "?", "/", "\\*", "\\#", "\\!", "\\ ", "\\", "\\a"),
    *("[0-9]", "[a-c]", "[z-a]", "[a-]", "[-a]", "[]a]", "[!a]", "[^b]", "[", "[x]", "[\\]]", "[a-c-x]"),
    *("[[:digit:]]", "[[:alpha:]]", "[[:upper:]]", "[[:lower:]]", "[[:alnum:]]", "[[:space:]]"),
    *("[[:punct:]]", "[[:xdigit:]]", "[![:alpha:]]", "[[:bogus:]]", "[[:digit]", "[[:]", "[a[:digit:]]"),
]


def rule() -> st.SearchStrategy[str]:
    pattern = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map("".join)
    return st.one_of(
        st.tuples(
            st.sampled_from(["", "", "!", "/", "**/", "!/"]), pattern, st.sampled_from(["", "", "/", "  ", "//"])
        ).map("".join),
        st.sampled_from(["#a", "", "   ", "!", "/", "*", "!*", "**", "a/**", "**/b", "d/**/a", "!d/", "d/"]),
    )


@dataclass(frozen=True)
class RuleFile:
    lines: list[str]
    bom: bool
    crlf: bool

    def data(self) -> bytes:
        end = "\r\n" if self.crlf else "\n"
        text = ("\ufeff" if self.bom else "") + end.join(self.lines) + end
        return text.encode("utf-8")


def rule_file() -> st.SearchStrategy[RuleFile]:
    return st.builds(RuleFile, st.lists(rule(), min_size=1, max_size=5), st.booleans(), st.booleans())


@dataclass(frozen=True)
class Case:
    paths: list[tuple[str, ...]]
    root_rules: RuleFile | None
    sub_rules: list[tuple[int, RuleFile]]  # in folders of the tree (by index, modulo their number)
    exclude: RuleFile | None  # info/exclude (the common one, in a worktree)
    global_rules: RuleFile | None
    global_where: str  # "xdg ignore" | "~/.config/git/ignore" | "core.excludesFile"
    worktree: bool


CASES = st.builds(
    Case,
    st.lists(
        st.tuples(st.lists(st.sampled_from(DIRS), max_size=3), st.sampled_from(NAMES)).map(lambda t: (*t[0], t[1])),
        min_size=1,
        max_size=12,
    ),
    st.none() | rule_file(),
    st.lists(st.tuples(st.integers(0, 20), rule_file()), max_size=2),
    st.none() | rule_file(),
    st.none() | rule_file(),
    st.sampled_from(["xdg ignore", "~/.config/git/ignore", "core.excludesFile"]),
    st.booleans(),
)


def write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


@contextmanager
def environment(home: str, xdg: str | None) -> Iterator[dict[str, str]]:
    """The scratch user, for git (the returned environment) and for the product (os.environ)."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith("GIT_") or name == "XDG_CONFIG_HOME":
            del os.environ[name]
    os.environ.update({"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"})
    if xdg is not None:
        os.environ["XDG_CONFIG_HOME"] = xdg
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def git(env: dict[str, str], cwd: str, *args: str, stdin: bytes = b"") -> bytes:
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=False)
    if done.returncode not in (0, 1):  # check-ignore: 1 is "nothing ignored"
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def build(case: Case, scratch: str, env: dict[str, str]) -> tuple[str, list[str]]:
    """The repository (or worktree) with the case's files and rule files; its root and file paths."""
    main = os.path.join(scratch, "main")
    os.makedirs(main)
    git(env, main, "init", "-q")
    if git(env, main, "config", "--get", "core.ignorecase").strip() == b"true":
        pytest.skip("git's core.ignoreCase is true on this file system; the product matches case-sensitively")
    root = main
    if case.worktree:
        git(env, main, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0")
        git(env, main, "worktree", "add", "-q", "--detach", os.path.join(scratch, "wt"))
        root = os.path.join(scratch, "wt")
    files: set[str] = set()
    folders: set[str] = set()
    for parts in case.paths:
        below = ["/".join(parts[:i]) for i in range(1, len(parts))]
        path = "/".join(parts)
        if path in folders or any(f in files for f in below):
            continue  # a name already used as the other kind
        files.add(path)
        folders.update(below)
        write(os.path.join(root, *parts), b"content of " + path.encode() + b"\n")
    if case.root_rules is not None:
        write(os.path.join(root, ".gitignore"), case.root_rules.data())
        files.add(".gitignore")
    for index, rules in case.sub_rules if folders else ():
        folder = sorted(folders)[index % len(folders)]
        write(os.path.join(root, *folder.split("/"), ".gitignore"), rules.data())
        files.add(folder + "/.gitignore")
    if case.exclude is not None:
        write(os.path.join(main, ".git", "info", "exclude"), case.exclude.data())
    if case.global_rules is not None:
        home, xdg = env["HOME"], env.get("XDG_CONFIG_HOME")
        if case.global_where == "core.excludesFile":
            write(os.path.join(home, "ignores", "list"), case.global_rules.data())
            write(os.path.join(home, ".gitconfig"), b"[core]\n\texcludesFile = ~/ignores/list\n")
        elif case.global_where == "xdg ignore" and xdg is not None:
            write(os.path.join(xdg, "git", "ignore"), case.global_rules.data())
        else:
            write(os.path.join(home, ".config", "git", "ignore"), case.global_rules.data())
    return os.path.realpath(root), sorted(files)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CASES)
def test_the_checkpoint_leaves_out_exactly_what_git_ignores(case: Case) -> None:
    scratch = os.path.realpath(tempfile.mkdtemp(prefix="gitignore-vs-git-"))
    try:
        home = os.path.join(scratch, "home")
        os.makedirs(home)
        xdg = os.path.join(scratch, "xdg") if case.global_where == "xdg ignore" else None
        with environment(home, xdg) as env:
            root, files = build(case, scratch, env)
            out = git(env, root, "check-ignore", "--stdin", "-z", stdin=b"\0".join(f.encode() for f in files) + b"\0")
            ignored = {p.decode() for p in out.split(b"\0") if p}
            store = CheckpointStore(os.path.join(scratch, "cache"), [root])
            point = Checkpointer(store, [root]).take()
        covered = {
            os.path.relpath(e.path, root).replace(os.sep, "/")
            for e in point.entries.values()
            if e.kind == "file" and os.path.basename(e.path) != ".git"  # a worktree's `.git` file
        }
        assert covered == set(files) - ignored, case
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


CONFIGS = [
    "[core]\n\texcludesFile = ~/a\n",
    "[core]\nexcludesfile=/x/y ; comment\n",
    '[core]\n\texcludesFile = "/with space/# not a comment" # comment\n',
    "[core]\n\texcludesFile = /a\\\n/b\n",  # a continued line
    '[core]\n\texcludesFile = "/tab\\there\\\\x"\n',
    "[core] excludesFile = /same/line\n",
    '[core "sub"]\n\texcludesFile = /not/this\n[CORE]\n\tExcludesFile = /this\n',
    "[core]\n\texcludesFile = /first\n[user]\n\tname = x\n[core]\n\texcludesFile = /second\n",
    "# [core]\n; excludesFile = /commented\n[core]\n\tbare\n\texcludesFile =   /spaced   out  \n",
    "[core.sub]\n\texcludesFile = /old/subsection/syntax\n",
]


@pytest.mark.parametrize("text", CONFIGS)
def test_core_excludes_file_is_read_as_git_reads_it(text: str) -> None:
    """`core.excludesFile` from a user's config: quotes, escapes, comments, continued lines, sections."""
    from companion.core.files.patterns import config_value

    scratch = os.path.realpath(tempfile.mkdtemp(prefix="gitconfig-vs-git-"))
    try:
        write(os.path.join(scratch, ".gitconfig"), text.encode())
        with environment(scratch, None) as env:
            expected = git(env, scratch, "config", "--global", "--get", "core.excludesFile").decode()
        assert (config_value(text, "core", "excludesfile") or "") == expected.removesuffix("\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


SEVERAL_STARS = ["**/a*", "a*/**/b*", "*a*b", "x/**/*a*a*b", "*a*a*a*a*a*a*a*a*a*a*a*a*b"]
STAR_PATHS = ["baabbb", "x/ab", "ab", "x/ba", "ab/c/bx", "ab/bx", "ab/c/xb", "xaxb", "xa/b", "x/y/aab", "a" * 50]


@pytest.mark.parametrize("pattern", SEVERAL_STARS)
def test_rules_with_several_stars_match_as_git_matches_them(pattern: str, tmp_path: Any) -> None:
    """Rules with more than one star are matched without a regular expression (F9: one backtracked
    for minutes): `**/` must still end at a "/", each `*` stay inside one name."""
    assert GIT is not None
    repo = os.path.join(str(tmp_path), "repo")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("GIT_CONFIG_GLOBAL", None)  # a scratch user: no global excludes of the machine's user
    subprocess.run([GIT, "init", "-q", repo], check=True, env=env)
    write(os.path.join(repo, ".gitignore"), pattern.encode() + b"\n")
    rules = IgnoreFile.parse(pattern + "\n")
    for path in STAR_PATHS:
        git = subprocess.run([GIT, "-C", repo, "check-ignore", "-q", "--no-index", path], check=False, env=env)
        parts = path.split("/")
        ours = any(rules.decide("/".join(parts[:i]), True) for i in range(1, len(parts)))  # a folder above
        ours = ours or bool(rules.decide(path, False))
        assert ours == (git.returncode == 0), (pattern, path)
