"""Exclusion rules for `list_files` and checkpoints: Sublime's file patterns and git's `.gitignore`
(pure Python), and `Exclusions`, what a walk of a workspace folder applies of them.

Sublime file patterns (https://www.sublimetext.com/docs/file_patterns.html): without a `/` a
pattern is compared with the entry's name (`*` and `?` only); with a `/` it is compared with the
whole path: a single leading `/` makes it absolute, a leading `//` relative to the folder, otherwise
`*/` is implied in front; a `*` right after a leading `/`-less start or before a trailing `/*` may
match `/`; a trailing `/` makes it a folder pattern.

gitignore (https://git-scm.com/docs/gitignore), implemented here rather than by running `git` (not
installed everywhere Sublime is): blank lines and `#` comments, `\\#`/`\\!` escapes, trailing spaces,
`!` negation (last matching rule wins; a deeper `.gitignore` overrides a shallower one), a `/` at
the start or in the middle anchors the pattern to its file's folder, a trailing `/` matches folders
only, `*`, `?`, `[...]` (with `!`/`^` negation), `**/`, `/**` and `/**/`. Also `.git/info/exclude`.
Not read: the user's global `core.excludesFile`. An ignored folder is not entered, so nothing under
it can be re-included (as in git).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass

_FLAGS = re.IGNORECASE if sys.platform == "win32" else 0


# -- Sublime --


@dataclass(frozen=True)
class SublimePatterns:
    """Compiled folder or file exclude patterns."""

    names: re.Pattern[str] | None  # patterns without "/": matched against the entry's name
    absolute: re.Pattern[str] | None  # matched against the absolute path (with "/" separators)
    relative: re.Pattern[str] | None  # "//" patterns: matched against the folder-relative path

    @classmethod
    def compile(cls, patterns: Sequence[str]) -> SublimePatterns:
        names, absolute, relative = [], [], []
        for pattern in patterns:
            if "/" not in pattern:
                names.append(_sublime_glob(pattern, slash=False))
            elif pattern.startswith("//"):
                relative.append(_sublime_path(pattern[2:]))
            elif pattern.startswith("/"):
                absolute.append(_sublime_path(pattern[1:], prefix="/"))
            else:
                lead = "" if pattern.startswith("*") else "*/"
                absolute.append(_sublime_path(lead + pattern))
        return cls(_join(names), _join(absolute), _join(relative))

    @property
    def empty(self) -> bool:
        return self.names is None and self.absolute is None and self.relative is None

    def matches(self, name: str, absolute: str, relative: str) -> bool:
        if self.names is not None and self.names.fullmatch(name):
            return True
        if self.absolute is not None and self.absolute.fullmatch(absolute):
            return True
        return self.relative is not None and self.relative.fullmatch(relative) is not None

    @property
    def needs_paths(self) -> bool:
        return self.absolute is not None or self.relative is not None


def _sublime_glob(pattern: str, slash: bool) -> str:
    out = []
    for char in pattern:
        if char == "*":
            out.append(".*" if slash else "[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def _sublime_path(pattern: str, prefix: str = "") -> str:
    directory = pattern.endswith("/")
    body = pattern.rstrip("/")
    lead = ""
    if body.startswith("*/"):
        lead, body = "(?:.*/)?", body[2:]
    elif body.startswith("*"):
        lead, body = ".*", body[1:]
    tail = ""
    if body.endswith("/*"):
        tail, body = "/.*", body[:-2]
    regex = re.escape(prefix) + lead + _sublime_glob(body, slash=False) + tail
    return regex + "(?:/.*)?" if directory else regex


def _join(parts: list[str]) -> re.Pattern[str] | None:
    if not parts:
        return None
    return re.compile("|".join(f"(?:{p})" for p in parts), _FLAGS | re.DOTALL)


# -- gitignore --


@dataclass(frozen=True)
class IgnoreFile:
    """The rules of one .gitignore (or info/exclude), for paths relative to its folder."""

    base: str  # the folder's path relative to the repository root, "" for the root, else "a/b/"
    rules: tuple[tuple[re.Pattern[str], bool, bool], ...]  # (regex, negated, folders only)
    any_rule: re.Pattern[str] | None  # every rule at once, when no rule is negated
    file_rule: re.Pattern[str] | None  # the rules that also apply to files, when no rule is negated

    @classmethod
    def parse(cls, text: str, base: str = "") -> IgnoreFile:
        rules = []
        for line in text.splitlines():
            rule = _gitignore_rule(line)
            if rule is not None:
                rules.append(rule)
        any_rule = file_rule = None
        if rules and not any(negated for _, negated, _ in rules):
            any_rule = re.compile("|".join(f"(?:{r.pattern})" for r, _, _ in rules), re.DOTALL)
            files = [r.pattern for r, _, only_dirs in rules if not only_dirs]
            file_rule = re.compile("|".join(f"(?:{p})" for p in files), re.DOTALL) if files else None
        return cls(base, tuple(rules), any_rule, file_rule)

    @classmethod
    def read(cls, path: str, base: str = "") -> IgnoreFile | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            return None
        parsed = cls.parse(text, base)
        return parsed if parsed.rules else None

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by a `!` rule) or None (no rule matches)."""
        if self.any_rule is not None:
            regex = self.any_rule if is_dir else self.file_rule
            return True if regex is not None and regex.fullmatch(path) else None
        for regex, negated, only_dirs in reversed(self.rules):
            if only_dirs and not is_dir:
                continue
            if regex.fullmatch(path):
                return not negated
        return None


