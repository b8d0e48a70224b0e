"""The real `gemini` binary (@google/gemini-cli, pinned and oldest) writing a file through a review in the companion.

Why a pseudo-terminal and interactive mode, with the default approval mode:
- The CLI routes a change through the IDE's diff only while it asks the user to confirm that tool
  call: `WriteFileTool.getConfirmationDetails` calls `ideClient.openDiff` when
  `config.getIdeMode() && ideClient.isDiffingEnabled()`, and the scheduler races that promise
  against the terminal's own confirmation (`waitForConfirmation`); an IDE `accepted` proceeds with
  the IDE's content as the new file text, `rejected` cancels.
- A confirmation is only asked for when the policy says `ask_user`. In non-interactive mode
  (`-p`, or no TTY, or CI=true) the bundled `policies/non-interactive.toml` denies `write_file`,
  and the tool is not even registered: run with `-p`, the recorded `write_file` call ends in
  "Tool "write_file" not found" and no review is shown. With `--approval-mode auto_edit` or `yolo`
  (`policies/write.toml`, `yolo.toml`) the write is allowed outright: run with `-p --approval-mode
  yolo`, the file is written with no review at all. So the IDE diff path needs interactive mode
  with `--approval-mode default`, and interactive mode needs a TTY: hence the pty.
- The prompt is typed only after `/ide status` says "Connected to Sublime Text". The CLI connects
  to the IDE in the background (`initializeApp` does not await `ideClient.connect()`), so a first
  prompt given with `-i PROMPT` races the connection: without GEMINI_CLI_IDE_PID the client first
  walks its process tree with `ps`, loses that race, and the write is confirmed in the terminal
  with no review in the editor (observed). A user typing at the prompt never hits this.
- CI and GITHUB_ACTIONS are removed from the CLI's environment: `isHeadlessMode()` is true when
  either is "true", whatever the flags.

Model responses are recorded (`--fake-responses-non-strict FILE`: one JSON line per model call,
`{"method": "generateContentStream", "response": [...]}`, read by FakeContentGenerator.fromFile;
non-strict takes the next line recorded for the method asked): first a `write_file` call, then
"Done.", the answer to the tool result, which the CLI only sends after writing the file.
`-m` names a concrete model so the router does not ask the (absent) recorded classifier.
The CLI finds the companion like it does under Terminus: TERM_PROGRAM=Terminus-Sublime, a private
TMPDIR shared with the in-process companion, and no GEMINI_CLI_IDE_PID (it walks its own process
tree; the file is chosen because the workspace contains its cwd). Review outcomes are decided by
the scripted user through the Editor port.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from tests.conformance.harness import (
    DecidingEditor,
    GeminiTerminal,
    HeadlessCompanion,
    Release,
    accept,
    isolate_tmpdir,
    make_gemini_home,
    recorded_turns,
    reject,
    write_file_call,
)

pytestmark = pytest.mark.conformance


class Setup:
    def __init__(
        self, base: str, workspace: str, editor: DecidingEditor, companion: HeadlessCompanion, release: Release
    ) -> None:
        self.base = base
        self.release = release
        self.workspace = workspace
        self.editor = editor
        self.companion = companion
        self.home = make_gemini_home(os.path.join(base, "home"))

    def gemini(self, target: str, proposal: str) -> GeminiTerminal:
        responses = os.path.join(self.base, "responses.jsonl")
        with open(responses, "w", encoding="utf-8") as handle:
            handle.write(recorded_turns([write_file_call(target, proposal)], [{"text": "Done."}]))
        env = self.companion.client_env(
            {
                "GEMINI_CLI_HOME": self.home,
                "HOME": self.home,
                "GEMINI_API_KEY": "fake",
                "SSH_CONNECTION": "x",
                "TERM": "xterm-256color",
                "COLUMNS": "120",
                "LINES": "40",
            },
            with_pid=False,
        )
        for name in ("CI", "GITHUB_ACTIONS", "NO_COLOR", "GEMINI_CLI_NO_RELAUNCH"):
            env.pop(name, None)
        argv = [
            "--fake-responses-non-strict",
            responses,
            "--approval-mode",
            "default",
            "-m",
            "gemini-2.5-flash",
        ]
        return GeminiTerminal(argv, self.workspace, env, release=self.release)

    def ask(self, gemini: GeminiTerminal, prompt: str) -> int:
        """Wait for the CLI's IDE connection, then type `prompt` and press Enter."""
        gemini.wait_ide_connected("Sublime Text")
        gemini.type(prompt)
        return gemini.submit()


@pytest.fixture
def setup(tmp_path: str, monkeypatch: pytest.MonkeyPatch, release: Release) -> Iterator[Setup]:
    base = str(tmp_path)
    isolate_tmpdir(monkeypatch, os.path.join(base, "tmp"))
    workspace = os.path.realpath(os.path.join(base, "project"))
    os.makedirs(workspace)
    editor = DecidingEditor()
    with HeadlessCompanion([workspace], editor) as companion:
        yield Setup(base, workspace, editor, companion, release)


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def test_accepted_in_the_editor_the_cli_writes_the_reviewed_text_with_the_users_edit(setup: Setup) -> None:
    target = os.path.join(setup.workspace, "hello.txt")
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("original\n")
    setup.editor.decide("hello.txt", accept(lambda proposal: proposal + "and a line the user added in Sublime\n"))
    with setup.gemini(target, "hello from the model\n") as gemini:
        start = setup.ask(gemini, "Please write hello.txt.")
        gemini.wait_until(lambda: bool(setup.editor.shown), "the review in the editor")
        review = setup.editor.shown[0][0]
        assert (review.file_path, review.proposal) == (target, "hello from the model\n")
        # "Done." is the model's answer to the tool result, which the CLI sends after writing.
        gemini.wait_text("Done.", start=start)
        assert "Accepted" in gemini.screen_text(start)
        assert read(target) == "hello from the model\nand a line the user added in Sublime\n"
    assert len(setup.editor.shown) == 1


def test_rejected_in_the_editor_the_file_stays_as_it_was(setup: Setup) -> None:
    target = os.path.join(setup.workspace, "keep.txt")
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("precious\n")
    setup.editor.decide("keep.txt", reject())
    with setup.gemini(target, "overwritten by the model\n") as gemini:
        start = setup.ask(gemini, "Please write keep.txt.")
        gemini.wait_until(lambda: bool(setup.editor.shown), "the review in the editor")
        assert setup.editor.shown[0][0].proposal == "overwritten by the model\n"
        # The tool call ends as cancelled (shown as Rejected) and is never executed.
        gemini.wait_text("Rejected", start=start)
        gemini.wait_text("Request cancelled.", start=start)
        assert read(target) == "precious\n"


def test_the_installed_cli_and_core_are_the_release_its_package_json_pins(release: Release) -> None:
    for package in (release.cli_dir, release.core_dir):
        with open(os.path.join(package, "package.json"), encoding="utf-8") as handle:
            assert json.load(handle)["version"] == release.version, package
