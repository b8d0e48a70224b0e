"""Exclusion rules for `list_files` and checkpoints: Sublime's file patterns and git's `.gitignore`
(pure Python), and `Exclusions`, what a walk of a workspace folder applies of them.

Sublime file patterns (https://www.sublimetext.com/docs/file_patterns.html): without a `/` a
pattern is compared with the entry's name (`*` and `?` only); with a `/` it is compared with the
whole path: a single leading `/` makes it absolute, a leading `//` relative to the folder, otherwise
`*/` is implied in front; a `*` right after a leading `/`-less start or before a trailing `/*` may
match `/`; a trailing `/` makes it a folder pattern.

gitignore (https://git-scm.com/docs/gitignore), implemented here rather than by running `git` (not
installed everywhere Sublime is), as git's own `dir.c` and `wildmatch.c` read and match it: lines end
at LF (a CR before it is dropped), a UTF-8 byte-order mark at the start is skipped, blank lines and
`#` comments, trailing spaces (unless the last is escaped with `\\`), `!` negation (last matching
rule wins; a deeper `.gitignore` overrides a shallower one), `\\` escaping any character, a `/` at
the start or in the middle anchors the pattern to its file's folder, a trailing `/` matches folders
only, `*`, `?`, `[...]` (with `!`/`^` negation, ranges and the POSIX classes `[:digit:]` etc.),
`**/`, `/**` and `/**/`; a pattern git cannot match (an unclosed `[`, an unknown class, a trailing
`\\`) matches nothing. The files, weakest first: the user's global excludes (`core.excludesFile`
from `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`, or `$GIT_CONFIG_GLOBAL`; else
`$XDG_CONFIG_HOME/git/ignore`, `~/.config/git/ignore`), the repository's `info/exclude` (in its
common git folder, for a worktree or a submodule whose `.git` is a `gitdir:` file), then each
`.gitignore` from the repository's root down. An ignored folder is not entered, so nothing under
it can be re-included (as in git).
Not read: the system git config, `include`d config files, `core.ignoreCase` (matching is
case-sensitive, as git's default on Linux). Rule and config files are read only when they are
regular files (never a FIFO or a device), and only their first `MAX_RULES_BYTES`.
"""

from __future__ import annotations

import os
import re
import stat
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

MAX_RULES_BYTES = 4 * 1024 * 1024  # of one rule or config file: more is not read
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_BOM = "\ufeff"


def read_text(path: str) -> str | None:
    """The text of `path` when it is a regular file (a FIFO or a device is never waited on), its
    first MAX_RULES_BYTES; None when it cannot be read. Bytes that are not UTF-8 stay as the
    surrogates `os.fsdecode` gives the same bytes in a file name."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size < MAX_RULES_BYTES:
            chunk = os.read(fd, MAX_RULES_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class IgnoreFile:
    """The rules of one .gitignore (or info/exclude), for paths relative to its folder."""

    base: str  # the folder's path relative to the repository root, "" for the root, else "a/b/"
    rules: tuple[tuple[Wildmatch, bool, bool], ...]  # (pattern, negated, folders only)
    any_rule: _Either | None  # every rule at once, when no rule is negated
    file_rule: _Either | None  # the rules that also apply to files, when no rule is negated

    @classmethod
    def parse(cls, text: str, base: str = "") -> IgnoreFile:
        rules = []
        if text.startswith(_BOM):  # git skips a UTF-8 byte-order mark (an editor's on Windows)
            text = text[1:]
        for line in text.split("\n"):  # LF only, as git: a lone CR, FF or NEL is part of a pattern
            rule = _gitignore_rule(line[:-1] if line.endswith("\r") else line)
            if rule is not None:
                rules.append(rule)
        any_rule = file_rule = None
        if rules and not any(negated for _, negated, _ in rules):
            any_rule = _Either.of([w for w, _, _ in rules])
            file_rule = _Either.of([w for w, _, only_dirs in rules if not only_dirs])
        return cls(base, tuple(rules), any_rule, file_rule)

    @classmethod
    def read(cls, path: str, base: str = "") -> IgnoreFile | None:
        text = read_text(path)
        if text is None:
            return None
        parsed = cls.parse(text, base)
        return parsed if parsed.rules else None

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by a `!` rule) or None (no rule matches)."""
        if self.any_rule is not None:
            either = self.any_rule if is_dir else self.file_rule
            return True if either is not None and either.matches(path) else None
        for pattern, negated, only_dirs in reversed(self.rules):
            if only_dirs and not is_dir:
                continue
            if pattern.matches(path):
                return not negated
        return None


