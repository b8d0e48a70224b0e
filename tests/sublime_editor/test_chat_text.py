"""`chat_text.ForeignText`: someone else's text as the chat view shows it, whatever its chunks."""

from __future__ import annotations

import pytest

from companion.sublime_editor.chat.text import BREAK_WINDOW, CONTINUATION, MAX_LINE_CHARS, ForeignText

AGENT = "Claude"
REPLY = (
    "Intro\n## You\n   # Chat: x\n    ## indented code\n### Section\n#hashtag\n> quote\n> ⓘ Claude is ready.\n"
    "## Summary\n# Title\n## Claude ##\n## You and me\n>> ⚠ Review accepted\n"
    "~~~~\n## in a fence\n~~~\n> ⓘ still in it\n~~~~\nafter\n```js\nlet a = 1;\n```\n## You"
)


def shown(chunks: list[str]) -> str:
    text = ForeignText(AGENT)
    return "".join(text.feed(chunk) for chunk in chunks) + text.finish()


def test_only_exact_imitations_of_the_companions_lines_are_escaped_outside_fences() -> None:
    assert shown([REPLY]).split("\n") == [
        "Intro",
        "\\## You",
        "   \\# Chat: x",
        "    ## indented code",
        "### Section",
        "#hashtag",
        "> quote",  # an ordinary quote, as written
        "\\> ⓘ Claude is ready.",
        "## Summary",  # the agent's own headings, as written
        "# Title",
        "\\## Claude ##",
        "## You and me",
        "\\>> ⚠ Review accepted",
        "~~~~",
        "## in a fence",
        "~~~",  # shorter than the opener: still inside
        "> ⓘ still in it",
        "~~~~",
        "after",
        "```js",
        "let a = 1;",
        "```",
        "\\## You",
        "",
    ]


PROSE = " ".join("word" + str(i) for i in range(1200))  # about 9000 characters, one line


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_the_same_text_in_any_chunks_shows_the_same(size: int) -> None:
    text = REPLY + "\n" + "z" * (MAX_LINE_CHARS + 5) + "\n" + PROSE
    assert shown([text[i : i + size] for i in range(0, len(text), size)]) == shown([text])


def test_a_long_line_goes_on_after_the_mark_with_nothing_lost() -> None:
    line = "".join(chr(0x61 + i % 26) for i in range(3 * MAX_LINE_CHARS))
    out = shown([line[:1500], line[1500:]])
    assert max(len(part) for part in out.split("\n")) <= MAX_LINE_CHARS
    assert out.replace(CONTINUATION, "") == line + "\n"


def test_a_long_prose_line_breaks_after_a_word_never_inside_one() -> None:
    out = shown([PROSE[:777], PROSE[777:]])
    parts = out[:-1].split(CONTINUATION)
    assert len(parts) > 3
    assert all(MAX_LINE_CHARS - BREAK_WINDOW <= len(part) <= MAX_LINE_CHARS for part in parts[:-1])
    assert all(part.endswith(" ") for part in parts[:-1]), [part[-12:] for part in parts]
    assert "".join(parts) == PROSE


def test_breaks_says_where_each_break_of_the_view_is() -> None:
    text = ForeignText(AGENT)
    out = text.feed("a ↪ \n" + PROSE)
    assert text.breaks and all(out[at : at + len(CONTINUATION)] == CONTINUATION for at in text.breaks)
    assert out.count(CONTINUATION) == len(text.breaks)  # the agent's own `↪` is not one


def test_a_long_line_of_code_is_broken_in_the_view_and_whole_without_the_breaks() -> None:
    """Minified code in a fence would freeze Sublime's layout as one line: it is broken at the limit,
    and `breaks` marks each break, which the view's copy leaves out (the code as written)."""
    code = "const a=" + "[1,2]," * 2000 + "0;"
    for fence in ("```js", "   ~~~", "    ```"):
        closer = fence.strip()[:3]
        text = ForeignText(AGENT)
        out = text.feed(f"{fence}\n{code[:3000]}")
        breaks = list(text.breaks)
        out += text.feed(f"{code[3000:]}\n{closer}\nafter") + text.finish()
        assert max(len(line) for line in out.split("\n")) <= MAX_LINE_CHARS
        assert breaks and out.replace(CONTINUATION, "") == f"{fence}\n{code}\n{closer}\nafter\n"


