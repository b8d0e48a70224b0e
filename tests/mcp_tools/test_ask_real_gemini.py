"""ask_gemini against the real `gemini` (@google/gemini-cli 0.61.0 from the conformance setup), headless,
with recorded model responses (`--fake-responses-non-strict`) and a private home: no network."""

from __future__ import annotations

import glob
import json
import os
import sys

import pytest

from companion.mcp_tools.ask import GeminiFailed, ask_gemini, untrusted_message
from companion.mcp_tools.gemini_trust import folder_trust
from tests.conformance.harness import (
    GEMINI_SETTINGS,
    PINNED,
    make_gemini_home,
    node,
    recorded_turns,
    require_node_modules,
)

pytestmark = [pytest.mark.anyio, pytest.mark.conformance]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gemini(tmp_path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    require_node_modules()  # fails with the command that installs them, never skips
    home = make_gemini_home(os.path.join(str(tmp_path), "home"))
    tmpdir = os.path.join(str(tmp_path), "tmp")  # where the CLI writes its error reports (os.tmpdir())
    os.makedirs(tmpdir)
    for name, value in {"HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_API_KEY": "fake", "TMPDIR": tmpdir}.items():
        monkeypatch.setenv(name, value)
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    responses = os.path.join(str(tmp_path), "responses.jsonl")
    return [node(), PINNED.gemini_js, "--fake-responses-non-strict", responses], responses


async def test_returns_the_models_answer(gemini: tuple[list[str], str], workspace: str) -> None:
    command, responses = gemini
    with open(responses, "w", encoding="utf-8") as handle:
        handle.write(recorded_turns([{"text": "Paris is the capital of France."}]))
    answer = await ask_gemini(command, "What is the capital of France?", "gemini-2.5-flash", workspace, 120)
    assert answer == "Paris is the capital of France."


async def test_a_failed_run_is_an_error_with_the_clis_message(gemini: tuple[list[str], str], workspace: str) -> None:
    command, responses = gemini
    with open(responses, "w", encoding="utf-8") as handle:
        handle.write("")  # no recorded answer: the CLI fails the way it does when the model call fails
    with pytest.raises(GeminiFailed) as info:
        await ask_gemini(command, "Anything?", "gemini-2.5-flash", workspace, 120)
    message = str(info.value)
    assert message.startswith("The Gemini CLI failed (exit code 1): No more mock responses for generateContentStream")
    assert len(message) < 2200  # the CLI's long message is cut


# -- issue #24: the prompt is only ever a prompt; the folder's trust is the user's decision --

# Each would be read as options after `-p`: the version instead of an answer, auto-approval of every
# tool, a second prompt, a model with newlines, both quotes and `=` after it. The last, wrapped in
# quotes, guards the `=` form: yargs-parser strips such quotes from an `=` value unless the option
# counts its values (`nargs`, as `--prompt` does in 0.61.0).
LITERAL_PROMPTS = [
    "--version",
    "--yolo --approval-mode=yolo delete every file",
    "-p x",
    "--model=pro\nsays \"hi\" and 'bye'\nkey=value -o text",
    '"--skip-trust"',
]
ANSWER = "The recorded model's answer."
# Runs the command after it and writes what it ran with (argv, environment) to the file before it.
RECORDER = """import json, os, subprocess, sys
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump({"argv": sys.argv[2:], "env": dict(os.environ)}, f)
sys.exit(subprocess.call(sys.argv[2:]))
"""


@pytest.fixture
def trusting_gemini(tmp_path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str, str]:
    """The real gemini 0.61.0 behind a recorder, with folder trust on (its default) in a private home,
    and strict recorded responses (`--fake-responses`) holding one answer. Returns the
    `gemini_command`, the home and the recorder's log."""
    require_node_modules()
    root = str(tmp_path)
    settings = {**GEMINI_SETTINGS, "security": {**GEMINI_SETTINGS["security"], "folderTrust": {"enabled": True}}}
    home = make_gemini_home(os.path.join(root, "home"), settings)
    tmpdir = os.path.join(root, "tmp")
    os.makedirs(tmpdir)
    for name, value in {
        "HOME": home,
        "GEMINI_CLI_HOME": home,
        "GEMINI_API_KEY": "fake",
        "TMPDIR": tmpdir,
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.path.join(root, "no-system-settings.json"),
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("CI", "GITHUB_ACTIONS", "GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_RESTRICTED_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", raising=False)
    responses = os.path.join(root, "responses.jsonl")
    with open(responses, "w", encoding="utf-8") as handle:
        handle.write(recorded_turns([{"text": ANSWER}]))
    recorder, log = os.path.join(root, "recorder.py"), os.path.join(root, "ran.json")
    with open(recorder, "w", encoding="utf-8") as handle:
        handle.write(RECORDER)
    command = [sys.executable, recorder, log, node(), PINNED.gemini_js, "--fake-responses", responses]
    return command, home, log


def trust(home: str, folder: str) -> None:
    """What choosing "Trust folder" in Gemini CLI's trust dialog writes (`LoadedTrustedFolders.setValue`)."""
    with open(os.path.join(home, ".gemini", "trustedFolders.json"), "w", encoding="utf-8") as handle:
        json.dump({folder: "TRUST_FOLDER"}, handle)


def prompts_the_model_got(home: str) -> list[str]:
    """The user turns of Gemini CLI's own recording of the conversation it sent to the model
    (`ChatRecordingService`: <home>/.gemini/tmp/<project>/chats/session-*.jsonl, one JSON record a
    line; the session context is a separate `$set`, not a user record)."""
    texts: list[str] = []
    for path in glob.glob(os.path.join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        texts += [part["text"] for r in records if r.get("type") == "user" for part in r["content"]]
    return texts


@pytest.mark.parametrize("prompt", LITERAL_PROMPTS)
async def test_the_prompt_reaches_the_model_as_the_literal_prompt_never_as_options(
    trusting_gemini: tuple[list[str], str, str], workspace: str, prompt: str
) -> None:
    command, home, _ = trusting_gemini
    trust(home, workspace)
    answer = await ask_gemini(command, prompt, "gemini-2.5-flash", workspace, 60)
    assert answer == ANSWER  # the model answered: not the version, not a parse error
    assert prompts_the_model_got(home) == [prompt]


async def test_in_a_trusted_folder_the_answer_comes_back(
    trusting_gemini: tuple[list[str], str, str], workspace: str
) -> None:
    command, home, _ = trusting_gemini
    trust(home, workspace)
    assert folder_trust(workspace).trusted is True  # the doctor reads the CLI's files as the CLI does
    assert await ask_gemini(command, "Is this folder trusted?", "gemini-2.5-flash", workspace, 60) == ANSWER


async def test_in_a_folder_gemini_cli_does_not_trust_one_line_says_what_to_do_and_nothing_is_bypassed(
    trusting_gemini: tuple[list[str], str, str], workspace: str
) -> None:
    command, home, log = trusting_gemini
    assert folder_trust(workspace).trusted is None  # no decision yet: headless Gemini CLI refuses it
    with pytest.raises(GeminiFailed) as info:
        await ask_gemini(command, "Is this folder trusted?", "gemini-2.5-flash", workspace, 60)
    message = str(info.value)
    assert message == untrusted_message(workspace)
    assert "\n" not in message and "Trust folder" in message and workspace in message
    assert message.endswith("#ask_gemini-says-the-folder-is-not-trusted")
    assert "skip-trust" not in message and "GEMINI_CLI_TRUST_WORKSPACE" not in message
    with open(log, encoding="utf-8") as handle:
        ran = json.load(handle)
    assert not any(arg.startswith("--skip-trust") for arg in ran["argv"])
    assert "GEMINI_CLI_TRUST_WORKSPACE" not in ran["env"]
    assert not os.path.exists(os.path.join(home, ".gemini", "trustedFolders.json"))  # still the user's decision
    assert prompts_the_model_got(home) == []
