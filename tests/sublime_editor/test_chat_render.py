"""How the chat view shows what it did not write (issue #28): very long lines, code fences left open,
thoughts in many chunks, and agent text that imitates the companion's own lines. The scripted agent
`chat_agent.py` is a real ACP agent process; the view is the fake Sublime's."""

from __future__ import annotations

import re

from companion.acp.view import ToolCall
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, chat_of, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import control, sublime

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def lines(view: sublime.View) -> list[str]:
    return text(view).split("\n")


def fenced(view: sublime.View, line: str) -> bool:
    """Whether Markdown shows `line` (its first occurrence) inside a code fence: an odd number of
    fence lines before it (the fences here are all ``` of the same length)."""
    shown = lines(view)
    return sum(1 for earlier in shown[: shown.index(line)] if FENCE.match(earlier)) % 2 == 1


def test_a_very_long_line_is_broken_for_the_view_and_nothing_is_lost(companion: Companion, workspace: str) -> None:
    """With word wrap on (the chat view's setting), Sublime freezes laying out a line of minified
    code (sublime_text#994, #2317; lag from about 2000 characters: #4844): no line in the view is
    longer than 2000 characters, and the line is all there, in order, once the marks where it goes
    on are taken out."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    assert view.settings().get("word_wrap") is True
    send(view, "long 200000")
    wait_turn(view)
    longest = max(len(line) for line in lines(view))
    assert longest <= 2000, longest
    sent = "".join(chr(0x61 + (start // 1000) % 26) * 1000 for start in range(0, 200_000, 1000))
    assert sent in text(view).replace("\n↪ ", "")  # the mark where a line goes on


def test_copying_a_broken_prose_line_gives_the_line_without_the_views_breaks(
    companion: Companion, workspace: str
) -> None:
    """The `↪` breaks are the view's layout: Copy leaves them out (and keeps an agent's own `↪`)."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    line = "see \n↪ this: " + " ".join(f"word{i}" for i in range(1500))
    chat_of(view).port.agent_text(line + "\nnext line\n")
    control.settle()
    assert "\n↪ word" in text(view)  # broken in the view
    start = text(view).index("see ")
    end = text(view).index("next line") + len("next")
    view.sel().clear()
    view.sel().add(sublime.Region(start, end))
    view.run_command("copy")
    assert sublime.get_clipboard() == line + "\nnext"
    view.sel().clear()
    view.sel().add(sublime.Region(start, start + 3))
    view.run_command("copy")
    assert sublime.get_clipboard() == "see"  # a selection without breaks: Sublime's copy


def test_a_turn_cancelled_inside_a_code_fence_leaves_nothing_after_it_as_code(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "fence")
    control.pump_until(lambda: "cut off" in text(view), CEILING, "the fenced line")
    assert control.press_keys(view, "escape") == "gemini_companion_chat_cancel"
    wait_turn(view)
    send(view, "after")
    wait_turn(view)
    assert "print('cut off')" in lines(view)
    for ours in ("> ⓘ The turn ended: cancelled.", "## You", "after", "## Script", "echo: after", "❯ "):
        assert not fenced(view, ours), (ours, text(view))


def test_a_prompt_with_an_unclosed_fence_leaves_the_reply_outside_it(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "```\nunclosed")
    wait_turn(view)
    assert fenced(view, "unclosed")
    for ours in ("## Script", "echo: ```", "❯ "):
        assert not fenced(view, ours), (ours, text(view))


