"""First run and upgrades: what Package Control shows from messages.json."""

from __future__ import annotations

import os
import re

import pytest

from tests.sublime_fake import _plugin_host, _state, control, sublime

PACKAGE = f"Packages/{control.PACKAGE_NAME}"


def load(name: str) -> str:
    return sublime.load_resource(f"{PACKAGE}/{name}")


@pytest.fixture
def resources(editor: _state.Host) -> None:
    """The package's files as Sublime finds them (`Packages/Gemini Companion/...`); nothing is loaded."""
    _plugin_host.register_package(control.PACKAGE_NAME, control.REPO_ROOT)


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_messages_map_install_and_every_version_to_files_that_exist(resources: None) -> None:
    messages = sublime.decode_value(load("messages.json"))
    assert isinstance(messages, dict) and messages["install"] == "messages/install.txt"
    versions = [key for key in messages if key != "install"]
    assert versions and all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in versions)
    for key, target in messages.items():
        assert isinstance(target, str) and target.startswith("messages/") and target.endswith(".txt")
        assert os.path.isfile(os.path.join(control.REPO_ROOT, target)), target
        assert load(target).strip(), f"{target} is empty"
        if key != "install":
            assert target == f"messages/{key}.txt" and key in load(target)
    with open(os.path.join(control.REPO_ROOT, "companion", "__init__.py"), encoding="utf-8") as handle:
        current = re.search(r'__version__ = "([^"]+)"', handle.read())
    assert current is not None and current.group(1) in versions  # this release has its notes
    assert max(versions, key=version_key) == current.group(1)
    notes = sorted(f for f in os.listdir(os.path.join(control.REPO_ROOT, "messages")) if f != "install.txt")
    assert notes == sorted(f"{v}.txt" for v in versions)  # no release note that Package Control never shows


def test_install_message_explains_the_three_steps(resources: None) -> None:
    text = load("messages/install.txt")
    steps = re.findall(r"^\s*(\d)\.\s+(.*(?:\n(?!\s*\d\.)\s+.*)*)", text, re.MULTILINE)
    assert [number for number, _ in steps] == ["1", "2", "3"]
    folder, terminal, enable = (" ".join(body.split()) for _, body in steps)
    assert "Open a folder" in folder
    assert "Terminus" in terminal and "Package Control" in terminal and "any terminal" in terminal
    assert "/ide enable" in enable and "first time" in enable.lower()