class GitIgnore:
    """The ignore files in force in one folder of a repository (outermost first)."""

    def __init__(self, files: tuple[IgnoreFile, ...] = ()) -> None:
        self.files = files

    def ignored(self, repo_relative: str, is_dir: bool) -> bool:
        for ignore in reversed(self.files):  # the deepest file decides first
            if ignore.base and not repo_relative.startswith(ignore.base):
                continue
            decision = ignore.decide(repo_relative[len(ignore.base) :], is_dir)
            if decision is not None:
                return decision
        return False

    def entering(self, folder: str, repo_relative: str) -> GitIgnore:
        """The rules for the sub-folder `folder` (absolute) at `repo_relative` (ends with "/")."""
        found = IgnoreFile.read(os.path.join(folder, ".gitignore"), repo_relative)
        return GitIgnore((*self.files, found)) if found is not None else self


def repository_root(folder: str) -> str | None:
    """The nearest folder at or above `folder` that holds a `.git` (folder or file)."""
    current = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def rules_for(folder: str, root: str) -> tuple[GitIgnore, str]:
    """The ignore rules in force in `folder` of the repository at `root`, and its repo-relative prefix."""
    files: list[IgnoreFile] = []
    git_dir = os.path.join(root, ".git")
    if os.path.isdir(git_dir):
        exclude = IgnoreFile.read(os.path.join(git_dir, "info", "exclude"))
        if exclude is not None:
            files.append(exclude)
    relative = os.path.relpath(folder, root)
    parts = [] if relative == "." else relative.replace(os.sep, "/").split("/")
    current, prefix = root, ""
    for part in [None, *parts]:
        if part is not None:
            current = os.path.join(current, part)
            prefix += part + "/"
        found = IgnoreFile.read(os.path.join(current, ".gitignore"), prefix)
        if found is not None:
            files.append(found)
    return GitIgnore(tuple(files)), prefix


def _gitignore_rule(line: str) -> tuple[re.Pattern[str], bool, bool] | None:
    if not line or line.startswith("#"):
        return None
    # Trailing spaces are dropped unless escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    negated = False
    if line.startswith("!"):
        negated, line = True, line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    only_dirs = line.endswith("/") and not line.endswith("\\/")
    if only_dirs:
        line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    if line.startswith("/"):
        line = line[1:]
    body = _gitignore_glob(line)
    regex = body if anchored else "(?:.*/)?" + body
    return re.compile(regex, re.DOTALL), negated, only_dirs


