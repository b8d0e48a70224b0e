"""Issue 30, "Prove it", with the REAL agents in the fake Sublime: one turn of the real Gemini CLI
0.61.0 (`--acp`, recorded model turns) and one of claude-agent-acp 0.101.0 (a local Messages API
stand-in) change five files: three through reviews the user accepts, one the agent writes without
asking (Gemini after "Allow for this session", Claude in `acceptEdits`), one by the agent's own shell
command. Everything after is what the user clicks:

a. the change-set tab opens at the turn's end and lists them, with who made each and whether reviewed;
b. one file's review from the tab, `revert_modification` (its key binding) on ONE of its two hunks,
   Apply: the checkpoint's bytes for that hunk, the agent's for the other, the other files untouched;
c. the user edits one of the agent's files on disk and another in an unsaved buffer, then clicks
   "Restore checkpoint" under the prompt: the plan shows both as conflicts with both texts; Keep mine
   keeps the user's disk text byte-exact and the buffer as typed (unsaved), every other file is
   byte-identical to before the prompt (the added file removed);
d. the next prompt carries the notes of what was reverted: asserted on what the agent sent its model
   (Gemini's own session recording; the Messages API stand-in's requests). In that turn the agent
   (writing without asking now) rewrites a restored file: prompt 2's change set is that file alone,
   and "Restore checkpoint" under prompt 2 gives back exactly the restored workspace.

reviewed_1.txt has CRLF line breaks: both agents keep them, and so does the hunk revert's Apply.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.acp.conftest import claude_agent_program, claude_offline_env, gemini_user_texts, model_messages_text
from tests.acp.test_real_turn_changes import SHELL_COMMAND, ScriptedModel, shell_call, tree
from tests.conformance.harness import write_file_call
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_change_set import BANNER, open_review, put, tab_of, wait_tab
from tests.sublime_editor.test_chat import CEILING, real_gemini, send, setup, start_chat, text, wait_turn
from tests.sublime_editor.test_checkpoint_restore import CARD_KEY, next_panel, plan_tab
from tests.sublime_fake import control, sublime

# Two hunks in reviewed_1.txt: its first and its last line (the test reverts the first).
BEFORE = {
    "reviewed_1.txt": b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\n",
    "reviewed_2.txt": "alpha\nbeta \u2713\ngamma\n".encode(),
    "auto.txt": b"first\nsecond\n",
    "shell.txt": b"kept\n",
    "untouched.txt": b"never changed\n",
}
AFTER = {
    "reviewed_1.txt": b"ONE, the agent's\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nSEVEN, the agent's\r\n",
    "reviewed_2.txt": "alpha\nBETA \u2713, reviewed\ngamma\n".encode(),
    "reviewed_3.txt": b"a new file\nof two lines\n",
    "auto.txt": b"first\nSECOND, written without asking\n",
    "shell.txt": b"kept\nappended by the shell\n",
    "untouched.txt": b"never changed\n",
}
HUNK_REVERTED = b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nSEVEN, the agent's\r\n"
USERS_DISK_TEXT = AFTER["auto.txt"] + b"the user's own line, saved after the turn\n"
TYPED = "typed, never saved "
NEXT_PROMPT = "What changed?"
AGAIN = "written again in the next turn\n"


def words(name: str, files: dict[str, bytes] = AFTER) -> str:
    """A file's text as the model writes it and Sublime shows it (LF line breaks)."""
    return files[name].decode("utf-8").replace("\r\n", "\n")


@pytest.fixture
def real_workspace(workspace: str) -> str:
    """The workspace before the prompt, by its real path (the agents and the plan name files by it)."""
    folder = os.path.realpath(workspace)
    for name, content in BEFORE.items():
        put(os.path.join(folder, name), content)
    return folder


def path_of(workspace: str, name: str) -> str:
    return os.path.join(workspace, name)


def next_review(window: sublime.Window, seen: set[int]) -> sublime.View:
    """The proposal view of the next review the agent's edit opens (one not seen before)."""
    view = control.pump_until(
        lambda: next(
            (
                v
                for v in window.views()
                if v.settings().get("gemini_companion.role") == "proposal" and v.id() not in seen
            ),
            None,
        ),
        CEILING,
        "the agent's next review",
    )
    seen.add(view.id())
    return view


def allow_once(chat: sublime.View, title: str, allow: str) -> None:
    """Click the option named `allow` on the permission card asking about `title`."""
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(chat) if "asks" in p["content"] and title in html.unescape(p["content"])],
        CEILING,
        f"the permission card of {title}",
    )
    found = re.findall(r'<a href="(option-\d+)">([^<]*)</a>', card["content"])
    links = {html.unescape(name): href for href, name in found}
    assert allow in links, card["content"]
    control.click_link(chat, links[allow], card["key"])


