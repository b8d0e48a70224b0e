"""The package's settings file, its schema (sublime-package.json, which LSP-json uses for completion and
validation in Preferences › Package Settings) and the code's own defaults say the same thing."""

from __future__ import annotations

import json
import os
import re

from companion.core.context import DEFAULT_EXCLUDES
from tests.sublime_fake import control, sublime

SETTINGS_FILE = os.path.join(control.REPO_ROOT, "Gemini Companion.sublime-settings")
SCHEMA_FILE = os.path.join(control.REPO_ROOT, "sublime-package.json")


def settings_text() -> str:
    with open(SETTINGS_FILE, encoding="utf-8") as handle:
        return handle.read()


def schema_properties() -> dict[str, dict[str, object]]:
    with open(SCHEMA_FILE, encoding="utf-8") as handle:
        schema = json.load(handle)
    (entry,) = schema["contributions"]["settings"]
    assert entry["file_patterns"] == ["/Gemini Companion.sublime-settings"]
    return entry["schema"]["properties"]


def test_every_setting_has_a_schema_entry_with_the_same_default_and_a_description() -> None:
    shipped = sublime.decode_value(settings_text())
    assert isinstance(shipped, dict)
    properties = schema_properties()
    assert sorted(properties) == sorted(shipped)
    for key, value in shipped.items():
        assert properties[key].get("default") == value, key
        assert properties[key].get("markdownDescription"), key


def test_the_shipped_context_exclusions_are_the_codes_defaults() -> None:
    shipped = sublime.decode_value(settings_text())
    assert isinstance(shipped, dict)
    assert shipped["context_exclude"] == list(DEFAULT_EXCLUDES)


def test_every_setting_is_explained_by_a_comment_just_above_it() -> None:
    lines = settings_text().splitlines()
    keys = [(i, m.group(1)) for i, line in enumerate(lines) if (m := re.match(r'^\t"(\w+)":', line))]
    assert keys, "no settings found"
    for index, key in keys:
        above = lines[index - 1].strip()
        assert above.startswith("//"), f"{key} has no comment right above it"