@dataclass(frozen=True)
class _Either:
    """Whether any of several rules matches: those with at most one star as one regular expression
    (one pass over the path for all of them, each alternative bounded), the others one by one."""

    combined: re.Pattern[str] | None
    others: tuple[Wildmatch, ...]

    @classmethod
    def of(cls, rules: list[Wildmatch]) -> _Either | None:
        if not rules:
            return None
        regexes = [r.path_regex for r in rules if r.path_regex is not None]
        combined = re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL) if regexes else None
        return cls(combined, tuple(r for r in rules if r.path_regex is None))

    def matches(self, path: str) -> bool:
        if self.combined is not None and self.combined.fullmatch(path):
            return True
        return any(rule.matches(path) for rule in self.others)


class GitIgnore:
    """The ignore files in force in one folder of a repository (weakest first: the global excludes,
    info/exclude, then each .gitignore from the root down)."""

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


def git_dirs(root: str) -> tuple[str, str]:
    """The git folder of the repository whose work tree is `root`, and its common git folder (where
    `info/exclude` lives): `root/.git` for both, unless `.git` is a file `gitdir: <path>` (a
    worktree, a submodule) naming another, whose `commondir` names the common one (a worktree)."""
    dot_git = os.path.join(root, ".git")
    text = None if os.path.isdir(dot_git) else read_text(dot_git)
    if text is None or not text.startswith("gitdir: "):
        return dot_git, dot_git
    git_dir = os.path.join(root, text[len("gitdir: ") :].rstrip("\r\n"))  # relative to the .git file
    common = read_text(os.path.join(git_dir, "commondir"))
    common_dir = os.path.join(git_dir, common.rstrip("\r\n")) if common and common.strip() else git_dir
    return os.path.normpath(git_dir), os.path.normpath(common_dir)


