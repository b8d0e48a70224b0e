"""The doctor in a Sublime window says whether Gemini CLI trusts the folder ask_gemini runs in, from
the CLI's own trustedFolders.json in a scratch GEMINI_CLI_HOME (read off the main thread)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.sublime_editor.conftest import Companion
from tests.sublime_fake import control
from tests.workflow.test_status_doctor import doctor_text


def test_the_doctor_shows_gemini_clis_trust_of_the_windows_first_folder(
    companion: Companion, workspace: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = os.path.join(str(tmp_path), "gemini-home")
    os.makedirs(os.path.join(home, ".gemini"))
    monkeypatch.setenv("GEMINI_CLI_HOME", home)
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", os.path.join(str(tmp_path), "no-system-settings.json"))
    for name in ("GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_RESTRICTED_MODE", "GEMINI_CLI_TRUSTED_FOLDERS_PATH"):
        monkeypatch.delenv(name, raising=False)
    window = control.new_window([workspace])
    companion.load()
    companion.ready(window)

    _view, text = doctor_text(window)
    assert f"- Gemini CLI has not been told to trust {workspace} (no decision yet" in text
    assert "ask_gemini fails there until you run `gemini` in that folder once and choose “Trust folder”." in text
    assert "#ask_gemini-says-the-folder-is-not-trusted" in text

    with open(os.path.join(home, ".gemini", "trustedFolders.json"), "w", encoding="utf-8") as handle:
        json.dump({workspace: "DO_NOT_TRUST"}, handle)  # the user chose "Don't trust"
    _view, text = doctor_text(window)
    assert f"- Gemini CLI does not trust {workspace} (" in text and "DO_NOT_TRUST" in text

    with open(os.path.join(home, ".gemini", "trustedFolders.json"), "w", encoding="utf-8") as handle:
        json.dump({workspace: "TRUST_FOLDER"}, handle)
    _view, text = doctor_text(window)
    assert f"- Gemini CLI trusts {workspace}, where ask_gemini runs (" in text
    assert "ask_gemini fails there" not in text
