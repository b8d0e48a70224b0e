"""Gemini CLI's folder trust as the doctor reads it from the CLI's own files (the rules of 0.61.0,
cited in companion/mcp_tools/gemini_trust.py; test_ask_real_gemini.py checks the real CLI agrees)."""

from __future__ import annotations

import json
import os

import pytest

from companion import doctor
from companion.mcp_tools.gemini_trust import folder_trust
from tests.project.test_docs import anchors, every_problem, linked_entries, readme


@pytest.fixture
def home(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "home")
    os.makedirs(os.path.join(path, ".gemini"))
    return path


@pytest.fixture
def project(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "code", "project")
    os.makedirs(os.path.join(path, "sub"))
    return os.path.realpath(path)


def env_of(home: str, tmp_path: str, **extra: str) -> dict[str, str]:
    return {
        "GEMINI_CLI_HOME": home,
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.path.join(str(tmp_path), "no-system-settings.json"),
        **extra,
    }


def write_json(path: str, value: object) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle)


def rules(home: str, value: object) -> None:
    write_json(os.path.join(home, ".gemini", "trustedFolders.json"), value)


def test_no_file_or_no_rule_is_no_decision_yet(home: str, project: str, tmp_path: str) -> None:
    env = env_of(home, tmp_path)
    assert folder_trust(project, env).trusted is None
    rules(home, {os.path.join(str(tmp_path), "elsewhere"): "TRUST_FOLDER"})
    assert folder_trust(project, env).trusted is None


def test_the_longest_rule_holding_the_folder_decides(home: str, project: str, tmp_path: str) -> None:
    env = env_of(home, tmp_path)
    code = os.path.dirname(project)
    rules(home, {code: "TRUST_FOLDER", project: "DO_NOT_TRUST"})
    assert folder_trust(os.path.join(project, "sub"), env).trusted is False
    rules(home, {code: "DO_NOT_TRUST", project: "TRUST_FOLDER"})
    decided = folder_trust(os.path.join(project, "sub"), env)
    assert decided.trusted is True and project in decided.reason
    rules(home, {os.path.join(project, "sub"): "TRUST_PARENT"})  # trusts the rule's parent: the project
    assert folder_trust(project, env).trusted is True
    assert folder_trust(code, env).trusted is None


def test_the_environment_and_the_setting_come_first(home: str, project: str, tmp_path: str) -> None:
    rules(home, {project: "TRUST_FOLDER"})
    assert folder_trust(project, env_of(home, tmp_path, GEMINI_CLI_TRUST_WORKSPACE="false")).trusted is False
    assert folder_trust(project, env_of(home, tmp_path, GEMINI_RESTRICTED_MODE="true")).trusted is False
    rules(home, {})
    assert folder_trust(project, env_of(home, tmp_path, GEMINI_CLI_TRUST_WORKSPACE="true")).trusted is True
    write_json(os.path.join(home, ".gemini", "settings.json"), {"security": {"folderTrust": {"enabled": False}}})
    assert folder_trust(project, env_of(home, tmp_path)).trusted is True
    system = os.path.join(str(tmp_path), "system.json")  # system settings override the user's
    write_json(system, {"security": {"folderTrust": {"enabled": True}}})
    assert folder_trust(project, env_of(home, tmp_path, GEMINI_CLI_SYSTEM_SETTINGS_PATH=system)).trusted is None


def test_a_broken_rules_file_is_named(home: str, project: str, tmp_path: str) -> None:
    with open(os.path.join(home, ".gemini", "trustedFolders.json"), "w", encoding="utf-8") as handle:
        handle.write("{not json")
    broken = folder_trust(project, env_of(home, tmp_path))
    assert broken.trusted is False and "trustedFolders.json cannot be read" in broken.reason


def test_the_doctor_shows_the_first_folders_trust_and_links_the_readme_entry(
    home: str, project: str, tmp_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env_of(home, tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in ("GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_RESTRICTED_MODE", "GEMINI_CLI_TRUSTED_FOLDERS_PATH"):
        monkeypatch.delenv(name, raising=False)
    other = os.path.join(str(tmp_path), "other")
    facts = doctor.Facts(**{**every_problem().__dict__, "workspace_path": project + os.pathsep + other})

    text = doctor.report(doctor.with_disk_facts(facts))
    line = next(line for line in text.splitlines() if "ask_gemini fails there" in line)
    assert line.startswith(f"- Gemini CLI has not been told to trust {project} (no decision yet")
    assert "“Trust folder”" in line
    assert linked_entries(line) == ["ask_gemini-says-the-folder-is-not-trusted"]
    assert linked_entries(line)[0] in anchors(readme(), "Troubleshooting")

    rules(home, {project: "TRUST_FOLDER"})
    text = doctor.report(doctor.with_disk_facts(facts))
    assert f"- Gemini CLI trusts {project}, where ask_gemini runs (" in text
    assert "ask_gemini fails there" not in text
