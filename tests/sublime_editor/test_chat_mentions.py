"""`@` in the chat's prompt (issue #40): the window's files, folders, open files and the symbols of
Sublime's index complete where the user types, under the rules of every other sharing path (never
`.env` nor what the exclusions hide, nothing while sharing is paused, nothing in the transcript);
a chosen file or symbol goes out with the prompt as a resource, as Send File's do."""

from __future__ import annotations

import os
from typing import Any

from tests.sublime_editor.conftest import Companion, write
from tests.sublime_editor.test_chat import (
    chat_of,
    prompts_file,
    recorded,
    scripted,
    setup,
    start_chat,
    text,
    wait_turn,
)
from tests.sublime_fake import _plugin_host, control, sublime


def shown(view: sublime.View, prefix: str, point: int | None = None) -> list[Any]:
    """The completion items the popup would show with the caret at `point` (the view's end)."""
    where = view.size() if point is None else point
    return [c for c in _plugin_host.completions_shown(view, prefix, [where]) if isinstance(c, sublime.CompletionItem)]


def triggers(view: sublime.View, prefix: str, point: int | None = None) -> list[str]:
    return [c.trigger for c in shown(view, prefix, point)]


def choose(view: sublime.View, prefix: str, trigger: str) -> None:
    """Commit the completion `trigger`, as Sublime does: the word before the caret is replaced."""
    (item,) = [c for c in shown(view, prefix) if c.trigger == trigger]
    control.select(view, sublime.Region(view.size() - len(prefix), view.size()))
    control.type_text(view, item.completion + " ")


def files(workspace: str) -> dict[str, str]:
    return {
        "notes": write(workspace, "notes.txt", "one\ntwo\n"),
        "env": write(workspace, ".env", "TOKEN=secret\n"),
        "app": write(workspace, os.path.join("src", "app.py"), "a = 1\nclass Foo:\n    x = 2\n\nb = 3\n"),
    }


def test_at_offers_the_windows_files_never_env_and_nothing_in_the_transcript(
    companion: Companion, workspace: str
) -> None:
    files(workspace)
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    assert view.settings().get("auto_complete_triggers")[0]["characters"] == "/@"  # "@" opens the popup
    control.type_text(view, "look at @no")
    offered = triggers(view, "no")
    assert "@notes.txt" in offered, offered
    assert not any(".env" in t for t in offered), offered
    chat_of(view).panel.set_prompt("look at @")
    everything = triggers(view, "")
    assert {"@notes.txt", "@src/", "@src/app.py"} <= set(everything), everything
    assert not any(".env" in t for t in everything), everything
    chat_of(view).panel.set_prompt("hello @no")
    control.press_keys(view, "enter")
    wait_turn(view)
    in_transcript = text(view).index("hello @no") + len("hello @no")
    assert in_transcript < chat_of(view).panel.input_start
    assert _plugin_host.query_completions(view, "no", [in_transcript]) == []  # the transcript: nothing


