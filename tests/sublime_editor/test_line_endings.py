"""Line endings through the Sublime review and the buffer write-through (issue #27), over random
texts with LF, CRLF, CR, mixed and no final break. Sublime holds every break as "\\n": what an
accepted review sends back (Gemini's `ide/diffAccepted`, Claude's `FILE_SAVED`, an ACP edit's final
text) is the proposal with its own breaks, the user's edits included; a text written through an
open buffer is saved with the buffer's convention, never with a stray CR."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from companion.core.files.textfile import dominant_newline
from tests.line_endings import Case, as_lf, assert_written_as_reviewed, cases
from tests.sublime_editor.conftest import Companion, ThreadedClient, pkg, write
from tests.sublime_editor.test_claude import ThreadedClaude, claude, open_diff
from tests.sublime_fake import control, sublime

__all__ = ["claude"]  # the fixture, from test_claude


def text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def proposal_view(window: sublime.Window) -> sublime.View:
    return control.pump_until(
        lambda: next((v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"), None),
        30,
        "the review",
    )


def test_an_accepted_review_sends_the_proposal_with_its_own_line_breaks(
    companion: Companion, clients: Callable[..., ThreadedClient], workspace: str
) -> None:
    """Gemini CLI's openDiff: the proposal (`case.reviewed`, any breaks) is shown with "\\n" and
    comes back as it was, or with the user's added line ending like the proposal's lines do."""
    window = control.new_window([workspace])
    companion.load()
    client = clients(window)

    @example(case=Case(original="\r\r", reviewed="\n\r\r"), edited=True)  # once read "# mine\r\n" as one break
    @given(case=cases(), edited=st.booleans())
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(case: Case, edited: bool) -> None:
        path = write(workspace, "f.txt", case.original)
        before = len(client.received("ide/diffAccepted"))
        client.open_diff(path, case.reviewed)
        proposal = proposal_view(window)
        assert text(proposal) == as_lf(case.reviewed)
        expected = case.reviewed
        if edited:
            control.select(proposal, 0)
            control.type_text(proposal, "# mine\n")
            expected = "# mine\n" + case.reviewed  # not the dominant break: "\r" + a leading "\n" reads as one CRLF
        assert control.run_from_palette(window, "gemini_companion_apply")
        control.pump_until(lambda: len(client.received("ide/diffAccepted")) > before, 30, "ide/diffAccepted")
        content = client.received("ide/diffAccepted")[before].params["content"]
        if not edited:
            assert content == case.reviewed  # exactly the agent's text
        assert_written_as_reviewed(case.reviewed, expected, content, dominant_newline(case.reviewed))
        control.settle()

    check()


def test_claudes_accepted_review_gets_the_proposal_with_its_own_line_breaks(
    companion: Companion, claude: Callable[[sublime.Window], ThreadedClaude], workspace: str
) -> None:
    """Claude Code's openDiff: FILE_SAVED with the proposal as it came, or with the user's line."""
    window = control.new_window([workspace])
    companion.load()
    client = claude(window)

    @example(case=Case(original="\r\r", reviewed="\n\r\r"), edited=True)  # once read "# mine\r\n" as one break
    @given(case=cases(), edited=st.booleans())
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(case: Case, edited: bool) -> None:
        path = write(workspace, "c.txt", case.original)
        answer = open_diff(client, path, case.reviewed)
        proposal = proposal_view(window)
        expected = case.reviewed
        if edited:
            control.select(proposal, 0)
            control.type_text(proposal, "# mine\n")
            expected = "# mine\n" + case.reviewed  # not the dominant break: "\r" + a leading "\n" reads as one CRLF
        assert control.run_from_palette(window, "gemini_companion_apply")
        saved, content = client.result(answer)
        assert saved == "FILE_SAVED"
        if not edited:
            assert content == case.reviewed
        assert_written_as_reviewed(case.reviewed, expected, content, dominant_newline(case.reviewed))
        control.settle()

    check()


def run_beside_the_main_thread(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run `coroutine` on a loop of its own thread while the fake's main thread is pumped."""
    result: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            result.append(asyncio.run(coroutine))
        except BaseException as exc:  # surfaced to the test below
            result.append(exc)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    control.pump_until(done.is_set, 30, "the write through the buffer")
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def test_a_text_written_through_the_open_buffer_is_saved_with_the_buffers_breaks(
    companion: Companion, workspace: str
) -> None:
    """What fs/write_text_file and write_file do for an open file: the accepted text (any breaks,
    an ACP agent's raw CRLF or CR included) goes into the buffer as Sublime holds it, and the save
    writes the buffer's own line endings."""
    window = control.new_window([workspace])
    companion.load()
    editor = pkg("sublime_editor.editor").SublimeEditor(pkg("sublime_editor.review_ui").WindowReviews(window))
    names = itertools.count()

    @given(case=cases())
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(case: Case) -> None:
        path = write(workspace, f"open{next(names)}.txt", case.original)
        view = control.open_file(window, path)
        saved = run_beside_the_main_thread(editor.write_through_buffer(path, case.reviewed))
        assert text(view) == as_lf(case.reviewed)
        newline = {"Windows": "\r\n", "CR": "\r"}.get(view.line_endings(), "\n")
        assert saved == newline  # the break it reports is the one its save stored (turn_writes checks it)
        with open(path, "rb") as handle:
            assert handle.read().decode("utf-8") == as_lf(case.reviewed).replace("\n", newline)
        view.close()
        control.settle()

    check()
