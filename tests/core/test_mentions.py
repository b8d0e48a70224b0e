"""`@path` mentions (core/mentions.py): what a prompt's text names, and the one-path check that
must agree with the `list_files` walk (core/files/listed.py) — a file the listing hides is never
attached because someone typed its name."""

from __future__ import annotations

import os
from typing import Any

import pytest

from companion.core.context import SharingPolicy
from companion.core.files.listed import left_out
from companion.core.files.listing import ListOptions, list_files
from companion.core.files.paths import PathPolicy
from companion.core.mentions import MentionRules, attachments, find, symbol_lines


def test_a_mention_starts_a_word_and_ends_before_trailing_punctuation() -> None:
    found = find("see @notes.txt, (@src/my\\ file.py#L3-9) mail me@example.com or @@x @ alone @a#L5.")
    assert [(m.token, m.path, m.lines) for m in found] == [
        ("@notes.txt", "notes.txt", None),
        ("@src/my\\ file.py#L3-9", "src/my file.py", (3, 9)),
        ("@@x", "@x", None),
        ("@a#L5", "a", (5, 5)),
    ]


def write(path: str, text: str = "x\n") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


@pytest.fixture
def tree(tmp_path: Any) -> str:
    root = os.path.realpath(str(tmp_path / "root"))
    for name in ("a.txt", "build/out.txt", "src/keep.py", "src/gen/made.py", "vendor/lib/x.py", "sub/inner.log"):
        write(os.path.join(root, name))
    write(os.path.join(root, "sub", "kept.txt"))
    write(os.path.join(root, ".gitignore"), "build/\n*.log\n")
    write(os.path.join(root, "src", ".gitignore"), "gen/\n")
    os.makedirs(os.path.join(root, ".git"))
    os.makedirs(os.path.join(root, "vendor", ".git"))  # a nested repository: its own rules, none
    write(os.path.join(root, "vendor", "lib", ".gitignore"), "x.py\n")
    return root


@pytest.mark.parametrize("use_gitignore", [True, False])
def test_left_out_agrees_with_the_list_files_walk_for_every_file(tree: str, use_gitignore: bool) -> None:
    options = ListOptions(folder_excludes=("sub",), file_excludes=("*.py",), use_gitignore=use_gitignore)
    listed = set(list_files(PathPolicy([tree]), options).entries)
    for folder, _dirs, names in os.walk(tree):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, tree).replace(os.sep, "/")
            if rel.startswith(".git/"):
                continue
            assert left_out(options, tree, path) == (rel not in listed), rel


def test_attachments_refuse_excluded_and_outside_and_leave_unknown_as_text(tree: str) -> None:
    rules = MentionRules((tree,), ListOptions(use_gitignore=True), SharingPolicy())
    write(os.path.join(tree, ".env"), "TOKEN=1\n")
    found, refused = attachments(rules, "@a.txt @.env @build/out.txt @../elsewhere @nobody @src/ @a.txt")
    assert [(m.path, m.lines) for m in found] == [(os.path.join(tree, "a.txt"), None)]
    assert [r.split(" was not attached")[0] for r in refused] == ["@.env", "@build/out.txt", "@../elsewhere"]


def test_a_symbols_lines_run_to_the_end_of_its_indented_block() -> None:
    python = "a = 1\nclass Foo:\n    x = 1\n\n    def f(self):\n        pass\nb = 2\n"
    braces = "function g() {\n  return 1;\n}\nh();\n"
    assert symbol_lines(python, 2) == (2, 6)
    assert symbol_lines(braces, 1) == (1, 3)
    assert symbol_lines(python, 7) == (7, 7)
    assert symbol_lines(python, 99) == (99, 99)