def test_a_fence_cut_by_the_companions_lines_is_closed_and_opened_again() -> None:
    text = ForeignText(AGENT)
    out = text.feed("```python\nx = (") + text.interrupt() + "[card]\n" + text.feed("1)\n```\nprose") + text.finish()
    assert out == "```python\nx = (\n```\n[card]\n```python\n1)\n```\nprose\n"


def test_a_fence_in_a_list_item_is_closed_at_its_own_indentation() -> None:
    """Agents nest code in numbered steps: the fence is indented past CommonMark's 3 spaces, and
    only a closer at the list item's indentation closes it there."""
    text = ForeignText(AGENT)
    out = text.feed("1. Run:\n\n    ```sh\n    make") + text.finish()
    assert out == "1. Run:\n\n    ```sh\n    make\n    ```\n"
    assert text.feed("## You\n") == "\\## You\n"  # closed: the next text is outside any fence


def test_a_fence_line_the_text_stops_on_is_not_closed_twice_nor_left_open() -> None:
    """A reply often ends on its closing fence with no newline after it; a tool call can come
    right after an opening one."""
    assert shown(["```py\ncode\n```"]) == "```py\ncode\n```\n"
    text = ForeignText(AGENT)
    out = text.feed("```py") + text.interrupt() + "[card]\n" + text.feed("\ncode\n```\n## You") + text.finish()
    assert out == "```py\n```\n[card]\n```py\ncode\n```\n\\## You\n"


def test_finish_closes_a_dangling_fence_for_good() -> None:
    text = ForeignText(AGENT)
    first = text.feed("~~~\ncode\n") + text.finish()
    assert first == "~~~\ncode\n~~~\n"
    assert text.feed("## You\n") == "\\## You\n"  # the next text starts outside any fence


def test_a_setext_underline_cannot_make_a_line_the_companions_heading() -> None:
    out = shown(["You\n---\nClaude\n  ===\nChat: x\n====\nNotes\n---\n- item\n---\n```\nYou\n---\n```"])
    assert out.split("\n") == [
        "You",
        "\\---",
        "Claude",
        "  ===",  # `Claude` as a level-1 heading: not the companion's
        "Chat: x",
        "\\====",
        "Notes",
        "---",
        "- item",
        "---",
        "```",
        "You",
        "---",  # code
        "```",
        "",
    ]


@pytest.mark.parametrize("size", [1, 2])
def test_a_setext_underline_in_any_chunks_shows_the_same(size: int) -> None:
    text = "You\n--- \nYou\n--x\n"
    assert shown([text[i : i + size] for i in range(0, len(text), size)]) == shown([text]) == "You\n\\--- \nYou\n--x\n"


def test_text_after_the_companions_lines_starts_a_fresh_unmarked_line() -> None:
    """Claude and Gemini end a sentence without a newline before a tool call: what follows the
    card is the reply going on, not a broken line."""
    text = ForeignText(AGENT)
    out = text.feed("I will read the file.") + text.interrupt() + "[card]\n" + text.feed("The function is fine.")
    assert out == "I will read the file.\n[card]\nThe function is fine."


def test_a_line_cut_by_the_companions_lines_cannot_go_on_as_a_heading() -> None:
    text = ForeignText(AGENT)
    out = text.feed("see") + text.interrupt() + "[card]\n" + text.feed("## You") + text.interrupt()
    out += "[card]\n" + text.feed("\nnext") + text.finish()
    assert out == "see\n[card]\n\\## You\n[card]\nnext\n"  # the newline the view already made is not doubled