def _gitignore_glob(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            double = j - i == 2 and (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if double and j == n:
                out.append(".*")  # "/**" at the end: everything inside
                i = j
            elif double:
                out.append("(?:.*/)?")  # "**/": any number of folders, including none
                i = j + 1
            else:
                out.append("[^/]*")
                i = j
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end, cls = _bracket(pattern, i)
            if end < 0:
                out.append(re.escape(char))
                i += 1
            else:
                out.append(cls)
                i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _bracket(pattern: str, start: int) -> tuple[int, str]:
    """Translate a `[...]` class starting at `start`; returns (index of "]", regex) or (-1, "")."""
    i = start + 1
    negate = False
    if i < len(pattern) and pattern[i] in "!^":
        negate, i = True, i + 1
    members: list[str] = []
    first = True
    while i < len(pattern):
        char = pattern[i]
        if char == "]" and not first:
            body = "".join(members)
            return i, f"[^/{body}]" if negate else f"(?!/)[{body}]"
        if char == "\\" and i + 1 < len(pattern):
            members.append(re.escape(pattern[i + 1]))
            i += 2
        elif char == "-" and members and i + 1 < len(pattern) and pattern[i + 1] != "]":
            members.append("-")
            i += 1
        else:
            members.append(re.escape(char) if char not in "-" else "\\-")
            i += 1
        first = False
    return -1, ""


# -- a walk --


class Exclusions:
    """What a walk of a workspace folder leaves out: the Sublime folder and file patterns, the
    `.gitignore` rules in force (`use_gitignore`) and `.git` folders: always (`skip_git`, checkpoints)
    or only where `.gitignore` rules apply (`list_files`). A walk carries `(ignore, repo_rel)`: the
    rules in force and the path relative to their repository ("" or ending with "/")."""

    def __init__(
        self, folder_excludes: Sequence[str], file_excludes: Sequence[str], use_gitignore: bool, skip_git: bool
    ) -> None:
        self.folder_patterns = SublimePatterns.compile(folder_excludes)
        self.file_patterns = SublimePatterns.compile(file_excludes)
        self.use_gitignore = use_gitignore
        self.skip_git = skip_git

    def start(self, folder: str) -> tuple[GitIgnore | None, str]:
        """The rules in force in `folder`, where a walk starts (its own .gitignore included)."""
        if self.use_gitignore:
            repo = repository_root(folder)
            if repo is not None:
                return rules_for(folder, repo)
        return None, ""

    def entering(
        self, folder: str, names: Collection[str], ignore: GitIgnore | None, repo_rel: str
    ) -> tuple[GitIgnore | None, str]:
        """The rules for the entries of `folder`, a sub-folder the walk entered, whose listing is `names`."""
        if not self.use_gitignore:
            return ignore, repo_rel
        if ".git" in names:
            return rules_for(folder, folder)  # a nested repository: its own rules
        if ignore is not None and ".gitignore" in names:
            return ignore.entering(folder, repo_rel), repo_rel
        return ignore, repo_rel

    def excluded(self, name: str, path: str, rel: str, is_dir: bool, ignore: GitIgnore | None, repo_rel: str) -> bool:
        """Whether the entry `name` (at `path`; `rel` is its folder's folder-relative path) is left out."""
        if is_dir and name == ".git" and (self.skip_git or ignore is not None):
            return True
        patterns = self.folder_patterns if is_dir else self.file_patterns
        if not patterns.empty:
            absolute = path.replace(os.sep, "/") if patterns.needs_paths else ""
            if patterns.matches(name, absolute, rel + name):
                return True
        return ignore is not None and ignore.ignored(repo_rel + name, is_dir)
