"""`chat_text.ForeignText`: someone else's text as the chat view shows it, whatever its chunks."""

from __future__ import annotations

import pytest

from companion.sublime_editor.chat_text import CONTINUATION, MAX_LINE_CHARS, ForeignText

REPLY = (
    "Intro\n## You\n   # Chat: x\n    ## indented code\n### Section\n#hashtag\n> quote\n"
    "~~~~\n## in a fence\n~~~\n> still in it\n~~~~\nafter\n```js\nlet a = 1;\n```\n##"
)


def shown(chunks: list[str]) -> str:
    text = ForeignText()
    return "".join(text.feed(chunk) for chunk in chunks) + text.finish()


def test_lines_that_would_look_like_the_companions_are_escaped_outside_fences_only() -> None:
    assert shown([REPLY]).split("\n") == [
        "Intro",
        "\\## You",
        "   \\# Chat: x",
        "    ## indented code",
        "### Section",
        "#hashtag",
        "\\> quote",
        "~~~~",
        "## in a fence",
        "~~~",  # shorter than the opener: still inside
        "> still in it",
        "~~~~",
        "after",
        "```js",
        "let a = 1;",
        "```",
        "\\##",
        "",
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_the_same_text_in_any_chunks_shows_the_same(size: int) -> None:
    text = REPLY + "\n" + "z" * (MAX_LINE_CHARS + 5)
    assert shown([text[i : i + size] for i in range(0, len(text), size)]) == shown([text])


def test_a_long_line_goes_on_after_the_mark_with_nothing_lost() -> None:
    line = "".join(chr(0x61 + i % 26) for i in range(3 * MAX_LINE_CHARS))
    out = shown([line[:1500], line[1500:]])
    assert max(len(part) for part in out.split("\n")) <= MAX_LINE_CHARS
    assert out.replace(CONTINUATION, "") == line + "\n"


def test_a_fence_cut_by_the_companions_lines_is_closed_and_opened_again() -> None:
    text = ForeignText()
    out = text.feed("```python\nx = (") + text.interrupt() + "[card]\n" + text.feed("1)\n```\nprose") + text.finish()
    assert out == "```python\nx = (\n```\n[card]\n```python\n↪ 1)\n```\nprose\n"


def test_finish_closes_a_dangling_fence_for_good() -> None:
    text = ForeignText()
    first = text.feed("~~~\ncode\n") + text.finish()
    assert first == "~~~\ncode\n~~~\n"
    assert text.feed("## You\n") == "\\## You\n"  # the next text starts outside any fence


def test_a_line_cut_by_the_companions_lines_goes_on_after_the_mark_and_cannot_start_a_heading() -> None:
    text = ForeignText()
    out = text.feed("see") + text.interrupt() + "[card]\n" + text.feed("## You") + text.interrupt()
    out += "[card]\n" + text.feed("\nnext") + text.finish()
    assert out == "see\n[card]\n↪ ## You\n[card]\n\nnext\n"