def home_folder() -> str | None:
    """The folder git takes for `~`: $HOME, else the system's idea of it (Windows: USERPROFILE)."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    return home if home and home != "~" else None


def user_config_files() -> list[str]:
    """The user's git config files, in the order git reads them (a later one wins); only
    `$GIT_CONFIG_GLOBAL` when it is set, as git."""
    chosen = os.environ.get("GIT_CONFIG_GLOBAL")
    if chosen:
        return [chosen]
    home, xdg = home_folder(), os.environ.get("XDG_CONFIG_HOME")
    found = []
    if xdg:
        found.append(os.path.join(xdg, "git", "config"))
    elif home:
        found.append(os.path.join(home, ".config", "git", "config"))
    if home:
        found.append(os.path.join(home, ".gitconfig"))
    return found


def global_excludes(root: str) -> str | None:
    """The user's global excludes file: `core.excludesFile` from the user's git config (`~/` and a
    path relative to the repository `root` resolved), else `$XDG_CONFIG_HOME/git/ignore` or
    `~/.config/git/ignore`. None when there is none (an empty `core.excludesFile`: none, as git)."""
    value = None
    for path in user_config_files():
        text = read_text(path)
        found = config_value(text, "core", "excludesfile") if text is not None else None
        value = found if found is not None else value
    home, xdg = home_folder(), os.environ.get("XDG_CONFIG_HOME")
    if value is None:
        if xdg:
            return os.path.join(xdg, "git", "ignore")
        return os.path.join(home, ".config", "git", "ignore") if home else None
    if not value or value.startswith("%("):
        return None
    if value == "~" or value.startswith("~/"):
        return os.path.join(home, value[2:]) if home else None
    if value.startswith("~"):
        expanded = os.path.expanduser(value)
        return expanded if not expanded.startswith("~") else None
    return os.path.join(root, value)


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(\s+"(?:[^"\\\n]|\\.)*")?\s*\]')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=?)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "b": "\b"}


def config_value(text: str, section: str, key: str) -> str | None:
    """The last value of `section.key` (lower case, no subsection) in git config `text`: sections,
    `#`/`;` comments, quotes, escapes and continued lines, as git reads them; include files are not
    followed. None when it is not set (a key with no `=`, git's boolean true, counts as not set)."""
    value: str | None = None
    current = ""
    i, n = 0, len(text)
    while i < n:
        header = _SECTION.match(text, i)
        if header is not None:
            current = header.group(1).lower() if header.group(2) is None else ""
            i = header.end()
            continue
        line_end = text.find("\n", i)
        line_end = n if line_end < 0 else line_end
        found = _KEY.match(text, i, line_end)
        if found is None or not found.group(2):
            i = line_end + 1  # a comment, a blank line, a key with no value, a malformed line
            continue
        parsed, i = _config_string(text, found.end())
        if current == section and found.group(1).lower() == key:
            value = parsed
    return value


def _config_string(text: str, i: int) -> tuple[str, int]:
    """A config value from `i` to its line's end (continued lines included); and where the next line starts."""
    out: list[str] = []
    spaces = 0
    quoted = False
    n = len(text)
    while i < n:
        char = text[i]
        i += 1
        if char == "\n" or (not quoted and char in "#;"):
            if char != "\n":
                end = text.find("\n", i)
                i = n if end < 0 else end + 1
            return "".join(out), i
        if char in " \t" and not quoted:
            spaces += 1 if out else 0
            continue
        out.append(" " * spaces)
        spaces = 0
        if char == '"':
            quoted = not quoted
        elif char == "\\" and i < n:
            follow = text[i]
            i += 1
            if follow == "\n":
                continue  # a continued line
            out.append(_ESCAPES.get(follow, ""))
        elif char != "\r":
            out.append(char)
    return "".join(out), n


def rules_for(folder: str, root: str) -> tuple[GitIgnore, str]:
    """The ignore rules in force in `folder` of the repository at `root`, and its repo-relative prefix."""
    files: list[IgnoreFile] = []
    user = global_excludes(root)
    for path in (user, os.path.join(git_dirs(root)[1], "info", "exclude")):
        found = IgnoreFile.read(path) if path is not None else None
        if found is not None:
            files.append(found)
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


def _trim_trailing_spaces(line: str) -> str:
    """git's trim_trailing_spaces: trailing spaces go, except one escaped by a backslash."""
    last_space = -1
    i, n = 0, len(line)
    while i < n:
        char = line[i]
        if char == " ":
            last_space = i if last_space < 0 else last_space
        elif char == "\\":
            i += 1
            if i == n:
                return line  # a trailing backslash: nothing trimmed (the pattern matches nothing)
            last_space = -1
        else:
            last_space = -1
        i += 1
    return line[:last_space] if last_space >= 0 else line


def _gitignore_rule(line: str) -> tuple[Wildmatch, bool, bool] | None:
    if not line or line.startswith("#"):
        return None
    line = _trim_trailing_spaces(line)
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    only_dirs = line.endswith("/")  # one slash: "a//" is the pattern "a/", which matches nothing
    if only_dirs:
        line = line[:-1]
    if not line:
        return None
    anchored = "/" in line
    if line.startswith("/"):
        line = line[1:]
    tokens = _wildmatch(line)
    if tokens is None:
        return None  # git can never match it
    return Wildmatch(tokens, anchored), negated, only_dirs


# The tokens of a compiled wildmatch pattern: one character each, except the stars.
# A literal is a one-character string; a class (`?`, `[...]`) a compiled one-character regex.
_STAR = "star"  # `*`: any run of characters but "/"
_ANY = "any"  # `**`: any run of characters
_FOLDERS = "folders"  # `**/`: any number of whole folders, including none
_STARS = (_STAR, _ANY, _FOLDERS)


class Wildmatch:
    """One pattern, matched as git's wildmatch (WM_PATHNAME) matches it, in time bounded by
    len(pattern) * len(path) whatever the pattern: a `.gitignore` is data from the workspace, and
    a regular expression with several stars (`*a*a*a*a*b`) backtracks for minutes.

    A pattern with at most one star keeps a regular expression (it cannot backtrack more than once
    per position); the others run a set-of-positions simulation (each path character advances every
    live pattern position at once, so nothing is ever retried)."""

    __slots__ = ("_name_only", "_needles", "_regex", "_tokens", "path_regex")

    def __init__(self, tokens: list[str | re.Pattern[str]], anchored: bool) -> None:
        # Without a "/" the pattern can only match the last name (nothing in it matches a "/").
        self._name_only = not anchored
        self._tokens = tuple(tokens)
        # The runs of literal characters a match must contain: most paths lack one (a quick no).
        runs = "".join(t if isinstance(t, str) and t not in _STARS else "\0" for t in tokens)
        self._needles = tuple(run for run in runs.split("\0") if run)
        stars = sum(1 for token in tokens if token in _STARS)
        self._regex = re.compile(_regex(tokens), re.DOTALL) if stars <= 1 else None
        # The same against the whole path (for `_Either`): a name-only pattern after any folders.
        # Its one star cannot match a "/", so the folders' `.*` and it never retry each other's work.
        self.path_regex: str | None = None
        if self._regex is not None:
            self.path_regex = ("(?:.*/)?" if self._name_only else "") + self._regex.pattern

    def matches(self, path: str) -> bool:
        if self._name_only:
            path = path[path.rfind("/") + 1 :]
        if self._regex is not None:
            return self._regex.fullmatch(path) is not None
        if not all(needle in path for needle in self._needles):
            return False
        return _simulate(self._tokens, path)

    def __eq__(self, other: object) -> bool:  # the same rules on the next scan: its listings hold
        if not isinstance(other, Wildmatch):
            return NotImplemented
        return self._tokens == other._tokens and self._name_only == other._name_only

    def __hash__(self) -> int:
        return hash((self._tokens, self._name_only))


def _regex(tokens: list[str | re.Pattern[str]]) -> str:
    parts = []
    for token in tokens:
        if isinstance(token, re.Pattern):
            parts.append(token.pattern)
        elif token == _STAR:
            parts.append("[^/]*")
        elif token == _ANY:
            parts.append(".*")
        elif token == _FOLDERS:
            parts.append("(?:.*/)?")
        else:
            parts.append(re.escape(token))
    return "".join(parts)


def _simulate(tokens: tuple[str | re.Pattern[str], ...], path: str) -> bool:
    """Whether `tokens` match all of `path`: the live pattern positions after each character. A
    `**/` has a second state, `inside` (some of its folders read): it ends only after a "/"."""
    n = len(tokens)
    live = _closure(tokens, [True] + [False] * n)
    inside = [False] * n
    for char in path:
        after, now_inside = [False] * (n + 1), [False] * n
        for i in range(n):
            token = tokens[i]
            if inside[i] or (live[i] and token == _FOLDERS):
                now_inside[i] = True
                if char == "/":
                    after[i + 1] = True
            if not live[i] or token == _FOLDERS:
                continue
            if token == _STAR:
                if char != "/":
                    after[i] = True
            elif token == _ANY:
                after[i] = True
            elif isinstance(token, str):
                if char == token:
                    after[i + 1] = True
            elif token.fullmatch(char):
                after[i + 1] = True
        if not any(after) and not any(now_inside):
            return False
        live, inside = _closure(tokens, after), now_inside
    return live[n]


def _closure(tokens: tuple[str | re.Pattern[str], ...], live: list[bool]) -> list[bool]:
    """Add the positions reached by a star matching nothing (stars only lead forward)."""
    for i, token in enumerate(tokens):
        if live[i] and token in _STARS:
            live[i + 1] = True
    return live


def _wildmatch(pattern: str) -> list[str | re.Pattern[str]] | None:
    """git's wildmatch (with WM_PATHNAME) of `pattern` as tokens, or None when git can never match
    it (an unclosed `[`, an unknown `[:class:]`, a trailing backslash)."""
    out: list[str | re.Pattern[str]] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            slash_after = j == n or pattern[j] == "/" or pattern[j : j + 2] == "\\/"
            double = j - i >= 2 and (i == 0 or pattern[i - 1] == "/") and slash_after
            if double and j == n:
                out.append(_ANY)  # "/**" at the end: everything inside
                i = j
            elif double and pattern[j] == "/":
                out.append(_FOLDERS)  # "**/": any number of folders, including none
                i = j + 1
            else:
                out.append(_ANY if double else _STAR)
                i = j
        elif char == "?":
            out.append(_ONE)
            i += 1
        elif char == "[":
            end, cls = _bracket(pattern, i)
            if end < 0:
                return None
            out.append(re.compile(cls, re.DOTALL))
            i = end + 1
        elif char == "\\":
            if i + 1 == n:
                return None
            out.append(pattern[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return out


_ONE = re.compile("[^/]")  # "?"


# The POSIX classes, as git's wildmatch has them (ASCII only, git's own `isspace`).
_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


def _bracket(pattern: str, start: int) -> tuple[int, str]:
    """Translate a `[...]` class starting at `start`, as wildmatch reads it; returns (index of its
    "]", regex), or (-1, "") when git can never match it."""
    i, n = start + 1, len(pattern)
    negate = i < n and pattern[i] in "!^"
    if negate:
        i += 1
    members: list[str] = []
    previous = ""  # the last single character, the start of a range ("" after a range or a class)
    while True:
        if i >= n:
            return -1, ""
        char = pattern[i]
        if char == "]" and i > start + 1 + negate:
            break
        if char == "\\":
            if i + 1 >= n:
                return -1, ""
            char = pattern[i + 1]
            members.append(re.escape(char))
            previous, i = char, i + 2
            continue
        if char == "-" and previous and i + 1 < n and pattern[i + 1] != "]":
            high, i = pattern[i + 1], i + 2
            if high == "\\":
                if i >= n:
                    return -1, ""
                high, i = pattern[i], i + 1
            if previous <= high:
                members.append(f"{re.escape(previous)}-{re.escape(high)}")
            previous = ""
            continue
        if char == "[" and pattern[i + 1 : i + 2] == ":":
            close = pattern.find("]", i + 2)
            if close < 0:
                return -1, ""
            name = pattern[i + 2 : close]
            if name.endswith(":"):
                members_of = _CLASSES.get(name[:-1])
                if members_of is None:
                    return -1, ""  # an unknown class: git matches nothing
                members.append(members_of)
                previous, i = "", close + 1
                continue
        members.append(re.escape(char))
        previous, i = char, i + 1
    body = "".join(members)
    if negate:
        return i, f"[^/{body}]"
    return i, f"(?!/)[{body}]" if body else "(?!)"


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
