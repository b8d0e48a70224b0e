"""Line comments the agent reads, in the fake Sublime (issue #41): "Comment on Line/Selection" in a
file of the window marks the lines; "Send Comments to Chat" puts path, lines, their text now and
the comment at the head of the chat's next prompt (`tests/acp/edit_agent.py` records it). A
comment whose line was edited since is not sent with the wrong text: the chat names it."""

from __future__ import annotations

import os
from typing import Any

from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_change_set import a_turn, open_review
from tests.sublime_editor.test_chat import prompts_file, recorded, scripted, send, setup, start_chat, text, wait_turn
from tests.sublime_editor.test_reject_reasons import agent_with_record, recorded_prompts
from tests.sublime_fake import control

HEAD = "[Note from the editor: the user commented on these lines:]"


def commented(view: Any, row: int, comment: str) -> None:
    control.move_cursor(view, row, 0)
    view.run_command("gemini_companion_comment")
    control.answer_input_panel(comment)
    control.settle()


def file_view(window: Any, workspace: str, name: str, content: str) -> Any:
    path = os.path.join(workspace, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    return control.open_file(window, path)


def test_a_comment_reaches_the_next_prompt_with_path_lines_and_current_text(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent, record = agent_with_record(tmp_path, [])
    window = setup(companion, workspace, [agent])
    chat = start_chat(companion, window)
    source = file_view(window, workspace, "geometry.py", "def area(r):\n    return 3 * r * r\n")
    commented(source, 1, "use math.pi")
    assert source.get_regions("gemini_companion.comment.1") or any(
        source.get_regions(f"gemini_companion.comment.{n}") for n in range(1, 20)
    )  # the marker on the line
    window.run_command("gemini_companion_send_comments")
    control.settle()
    send(chat, "fix what I commented")
    wait_turn(chat)
    assert recorded_prompts(record)[-1] == [
        f"{HEAD}\n\ngeometry.py:2\n>     return 3 * r * r\nuse math.pi",
        "fix what I commented",
    ]


def test_a_comment_whose_line_changed_is_not_sent_and_the_chat_names_it(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    agent, record = agent_with_record(tmp_path, [])
    window = setup(companion, workspace, [agent])
    chat = start_chat(companion, window)
    source = file_view(window, workspace, "values.py", "a = 1\nb = 2\n")
    commented(source, 0, "why one?")
    commented(source, 1, "b is fine")
    control.move_cursor(source, 0, 5)
    control.type_text(source, "0")  # line 1 now reads "a = 10"
    window.run_command("gemini_companion_send_comments")
    control.settle()
    assert "Not sent: the comment(s) on values.py:1, whose lines changed" in text(chat)
    send(chat, "go")
    wait_turn(chat)
    (note, prompt) = recorded_prompts(record)[-1]
    assert note == f"{HEAD}\n\nvalues.py:2\n> b = 2\nb is fine" and prompt == "go"


def test_a_comment_in_the_changes_tab_review_reaches_the_next_prompt(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    path = os.path.join(workspace, "lines.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("a\nb\n")

    def during() -> None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("a\nB\n")

    record = prompts_file(tmp_path)
    window, tab = a_turn(companion, workspace, during, [scripted(env={"PROMPTS_FILE": record})])
    proposal = open_review(window, tab, "lines.txt")
    commented(proposal, 1, "why upper case?")
    window.run_command("gemini_companion_send_comments")
    control.settle()
    chat = next(v for v in window.views() if v.settings().get("gemini_companion.chat") is not None)
    send(chat, "next")
    wait_turn(chat)
    assert f"{HEAD}\n\nlines.txt:2\n> B\nwhy upper case?" in recorded(record)[-1]