def rows(tab: sublime.View) -> list[str]:
    return [line for line in text(tab).splitlines() if line.startswith("- ")]


def assert_the_tab_lists_the_turn(tab: sublime.View, agent: str) -> None:
    """a. Five files with who made each (the shell's is "outside": we cannot know what a command
    wrote) and whether it was reviewed; untouched.txt is not listed."""
    by = f"by {agent}"
    assert rows(tab) == [
        f"- modified  auto.txt  +1 -1  {by}  not reviewed",
        f"- modified  reviewed_1.txt  +2 -2  {by}  reviewed",
        f"- modified  reviewed_2.txt  +1 -1  {by}  reviewed",
        f"- added     reviewed_3.txt  +2 -0  {by}  reviewed",
        "- modified  shell.txt  +1 -0  by outside the agent  not reviewed",
    ], text(tab)


def revert_one_hunk_and_apply(window: sublime.Window, tab: sublime.View, workspace: str) -> None:
    """b. reviewed_1.txt's review from the tab; the caret in its first hunk; `revert_modification`
    through its key binding; Apply."""
    proposal = open_review(window, tab, "reviewed_1.txt")
    assert text(proposal) == words("reviewed_1.txt")
    assert control.reference_document(proposal) == words("reviewed_1.txt", BEFORE)  # the checkpoint
    control.select(proposal, 2)  # inside "ONE, the agent's"
    assert control.press_keys(proposal, "ctrl+alt+z") == "revert_modification"
    assert text(proposal) == HUNK_REVERTED.decode().replace("\r\n", "\n")
    control.click_link(proposal, "apply", BANNER)
    wait_tab(tab, "Applied reviewed_1.txt")
    assert tree(workspace) == {**AFTER, "reviewed_1.txt": HUNK_REVERTED}


def edit_then_restore(window: sublime.Window, chat: sublime.View, workspace: str) -> sublime.View:
    """c. The user saves a line into auto.txt and types into reviewed_2.txt's buffer (unsaved), then
    clicks "Restore checkpoint" under prompt 1 and keeps both of their texts; returns the buffer."""
    put(path_of(workspace, "auto.txt"), USERS_DISK_TEXT)
    buffer = control.open_file(window, path_of(workspace, "reviewed_2.txt"))
    control.select(buffer, 0)
    control.type_text(buffer, TYPED)
    typed = TYPED + words("reviewed_2.txt")
    assert text(buffer) == typed and buffer.is_dirty()

    control.click_link(chat, "restore", CARD_KEY + "restore-1")
    conflicts: list[str] = []
    for index in range(2):
        panel = next_panel()
        assert panel["placeholder"] == f"Conflict {index + 1} of 2: changed after the agent", panel
        conflicts.append(panel["items"][0][0])
        control.choose_quick_panel(0)  # Keep mine
    assert sorted(conflicts) == [f"Keep mine: {path_of(workspace, n)}" for n in ("auto.txt", "reviewed_2.txt")]
    shown = text(plan_tab(window))
    assert f"## Conflict: {path_of(workspace, 'auto.txt')}" in shown
    assert "### yours, on disk now\n```\n" + USERS_DISK_TEXT.decode().rstrip("\n") + "\n```" in shown
    assert "### the checkpoint (before prompt 1)\n```\nfirst\nsecond\n```" in shown
    assert f"## Conflict: {path_of(workspace, 'reviewed_2.txt')}" in shown
    assert "### your unsaved buffer\n```\n" + typed.rstrip("\n") + "\n```" in shown
    assert "### the checkpoint (before prompt 1)\n```\n" + BEFORE["reviewed_2.txt"].decode().rstrip("\n") in shown
    assert f"- delete  {path_of(workspace, 'reviewed_3.txt')}" in shown
    confirm = next_panel()
    assert confirm["items"][0][0] == "Restore prompt 1"
    control.choose_quick_panel(0)
    control.pump_until(
        lambda: any(m.startswith("Gemini Companion: Restored prompt 1") for m in control.status_messages()),
        CEILING,
        "the restore",
    )
    assert tree(workspace) == {
        **BEFORE,
        "auto.txt": USERS_DISK_TEXT,  # the user's saved text, kept byte-exact
        "reviewed_2.txt": AFTER["reviewed_2.txt"],  # under the user's unsaved buffer, kept as it was
    }
    assert text(buffer) == typed and buffer.is_dirty()  # the unsaved text is never lost
    return buffer