def test_nothing_is_offered_nor_attached_while_context_sharing_is_paused(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    paths = files(workspace)
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    view = start_chat(companion, window)
    window.run_command("gemini_companion_toggle_sharing")  # pause
    control.settle()
    control.focus(view)
    control.type_text(view, "@no")
    assert shown(view, "no") == []
    assert any("@ offers nothing" in m for m in control.status_messages())
    chat_of(view).panel.set_prompt("read @notes.txt")
    control.press_keys(view, "enter")
    wait_turn(view)
    assert recorded(record)[-1].splitlines() == ["read @notes.txt"]  # the text only
    window.run_command("gemini_companion_toggle_sharing")  # resume: the same mention offers and attaches
    control.settle()
    control.focus(view)
    control.type_text(view, "@no")
    assert "@notes.txt" in triggers(view, "no")
    chat_of(view).panel.set_prompt("read @notes.txt")
    control.press_keys(view, "enter")
    wait_turn(view)
    assert recorded(record)[-1].splitlines() == ["read @notes.txt", f"resource file://{paths['notes']}"]


def test_at_foo_offers_the_indexed_symbol_with_its_place(companion: Companion, workspace: str) -> None:
    paths = files(workspace)
    control.index_symbol("Foo", paths["app"], 2)
    control.index_symbol("Foo", write(os.path.dirname(workspace), "elsewhere.py", "class Foo: pass\n"), 1)
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    control.type_text(view, "@Foo")
    symbols = [c for c in shown(view, "Foo") if c.annotation == "symbol"]
    # the one inside the folders, with its lines; never the one outside
    assert [(c.trigger, c.completion) for c in symbols] == [("Foo — src/app.py:2", "src/app.py#L2-3")]


def test_chosen_files_and_symbols_go_with_the_prompt_as_resources(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    paths = files(workspace)
    control.index_symbol("Foo", paths["app"], 2)
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    view = start_chat(companion, window)
    control.type_text(view, "explain @no")
    choose(view, "no", "@notes.txt")
    control.type_text(view, "and @Foo")
    choose(view, "Foo", "Foo — src/app.py:2")
    control.type_text(view, "not @.env nor @bob")
    assert chat_of(view).panel.prompt_text() == "explain @notes.txt and @src/app.py#L2-3 not @.env nor @bob"
    control.press_keys(view, "enter")
    wait_turn(view)
    sent = recorded(record)[-1].splitlines()
    assert sent == [
        "explain @notes.txt and @src/app.py#L2-3 not @.env nor @bob",
        f"[Lines 2-3 of {paths['app']}:]",
        f"resource file://{paths['notes']}",
        f"resource file://{paths['app']}",
    ], sent
    assert "@.env was not attached" in text(view)  # said in the chat, once
    assert "secret" not in "\n".join(recorded(record))


def test_a_mention_that_cannot_go_costs_a_warning_never_the_prompt_or_the_chat(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    """An agent that takes files' text (as Gemini CLI does) cannot get a binary file: the prompt goes
    without it, and the chat goes on."""
    with open(os.path.join(workspace, "logo.bin"), "wb") as handle:
        handle.write(b"\x00\xff\xfe\x00binary")
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record, "CHAT_AGENT_EMBED": "1"})])
    view = start_chat(companion, window)
    chat = chat_of(view)
    control.type_text(view, "what is @logo.bin")
    control.press_keys(view, "enter")
    wait_turn(view)
    assert recorded(record)[-1].splitlines() == ["what is @logo.bin"]
    assert "logo.bin is a binary file" in text(view)
    assert chat.ready and not chat.ended


def test_the_open_files_come_first_and_an_open_env_is_still_never_offered(companion: Companion, workspace: str) -> None:
    paths = files(workspace)
    window = setup(companion, workspace)
    control.open_file(window, paths["app"])
    control.open_file(window, paths["env"])
    view = start_chat(companion, window)
    control.type_text(view, "@")
    items = shown(view, "")
    assert (items[0].trigger, items[0].annotation) == ("@src/app.py", "open"), items[:3]
    assert [c.trigger for c in items].count("@src/app.py") == 1  # once, as the open file
    assert not any(".env" in c.trigger for c in items)


def test_with_two_folders_each_file_is_named_after_its_folder_and_attaches(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    paths = files(workspace)
    other = os.path.realpath(str(tmp_path / "other"))
    lib = write(other, "lib.txt", "lib\n")
    record = prompts_file(tmp_path)
    control.user_settings("Gemini Companion.sublime-settings", {"agents": [scripted(env={"PROMPTS_FILE": record})]})
    window = control.new_window([workspace, other])
    companion.load()
    view = start_chat(companion, window)
    control.type_text(view, "@")
    offered = triggers(view, "")
    assert {"@workspace/notes.txt", "@other/lib.txt", "@other/"} <= set(offered), offered
    chat_of(view).panel.set_prompt("compare @workspace/notes.txt with @other/lib.txt")
    control.press_keys(view, "enter")
    wait_turn(view)
    assert recorded(record)[-1].splitlines()[1:] == [f"resource file://{paths['notes']}", f"resource file://{lib}"]