def test_a_thought_in_many_chunks_is_one_card_update_per_tick(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    control.settle()
    before = control.ui_calls("View.add_phantom")
    for _ in range(1000):  # what the loop thread hands over while the main thread is busy elsewhere
        chat.port.thought("t ")
    control.settle()
    assert control.ui_calls("View.add_phantom") - before == 1
    (card,) = [p["content"] for p in control.phantoms(view) if "Thinking…" in p["content"]]
    assert "(2000 characters)" in card


def test_agent_text_cannot_pass_for_the_companions_headings_and_notices(companion: Companion, workspace: str) -> None:
    """Only the companion writes `# Chat: …`, `## You`, `## <agent>` and quoted notices in the
    chat: the same lines from the agent (or a prompt) show escaped, as text. The agent's other
    headings and quotes are Markdown like any other, shown as written."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    forged = ["## You", "  ## Script", "> ⓘ Script is ready.", ">> ⚠ Review accepted", "# Chat: Other", "## You ##"]
    ordinary = ["## Summary", "# Plan", "> Note: this is a quote", "## Your turn", "### You"]
    send(view, "hello\n" + "\n".join(forged + ordinary))
    wait_turn(view)
    ours = [line for line in lines(view) if re.match(r" {0,3}(#{1,2}(\s|$)|>)", line) and line not in ordinary]
    assert len(ours) == 5, ours
    assert ours[0] == "# Chat: Script"
    assert ours[1].startswith("> ⓘ Starting Script in ") and ours[2].startswith("> ⓘ Script is ready."), ours
    assert ours[3:] == ["## You", "## Script"], ours
    underlined = [view.substr(r) for r in view.get_regions("gemini_companion.chat.headings")]
    assert underlined == ["# Chat: Script", "## You", "## Script"]  # drawn by the API: no text can
    shown = lines(view)
    for line in forged:  # shown twice (the prompt, the echo), as text, and otherwise as written
        indent = len(line) - len(line.lstrip(" "))
        assert shown.count(line[:indent] + "\\" + line[indent:]) == 2, (line, shown)
    for line in ordinary:
        assert shown.count(line) == 2, (line, shown)


def test_the_reply_goes_on_after_a_card_on_a_fresh_unmarked_line(companion: Companion, workspace: str) -> None:
    """Claude and Gemini end a sentence without a newline before a tool call: the text after the
    card is the reply going on, shown as it is (no continuation mark: nothing was broken)."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    port = chat_of(view).port
    port.agent_text("I will read the file.")
    port.tool_call(ToolCall("t1", "Read a.py", "read", "completed"))
    port.agent_text("The function is fine.")
    control.settle()
    shown = lines(view)
    assert "I will read the file." in shown and "The function is fine." in shown, shown
    assert "↪" not in text(view)


def test_a_long_line_of_code_in_the_chat_is_copied_as_the_agent_wrote_it(companion: Companion, workspace: str) -> None:
    """Minified code, base64, long JSON in a fence: the view breaks the line (one line of it would
    freeze Sublime's layout), and what the user selects and copies is the agent's code."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    code = "const a=" + "[1,2]," * 1000 + "0;"
    port = chat_of(view).port
    port.agent_text("Here:\n```js\n" + code[:2500])
    port.agent_text(code[2500:] + "\n```\n")
    control.settle()
    assert code not in lines(view) and max(len(line) for line in lines(view)) <= 2000  # broken in the view
    start = text(view).index("const a=")
    end = text(view).index("0;", start) + 2
    view.sel().clear()
    view.sel().add(sublime.Region(start, end))
    view.run_command("copy")
    assert sublime.get_clipboard() == code


def test_a_list_items_fence_cut_off_leaves_nothing_after_it_as_code(companion: Companion, workspace: str) -> None:
    """A fence indented inside a numbered step (past CommonMark's 3 spaces) is closed at its own
    indentation when the turn ends inside it."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    port = chat_of(view).port
    port.agent_text("1. Run:\n\n    ```sh\n    make all\n")
    port.turn_ended("cancelled")
    control.settle()
    shown = lines(view)
    opened = shown.index("    ```sh")
    assert shown[opened + 1 : opened + 3] == ["    make all", "    ```"], shown


def test_a_reply_ending_on_its_closing_fence_leaves_nothing_after_it_as_code(
    companion: Companion, workspace: str
) -> None:
    """Agents end a turn on the closing fence with no newline after it."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    port = chat_of(view).port
    port.agent_text("Done:\n```py\nprint(1)\n```")
    port.turn_ended("end_turn")
    port.notice("Saved.", "info")
    control.settle()
    assert not fenced(view, "> ⓘ Saved."), text(view)


def test_the_companions_own_notice_keeps_its_lines_in_the_quote(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat_of(view).port.notice("Script stopped.\nRun it again with the Chat command.", "warning")
    control.settle()
    shown = lines(view)
    at = shown.index("> ⚠ Script stopped.")
    assert shown[at + 1] == "> Run it again with the Chat command.", shown


def test_an_agents_informational_notice_says_whose_it_is_on_one_line(companion: Companion, workspace: str) -> None:
    """Claude's informational chunks become notices (companion/acp/session.py `_chunk`): the agent's
    words, so they carry its name and cannot break out of the quote onto lines of their own."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat_of(view).port.notice("Script is ready.\n## You\nrun this", "agent")
    control.settle()
    assert "> ⓘ Script: Script is ready. ## You run this" in lines(view)
    assert "## You" not in lines(view)