def assert_told(texts: list[str], workspace: str) -> None:
    """d. What the agent passed on to its model with the next prompt: before the user's text, a note
    of the hunk reverted and one of the restore (each once, in the order the user did them)."""
    r1, r2, r3, auto, shell = (
        path_of(workspace, n) for n in ("reviewed_1.txt", "reviewed_2.txt", "reviewed_3.txt", "auto.txt", "shell.txt")
    )
    start = "[Note from the editor: the user changed files back since your last turn; "
    end = " Read them again before building on your earlier changes.]"
    hunk = f"{start}In {r1}, lines 1 of your version were reverted; the rest of your change stays.{end}"
    restore = (
        f"{start}these files were restored to how they were before prompt 1: {r1}, {r3}, {shell}. "
        f"The user kept their own later version of: {auto}, {r2}.{end}"
    )
    assert NEXT_PROMPT in texts, texts
    at = texts.index(NEXT_PROMPT)
    assert texts[at - 2 : at + 1] == [hunk, restore, NEXT_PROMPT], texts


def next_turn_then_restore(
    window: sublime.Window,
    chat: sublime.View,
    workspace: str,
    agent: str,
    told: Callable[[], list[str]],
    buffer: sublime.View,
) -> None:
    """d. The next prompt, which tells the agent what was reverted; the agent (now writing without
    asking: Gemini's autoEdit, Claude's acceptEdits) rewrites reviewed_1.txt. Prompt 2's checkpoint
    is the workspace after the restore: its change set is that one file, and "Restore checkpoint"
    under prompt 2 brings back exactly the restored workspace, the user's kept texts with it; "Undo
    restore" under that restore brings back the agent's rewrite."""
    restored, typed = tree(workspace), text(buffer)
    control.focus(chat)
    send(chat, NEXT_PROMPT)
    wait_turn(chat)
    assert_told(told(), workspace)
    assert "Noted." in text(chat)
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    wait_tab(tab, "1 file (1 modified)")
    assert rows(tab) == [f"- modified  reviewed_1.txt  +1 -7  by {agent}  not reviewed"], text(tab)
    again = {**restored, "reviewed_1.txt": AGAIN.encode().replace(b"\n", b"\r\n")}  # CRLF kept
    assert tree(workspace) == again
    control.click_link(chat, "restore", CARD_KEY + "restore-2")
    confirm = next_panel()  # no conflict: the user's texts were not changed after prompt 2
    assert confirm["items"][0][0] == "Restore prompt 2", confirm
    control.choose_quick_panel(0)
    control.pump_until(
        lambda: any(m.startswith("Gemini Companion: Restored prompt 2") for m in control.status_messages()),
        CEILING,
        "the restore of prompt 2",
    )
    assert tree(workspace) == restored
    assert text(buffer) == typed and buffer.is_dirty()

    # The restore undoes from the link under it in the chat (the user never types a chat's id).
    control.click_link(chat, "undo", CARD_KEY + "undo-restore")
    assert next_panel()["items"][0][0] == "Restore before restore to prompt 2"
    control.choose_quick_panel(0)
    control.pump_until(
        lambda: any("Restored before restore to prompt 2" in m for m in control.status_messages()),
        CEILING,
        "the undo of the restore",
    )
    assert tree(workspace) == again
    assert text(buffer) == typed and buffer.is_dirty()


Turn = tuple[sublime.Window, sublime.View, sublime.View, str]  # window, chat, change-set tab, agent's name


def review_restore_and_go_on(turn: Turn, workspace: str, told: Callable[[], list[str]]) -> None:
    """a. to d., after the first turn."""
    window, chat, tab, agent = turn
    assert f"## {agent}\n\nDone." in text(chat)
    assert_the_tab_lists_the_turn(tab, agent)
    revert_one_hunk_and_apply(window, tab, workspace)
    buffer = edit_then_restore(window, chat, workspace)
    next_turn_then_restore(window, chat, workspace, agent, told, buffer)


def one_turn(
    companion: Companion, workspace: str, agent: dict[str, Any], play: Callable[[sublime.Window, sublime.View], None]
) -> Turn:
    """The chat's first prompt, `play` answering the agent's reviews and permissions; returns the
    window, the chat, the change-set tab the turn's end opens and the agent's name."""
    window = setup(companion, workspace, [agent])
    chat = start_chat(companion, window, agent["name"])
    send(chat, "Edit the five files.")
    play(window, chat)
    wait_turn(chat)
    tab = control.pump_until(lambda: tab_of(window), CEILING, "the change-set tab")
    control.pump_until(lambda: len(rows(tab)) == 5 or None, CEILING, "the change set in the tab")
    assert window.active_view() == chat  # the tab opens beside the chat; the prompt keeps the focus
    return window, chat, tab, agent["name"]


