"""A chat that waits for the user where they do not look (issue #41), in the fake Sublime with the
scripted agent `chat_agent.py`: a permission card asked while the chat's tab is not the active
view, or its window not the active window, names the agent in the status bar of every view of
the window until it is answered."""

from __future__ import annotations

from tests.sublime_editor.conftest import Companion, write
from tests.sublime_editor.test_chat import CEILING, chat_of, send, setup, start_chat, wait_turn
from tests.sublime_fake import control, sublime

KEY = "gemini_companion.attention"
WORDS = "Gemini Companion: Script waits for you (permission)"


def _card(view: sublime.View) -> dict:
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    return card


def test_a_permission_in_an_unfocused_chat_shows_on_every_view_until_answered(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    other = control.open_file(window, write(workspace, "notes.txt", "notes\n"))
    send(view, "run")
    control.focus(other)  # the user went on editing before the agent asked
    card = _card(view)
    assert [v.get_status(KEY) for v in window.views()] == [WORDS] * len(window.views())
    control.focus(view)
    control.click_link(view, "option-0", card["key"])
    wait_turn(view)
    assert [v.get_status(KEY) for v in window.views()] == [""] * len(window.views())


def test_a_permission_in_a_chat_of_a_window_in_the_background_shows_there(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "run")
    elsewhere = control.new_window([workspace])
    control.focus_window(elsewhere)
    card = _card(view)
    assert view.get_status(KEY) == WORDS
    control.focus(view)
    control.click_link(view, "option-2", card["key"])
    wait_turn(view)
    assert view.get_status(KEY) == ""


def test_a_permission_in_the_chat_the_user_looks_at_adds_nothing_to_the_status_bar(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "run")
    card = _card(view)
    assert view.get_status(KEY) == ""
    control.click_link(view, "option-0", card["key"])
    wait_turn(view)
    assert chat_of(view).busy is False


def test_a_review_shown_in_a_window_in_the_background_shows_there_until_decided(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    target = write(workspace, "hello.txt", "old\n")
    send(view, f"edit {target} new")
    elsewhere = control.new_window([workspace])
    control.focus_window(elsewhere)  # the user went to another window before the review opened
    proposal = control.pump_until(
        lambda: next((v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"), None),
        CEILING,
        "the review",
    )
    words = "Gemini Companion: a review of hello.txt waits for you"
    assert [v.get_status(KEY) for v in window.views()] == [words] * len(window.views())
    assert all(v.get_status(KEY) == "" for v in elsewhere.views())
    control.focus(proposal)
    control.click_link(proposal, "accept", "gemini_companion.banner")
    wait_turn(view)
    assert [v.get_status(KEY) for v in window.views()] == [""] * len(window.views())
