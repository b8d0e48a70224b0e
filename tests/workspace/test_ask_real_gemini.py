"""ask_gemini against the real `gemini` (@google/gemini-cli 0.61.0 from the conformance setup), headless,
with recorded model responses (`--fake-responses-non-strict`) and a private home: no network."""

from __future__ import annotations

import os

import pytest

from companion.workspace.ask import GeminiFailed, ask_gemini
from tests.conformance.harness import PINNED, make_gemini_home, node, recorded_turns, require_node_modules

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