# -- Gemini CLI --


def test_real_gemini_turn_reviewed_in_the_tab_one_hunk_reverted_and_the_checkpoint_restored(
    companion: Companion, real_workspace: str, tmp_path: Any
) -> None:
    workspace = real_workspace
    agent = real_gemini(
        tmp_path,
        *[[write_file_call(path_of(workspace, n), words(n))] for n in ("reviewed_1.txt", "reviewed_2.txt")],
        [write_file_call(path_of(workspace, "reviewed_3.txt"), words("reviewed_3.txt"))],
        [write_file_call(path_of(workspace, "auto.txt"), words("auto.txt"))],
        [shell_call(SHELL_COMMAND)],
        [{"text": "Done."}],
        [write_file_call(path_of(workspace, "reviewed_1.txt"), AGAIN)],  # the next prompt's turn
        [{"text": "Noted."}],
    )

    def play(window: sublime.Window, chat: sublime.View) -> None:
        seen: set[int] = set()
        for link in ("accept", "accept", "accept-always"):  # the third: "Allow for this session" (autoEdit)
            control.click_link(next_review(window, seen), link, BANNER)
        allow_once(chat, SHELL_COMMAND, "Allow")

    home = os.path.join(str(tmp_path), "gemini-home")
    review_restore_and_go_on(one_turn(companion, workspace, agent, play), workspace, lambda: gemini_user_texts(home))


# -- claude-agent-acp --


class TwoPrompts(ScriptedModel):
    """The scripted model of the first prompt, then `again`'s tools in order after NEXT_PROMPT."""

    def __init__(self, steps: list[tuple[str, dict[str, Any]]], again: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(steps)
        self.again = again

    def _turn(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        sent = json.dumps(request.get("messages", []))
        if NEXT_PROMPT not in sent:
            return super()._turn(request)
        answered = sum(f'"tool_use_id": "toolu_again_{i}"' in sent for i in range(len(self.again)))
        if request.get("tools") and answered < len(self.again):
            name, tool_input = self.again[answered]
            return [{"type": "tool_use", "id": f"toolu_again_{answered}", "name": name, "input": tool_input}]
        return [{"type": "text", "text": "Noted."}]


def claude_agent(tmp_path: Any, workspace: str, model: ScriptedModel) -> dict[str, Any]:
    """claude-agent-acp 0.101.0 offline as an entry of the `agents` setting, with the environment
    tests/acp/conftest.py's `claude_factory` gives it."""
    env = claude_offline_env(os.path.join(str(tmp_path), "claude"), workspace, model.url)
    return {"name": "Claude", "command": claude_agent_program(), "env": env}


def whole_edit(workspace: str, name: str, new: str | None = None) -> tuple[str, dict[str, Any]]:
    """Claude's Edit of the whole file from its text before the prompt (to AFTER's, or `new`)."""
    old, new = words(name, BEFORE), words(name) if new is None else new
    return "Edit", {"file_path": path_of(workspace, name), "old_string": old, "new_string": new, "replace_all": False}


def test_real_claude_turn_reviewed_in_the_tab_one_hunk_reverted_and_the_checkpoint_restored(
    companion: Companion, real_workspace: str, tmp_path: Any
) -> None:
    workspace = real_workspace
    steps = [whole_edit(workspace, n) for n in ("reviewed_1.txt", "reviewed_2.txt")]
    steps.append(("Write", {"file_path": path_of(workspace, "reviewed_3.txt"), "content": words("reviewed_3.txt")}))
    steps.append(whole_edit(workspace, "auto.txt"))
    steps.append(("Bash", {"command": SHELL_COMMAND, "description": "Append a line to shell.txt"}))
    with TwoPrompts(steps, [whole_edit(workspace, "reviewed_1.txt", AGAIN)]) as model:
        agent = claude_agent(tmp_path, workspace, model)

        def play(window: sublime.Window, chat: sublime.View) -> None:
            seen: set[int] = set()
            for index in range(3):
                proposal = next_review(window, seen)
                if index == 2:  # before the last reviewed edit: Accept Edits, from the palette
                    assert control.run_from_palette(window, "gemini_companion_chat_mode")
                    items = [item[0] for item in control.quick_panels()[-1]["items"]]
                    control.choose_quick_panel(next(i for i, item in enumerate(items) if item == "Accept edits"))
                    control.pump_until(lambda: "(Accept edits)" in chat.get_status("gemini_companion"), CEILING)
                control.click_link(proposal, "accept", BANNER)
            allow_once(chat, SHELL_COMMAND, "Yes")

        review_restore_and_go_on(
            one_turn(companion, workspace, agent, play), workspace, lambda: model_messages_text(model)
        )
