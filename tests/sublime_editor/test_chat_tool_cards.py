"""A tool call's card in the chat view (issue #41): every location a link that opens the file at
its line and leaves the prompt as typed; the output folded, shown escaped without terminal escapes;
Follow the Agent opening each new location beside the chat without taking the focus from its
prompt. The agent is tests/acp/tool_agent.py, a real ACP agent process; the view is the fake
Sublime's."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import psutil

from companion.sublime_editor.chat.terminal_panel import PANEL, TerminalOutputs
from tests.acp.test_client_terminal import FAMILY, alive, family
from tests.sublime_editor.conftest import Companion
from tests.sublime_editor.test_chat import CEILING, send, setup, start_chat, text, wait_turn
from tests.sublime_fake import control, sublime

TOOL_AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "acp", "tool_agent.py")


def tools_agent() -> dict[str, Any]:
    return {"name": "Tools", "command": sys.executable, "args": [TOOL_AGENT]}


def files(workspace: str) -> None:
    os.makedirs(os.path.join(workspace, "sub"), exist_ok=True)
    for name in ("a.py", "b.py", os.path.join("sub", "c.py")):
        with open(os.path.join(workspace, name), "w", encoding="utf-8") as handle:
            handle.write("".join(f"line {i + 1} of {name}\n" for i in range(5)))


def card(view: sublime.View) -> dict[str, Any]:
    (found,) = [p for p in control.phantoms(view) if "Run the tests" in p["content"]]
    return found


def tools_turn(companion: Companion, workspace: str) -> tuple[sublime.Window, sublime.View]:
    files(workspace)
    window = setup(companion, workspace, [tools_agent()])
    view = start_chat(companion, window, "Tools")
    send(view, "tools")
    wait_turn(view)
    return window, view


def test_a_tool_calls_output_is_folded_and_shown_escaped_without_terminal_escapes(
    companion: Companion, workspace: str
) -> None:
    _, view = tools_turn(companion, workspace)
    folded = card(view)["content"]
    assert "output (4 lines)" in folded
    assert "script" not in folded  # folded: the output is a click away
    control.click_link(view, "output", card(view)["key"])
    shown = card(view)["content"]
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in shown
    assert "&lt;b&gt;bold?&lt;/b&gt; &amp; done" in shown
    assert "red text" in shown
    assert "<script" not in shown and "<b>bold" not in shown
    assert "\x1b" not in shown and "[31m" not in shown
    control.click_link(view, "output", card(view)["key"])
    assert "red text" not in card(view)["content"]  # folded again


def test_every_location_is_a_link_that_opens_the_file_at_its_line_and_keeps_the_prompt(
    companion: Companion, workspace: str
) -> None:
    window, view = tools_turn(companion, workspace)
    content = card(view)["content"]
    for href, label in (("loc-0", "a.py:3"), ("loc-1", "b.py:1"), ("loc-2", os.path.join("sub", "c.py"))):
        assert f'<a href="{href}">{label}</a>' in content, content
    control.type_text(view, "half a thought")
    caret = [(r.a, r.b) for r in view.sel()]
    control.click_link(view, "loc-0", card(view)["key"])
    opened = control.pump_until(lambda: window.find_open_file(os.path.join(workspace, "a.py")), CEILING, "a.py")
    control.pump_until(lambda: not opened.is_loading(), CEILING, "a.py to load")
    control.settle()
    assert opened.rowcol(opened.sel()[0].begin())[0] == 2  # the third line: the protocol's lines are 0-based
    assert text(view).endswith("❯ half a thought")
    assert [(r.a, r.b) for r in view.sel()] == caret


def test_follow_the_agent_opens_each_new_location_beside_the_chat_and_keeps_the_focus(
    companion: Companion, workspace: str
) -> None:
    files(workspace)
    window = setup(companion, workspace, [tools_agent()])
    window.set_layout({"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]})
    view = start_chat(companion, window, "Tools")
    assert control.run_from_palette(window, "gemini_companion_chat_follow_agent")
    assert sublime.load_settings("Gemini Companion.sublime-settings").get("chat_follow_agent") is True
    send(view, "tools")
    control.type_text(view, "typing on")  # the user types while the agent works
    wait_turn(view)
    names = [os.path.join(workspace, n) for n in ("a.py", "b.py", os.path.join("sub", "c.py"))]
    opened = [control.pump_until(lambda n=n: window.find_open_file(n), CEILING, n) for n in names]
    chat_group = window.get_view_index(view)[0]
    assert all(window.get_view_index(v)[0] != chat_group for v in opened)
    assert window.active_view() == view
    assert text(view).endswith("❯ typing on")
    assert control.run_from_palette(window, "gemini_companion_chat_follow_agent")  # off again
    assert sublime.load_settings("Gemini Companion.sublime-settings").get("chat_follow_agent") is False


def test_without_follow_the_agent_no_file_opens_by_itself(companion: Companion, workspace: str) -> None:
    window, view = tools_turn(companion, workspace)
    assert window.find_open_file(os.path.join(workspace, "a.py")) is None
    assert window.active_view() == view


def test_a_terminals_output_streams_into_its_card_and_quitting_sublime_ends_its_processes(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    """The agent runs a command in the client terminal and never releases it: its output shows in
    the card embedding it, and when Sublime quits (the package unloads) the command and the
    grandchild it started in a session of its own are gone."""
    record = os.path.join(str(tmp_path), "family")
    window = setup(companion, workspace, [tools_agent()])
    view = start_chat(companion, window, "Tools")
    spec = {"command": sys.executable, "args": ["-c", FAMILY, record]}
    send(view, f"term-keep {json.dumps(spec)}")
    (card,) = control.pump_until(  # the agent asks first; only an allowed command runs (terminal_permits.py)
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    control.click_link(view, "option-0", card["key"])  # Allow
    wait_turn(view)
    pids = family(record)
    assert len(alive(pids)) == 2
    (shown,) = [p for p in control.phantoms(view) if "output (1 line)" in p["content"]]
    control.click_link(view, "output", shown["key"])
    (shown,) = [p for p in control.phantoms(view) if "output (1 line)" in p["content"]]
    assert "ready" in shown["content"]
    companion.unload()
    control.pump_until(lambda: not alive(pids), CEILING, "the terminal's processes to end on unload")
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)


# Prints in colour, then (once the test creates the file `go`) a later line in colour, and exits.
COLOURED = (
    "import os, sys, time\n"
    "print('\\x1b[31mfirst\\x1b[0m', flush=True)\n"
    "print('ready', flush=True)\n"
    "while not os.path.exists(sys.argv[1]):\n"
    "    time.sleep(0.02)\n"
    "print('\\x1b[32mlater\\x1b[0m', flush=True)\n"
)


def test_a_terminals_output_shows_in_an_output_panel_on_demand_and_follows_the_command(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    """The card embedding a terminal has "show in panel": an output panel opens holding the output
    so far without its terminal escapes, later output is appended while the command runs, the
    prompt keeps what the user typed; the palette's Show Terminal Output opens it again."""
    go = os.path.join(str(tmp_path), "go")
    window = setup(companion, workspace, [tools_agent()])
    view = start_chat(companion, window, "Tools")
    send(view, f"term-keep {json.dumps({'command': sys.executable, 'args': ['-c', COLOURED, go]})}")
    (asked,) = control.pump_until(
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    control.click_link(view, "option-0", asked["key"])  # Allow
    wait_turn(view)
    control.type_text(view, "half a thought")
    (shown,) = [p for p in control.phantoms(view) if "show in panel" in p["content"]]
    control.click_link(view, "panel", shown["key"])
    assert window.active_panel() == "output.gemini_companion.terminal"
    panel = window.find_output_panel("gemini_companion.terminal")
    assert panel is not None

    def shown_text() -> str:
        return panel.substr(sublime.Region(0, panel.size()))

    control.pump_until(lambda: "ready" in shown_text(), CEILING, "the output so far")  # shown at most every 0.1 s
    assert shown_text() == "first\nready\n", repr(shown_text())
    with open(go, "w", encoding="utf-8"):
        pass
    control.pump_until(lambda: "later" in shown_text(), CEILING, "the later line")
    assert shown_text() == "first\nready\nlater\n", repr(shown_text())
    assert text(view).endswith("❯ half a thought")
    window.run_command("hide_panel")
    assert window.active_panel() is None
    assert control.run_from_palette(window, "gemini_companion_show_terminal_output")
    assert window.active_panel() == "output.gemini_companion.terminal"
    assert shown_text() == "first\nready\nlater\n", repr(shown_text())
    assert text(view).endswith("❯ half a thought")


def test_the_terminal_panel_holds_only_the_end_the_chat_keeps_and_leaves_another_chats_panel_alone(
    companion: Companion, workspace: str
) -> None:
    """What is new is appended; once the output's start was cut (the chat keeps its end only), the
    panel holds that end, not more; a chat whose terminal the panel no longer shows leaves it alone."""
    window = setup(companion, workspace, [tools_agent()])
    outputs, other = TerminalOutputs("chat-1"), TerminalOutputs("chat-2")
    outputs.update(window, "tool.t", "make", "\x1b[1mone\x1b[0m\n")
    outputs.show(window, "tool.t")
    panel = window.find_output_panel(PANEL)
    assert panel is not None

    def shown_text() -> str:
        return panel.substr(sublime.Region(0, panel.size()))

    outputs.update(window, "tool.t", "make", "\x1b[1mone\x1b[0m\ntwo\n")
    assert shown_text() == "one\ntwo\n"
    outputs.update(window, "tool.t", "make", "two\nthree\n")  # "one" cut from the kept output
    assert shown_text() == "two\nthree\n"
    other.update(window, "tool.t", "test", "theirs\n")
    other.show(window, "tool.t")
    outputs.update(window, "tool.t", "make", "two\nthree\nfour\n")
    assert shown_text() == "theirs\n"


def test_show_terminal_output_asks_which_command_when_the_chat_ran_several(
    companion: Companion, workspace: str
) -> None:
    """Two commands ran in the chat's terminals: the palette's Show Terminal Output lists both (the
    newest first, with its last line) and opens the one picked."""
    window = setup(companion, workspace, [tools_agent()])
    view = start_chat(companion, window, "Tools")
    for call, word in (("term1", "alpha"), ("term2", "beta")):
        spec = {"call": call, "command": sys.executable, "args": ["-c", f"print('{word}')"], "until": word}
        send(view, f"term-keep {json.dumps(spec)}")
        (asked,) = control.pump_until(
            lambda: [p for p in control.phantoms(view) if 'href="option-0"' in p["content"]],
            CEILING,
            "the permission card",
        )
        control.click_link(view, "option-0", asked["key"])  # Allow
        wait_turn(view)
    control.pump_until(
        lambda: len([p for p in control.phantoms(view) if "show in panel" in p["content"]]) == 2, CEILING, "two cards"
    )
    assert control.run_from_palette(window, "gemini_companion_show_terminal_output")
    (picker,) = control.quick_panels()
    assert [item[1] for item in picker["items"]] == ["beta", "alpha"]
    control.choose_quick_panel(1)
    panel = window.find_output_panel(PANEL)
    assert panel is not None
    control.pump_until(lambda: panel.substr(sublime.Region(0, panel.size())) == "alpha\n", CEILING, "alpha's output")
    assert window.active_panel() == "output.gemini_companion.terminal"
