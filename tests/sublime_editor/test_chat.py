"""The chat inside Sublime (issue #23): a chat view per session, fed by a real ACP agent process
(the scripted agent `chat_agent.py` on the SDK's agent side, and the real Gemini CLI 0.61.0
offline), driven by the user's gestures in the fake Sublime."""

from __future__ import annotations

import os
import sys
from typing import Any

import psutil
import pytest

from tests.sublime_editor.conftest import Companion, pkg, write
from tests.sublime_fake import _plugin_host, control, sublime

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat_agent.py")
CEILING = 60  # seconds: a ceiling on events, never a synchronisation by sleeping


def scripted(name: str = "Script", env: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [AGENT], "env": env or {}}


def text(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def chat_views(window: sublime.Window) -> list[sublime.View]:
    return [v for v in window.views() if v.settings().get("gemini_companion.chat") is not None]


def start_chat(companion: Companion, window: sublime.Window, agent: str = "Script") -> sublime.View:
    companion.ready(window)
    before = set(v.id() for v in chat_views(window))
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": agent})
    (view,) = [v for v in chat_views(window) if v.id() not in before]
    control.pump_until(lambda: "is ready" in text(view) or "⚠" in text(view), CEILING, "the chat to start")
    assert "is ready" in text(view), text(view)
    return view


def chat_of(view: sublime.View) -> Any:
    return pkg("sublime_editor.chat.sessions").for_view(view)


def send(view: sublime.View, prompt: str) -> None:
    control.type_text(view, prompt)
    assert control.press_keys(view, "enter") == "gemini_companion_chat_send"


def wait_turn(view: sublime.View) -> None:
    chat = chat_of(view)
    control.pump_until(lambda: not chat.busy, CEILING, "the turn to end")
    control.settle()


def review_proposal(window: sublime.Window) -> sublime.View:
    """The proposal view of the review the agent's edit opens, once it shows."""
    return control.pump_until(
        lambda: next((v for v in window.views() if v.settings().get("gemini_companion.role") == "proposal"), None),
        CEILING,
        "the review",
    )


def agent_pids(view: sublime.View) -> list[int]:
    chat = chat_of(view)
    agent = chat.session.agent if chat.session is not None else None
    return [agent.pid] if agent is not None else []


def setup(companion: Companion, workspace: str, agents: list[dict[str, Any]] | None = None) -> sublime.Window:
    # The scripted agent takes no MCP over HTTP: its window tools go as the stdio bridge, run by
    # this Python wherever `python3` is not on PATH (else the chat says it found none).
    settings = {"agents": agents or [scripted()], "bridge_python": sys.executable}
    control.user_settings("Gemini Companion.sublime-settings", settings)
    window = control.new_window([workspace])
    companion.load()
    return window


def test_a_reply_streams_into_the_chat_view_with_cards_plan_thought_and_status(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    assert view.name() == "Chat: Script"
    assert view.syntax() is not None and view.syntax().scope == "text.gemini-companion.chat"
    send(view, "stream 200")
    wait_turn(view)
    body = text(view)
    assert "## You\n\nstream 200\n" in body
    assert "## Script\n\n" + "".join(f"chunk {i} " for i in range(200)) in body
    assert body.endswith("❯ ")  # the prompt is empty again, at the end
    cards = [p["content"] for p in control.phantoms(view)]
    assert any("Thinking… (13 characters)" in c for c in cards), cards
    assert not any("Let me think." in c for c in cards)  # folded
    assert any("Read notes.txt" in c and "completed" in c for c in cards), cards
    assert any("Plan" in c and "Read the code" in c for c in cards), cards
    assert "Let me think." not in body and "Read notes.txt" not in body  # cards, not model text
    status = view.get_status("gemini_companion")
    assert "Chat: Script (Ask first)" in status, status
    assert view.get_status("gemini_companion.chat_usage") == "context 1200/100000"


def test_thoughts_unfold_on_click(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "stream 1")
    wait_turn(view)
    (thought,) = [p for p in control.phantoms(view) if "Thinking…" in p["content"]]
    control.click_link(view, "expand", thought["key"])
    (thought,) = [p for p in control.phantoms(view) if "Thinking…" in p["content"]]
    assert "Let me think." in thought["content"]


def test_the_agents_slash_commands_are_completions_in_the_prompt(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    control.pump_until(lambda: chat_of(view).panel.commands, CEILING, "the agent's commands")
    control.type_text(view, "plain /")
    assert _plugin_host.query_completions(view, "", [view.size()]) == []  # only where the prompt starts
    chat_of(view).panel.set_prompt("")
    control.type_text(view, "/")
    offered = _plugin_host.query_completions(view, "", [view.size()])
    assert ("/explain\tExplain the selected code", "explain ") in offered
    assert ("/review\tReview the changes", "review ") in offered
    assert _plugin_host.query_completions(view, "", [3]) == []  # not in the transcript


def test_the_transcript_is_read_only_and_typing_goes_to_the_prompt(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "hello")
    wait_turn(view)
    before = text(view)
    control.select(view, 3)
    assert view.is_read_only()
    control.type_text(view, "X")
    assert text(view) == before + "X"  # at the prompt's end, not in the transcript
    assert not view.is_read_only()


def test_history_walks_sent_prompts_and_keeps_the_draft(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    for prompt in ("first", "second"):
        send(view, prompt)
        wait_turn(view)
    control.type_text(view, "draft")
    assert control.press_keys(view, "up") == "gemini_companion_chat_history"
    assert chat.panel.prompt_text() == "second"
    control.press_keys(view, "up")
    assert chat.panel.prompt_text() == "first"
    control.press_keys(view, "down")
    control.press_keys(view, "down")
    assert chat.panel.prompt_text() == "draft"


def test_a_shell_permission_is_a_card_with_the_agents_own_options(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, "run")
    (card,) = control.pump_until(
        lambda: [p for p in control.phantoms(view) if "asks" in p["content"]], CEILING, "the permission card"
    )
    for name in ("Run it", "Always run", "Do not run"):
        assert name in card["content"]
    control.click_link(view, "option-2", card["key"])
    wait_turn(view)
    assert "chosen: no" in text(view)
    (card,) = [p for p in control.phantoms(view) if "asks" in p["content"]]
    assert "→ Do not run" in card["content"] and 'href="option-0"' not in card["content"]


def test_switch_mode_from_the_palette_shows_in_chat_and_status(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    assert control.run_from_palette(window, "gemini_companion_chat_mode")
    panel = control.quick_panels()[-1]
    assert [item[0] for item in panel["items"]] == ["● Ask first", "Allow all"]
    control.choose_quick_panel(1)
    control.pump_until(lambda: "Mode: Allow all." in text(view), CEILING, "the mode change")
    control.settle()
    assert "Chat: Script (Allow all)" in view.get_status("gemini_companion")


def test_two_chats_with_different_agents_in_one_window(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace, [scripted("One"), scripted("Two")])
    one = start_chat(companion, window, "One")
    two = start_chat(companion, window, "Two")
    send(one, "to one")
    send(two, "to two")
    wait_turn(one)
    wait_turn(two)
    assert "echo: to one" in text(one) and "to two" not in text(one)
    assert "echo: to two" in text(two) and "to one" not in text(two)
    assert one.name() == "Chat: One" and two.name() == "Chat: Two"


def test_an_agent_that_crashes_says_why_and_keeps_the_prompt(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    pids = agent_pids(view)
    send(view, "crash")
    wait_turn(view)
    body = text(view)
    assert "exit code 3" in body and "crashed on purpose" in body, body
    assert chat_of(view).panel.prompt_text() == "crash"  # what the user sent is theirs to send again
    control.pump_until(lambda: not any(psutil.pid_exists(p) for p in pids), CEILING, "the agent to be gone")


def test_a_missing_agent_says_how_to_install_it(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace, [{"name": "Nowhere", "command": "no-such-acp-agent-xyz"}])
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Nowhere"})
    (view,) = chat_views(window)
    control.pump_until(lambda: "⚠" in text(view), CEILING, "the failure")
    assert "'no-such-acp-agent-xyz' was not found on PATH" in text(view)


def test_closing_the_window_or_unloading_stops_every_agent(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    first = start_chat(companion, window)
    pids = agent_pids(first)
    other = control.new_window([workspace])
    second = start_chat(companion, other)
    pids_other = agent_pids(second)
    assert pids and pids_other and all(psutil.pid_exists(p) for p in pids + pids_other)
    control.close_window(window)
    control.pump_until(
        lambda: not any(psutil.pid_exists(p) for p in pids), CEILING, "the closed window's agent to stop"
    )
    assert all(psutil.pid_exists(p) for p in pids_other)
    companion.unload()
    control.pump_until(
        lambda: not any(psutil.pid_exists(p) for p in pids_other), CEILING, "the agent to stop on unload"
    )


def test_an_edit_opens_the_review_named_after_the_agent_and_accept_writes_the_users_text(
    companion: Companion, workspace: str
) -> None:
    path = write(workspace, "notes.txt", "one\n")
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, f"edit {path} two")
    proposal = review_proposal(window)
    (banner,) = control.phantoms(proposal, "gemini_companion.banner")
    assert "<b>Script</b> proposes a change to" in banner["content"]
    control.select(proposal, sublime.Region(0, proposal.size()))
    control.type_text(proposal, "mine")
    control.click_link(proposal, "accept", "gemini_companion.banner")
    wait_turn(view)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "mine"
    assert "written" in text(view)


def test_an_edit_rejected_leaves_the_file_unchanged(companion: Companion, workspace: str) -> None:
    path = write(workspace, "notes.txt", "one\n")
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, f"edit {path} two")
    proposal = review_proposal(window)
    control.click_link(proposal, "reject", "gemini_companion.banner")
    wait_turn(view)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "one\n"
    assert "not written" in text(view)


def prompts_file(tmp_path: Any) -> str:
    return os.path.join(str(tmp_path), "prompts.txt")


def recorded(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [entry.strip() for entry in handle.read().split("---\n") if entry.strip()]


def test_send_selection_into_a_chat_attaches_the_file_as_a_resource(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    record = prompts_file(tmp_path)
    path = write(workspace, "notes.txt", "one\ntwo\nthree\n")
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    view = start_chat(companion, window)
    chat = chat_of(view)
    source = control.open_file(window, path)
    control.select(source, sublime.Region(0, 6))
    source.run_command("gemini_companion_send_selection")
    assert chat.panel.prompt_text() == "@notes.txt#L1-2 "
    assert window.active_view() == view
    control.type_text(view, "explain this")
    control.press_keys(view, "enter")
    wait_turn(view)
    sent = recorded(record)[-1].splitlines()
    assert sent[0] == "@notes.txt#L1-2 explain this" and sent[-1] == f"resource file://{path}", sent


def test_send_to_a_chat_respects_context_exclude_and_pause(companion: Companion, workspace: str) -> None:
    secret = write(workspace, ".env", "TOKEN=1\n")
    plain = write(workspace, "plain.txt", "x\n")
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    control.open_file(window, secret).run_command("gemini_companion_send_file")
    assert chat.panel.prompt_text() == ""
    assert any("context_exclude" in m for m in control.status_messages())
    window.run_command("gemini_companion_toggle_sharing")  # pause
    control.settle()
    control.focus(view)
    control.open_file(window, plain).run_command("gemini_companion_send_file")
    assert chat.panel.prompt_text() == ""
    assert any("paused" in m for m in control.status_messages())


def test_allow_for_this_session_is_a_third_banner_link_under_the_agents_name(
    companion: Companion, workspace: str
) -> None:
    path = write(workspace, "notes.txt", "one\n")
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, f"edit {path} two")
    proposal = review_proposal(window)
    (banner,) = control.phantoms(proposal, "gemini_companion.banner")
    assert 'href="accept-always"' in banner["content"] and ">Allow for this session</a>" in banner["content"]
    assert "without a review" in banner["content"]
    control.click_link(proposal, "accept-always", "gemini_companion.banner")
    wait_turn(view)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "two"
    assert chat_of(view).session.always_allowed


def test_continue_last_chat_loads_the_remembered_session(companion: Companion, workspace: str, tmp_path: Any) -> None:
    record = prompts_file(tmp_path)
    window = setup(companion, workspace, [scripted(env={"PROMPTS_FILE": record})])
    first = start_chat(companion, window)
    first.close()
    control.settle()
    assert control.run_from_palette(window, "gemini_companion_continue_chat", {"agent": "Script"})
    view = control.pump_until(lambda: chat_views(window), CEILING, "the continued chat")[0]
    control.pump_until(lambda: "is ready" in text(view), CEILING, "the session to load")
    assert "load s1" in recorded(record)
    assert "## You\n\nthe earlier prompt" in text(view) and "the earlier answer" in text(view)


def real_gemini(tmp_path: Any, *turns: list[dict[str, Any]]) -> dict[str, Any]:
    """The real Gemini CLI 0.61.0 `--acp`, offline: recorded model turns, a dummy key, a scratch home
    (reference acp.md §2; as tests/acp/conftest.py runs it)."""
    from tests.conformance.harness import PINNED, make_gemini_home, node, recorded_turns, require_node_modules

    require_node_modules()  # fails with the command that installs it, never skips
    home = make_gemini_home(os.path.join(str(tmp_path), "gemini-home"))
    responses = os.path.join(str(tmp_path), "responses.jsonl")
    with open(responses, "w", encoding="utf-8") as handle:
        handle.write(recorded_turns(*turns))
    env = {"HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_API_KEY": "fake"}
    args = [PINNED.gemini_js, "--acp", "--fake-responses-non-strict", responses]
    return {"name": "Gemini CLI", "command": node(), "args": args, "env": env}


def gemini_writes_hello(
    companion: Companion, workspace: str, tmp_path: Any, answer: str
) -> tuple[sublime.Window, sublime.View, str, sublime.View]:
    """A chat with the real Gemini CLI whose model writes hello.txt, then answers `answer`; returns
    once the write's review shows (window, chat view, the file's path, the proposal view)."""
    from tests.conformance.harness import write_file_call

    path = os.path.join(os.path.realpath(workspace), "hello.txt")
    agent = real_gemini(tmp_path, [write_file_call(path, "hello\n")], [{"text": answer}])
    window = setup(companion, workspace, [agent])
    view = start_chat(companion, window, "Gemini CLI")
    send(view, "write hello.txt")
    return window, view, path, review_proposal(window)


def test_real_gemini_cli_streams_and_its_edit_is_reviewed_with_the_users_text_on_disk(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    _, view, path, proposal = gemini_writes_hello(companion, workspace, tmp_path, "Done, the file is written.")
    (banner,) = control.phantoms(proposal, "gemini_companion.banner")
    assert "<b>Gemini CLI</b> proposes a change to" in banner["content"]
    assert ">Allow for this session</a>" in banner["content"]  # Gemini's own name for proceed_always
    assert text(proposal) == "hello\n"
    control.select(proposal, sublime.Region(0, proposal.size()))
    control.type_text(proposal, "mine\n")
    control.click_link(proposal, "accept", "gemini_companion.banner")
    wait_turn(view)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "mine\n"
    body = text(view)
    assert "## Gemini CLI\n\nDone, the file is written." in body, body
    # One review of the edit: the chat's Gemini (ide.enabled in its settings) never found the window's
    # discovery file, so it never joined as an IDE client to open a second review of the same edit.
    assert companion.ready(view.window()).connected_clients == []
    cards = [p["content"] for p in control.phantoms(view)]
    assert any("completed" in c and "reviewed" in c for c in cards), cards


def test_real_gemini_cli_edit_rejected_leaves_no_file(companion: Companion, workspace: str, tmp_path: Any) -> None:
    _, view, path, proposal = gemini_writes_hello(companion, workspace, tmp_path, "It was rejected.")
    assert "Chat: Gemini CLI (Default)" in view.get_status("gemini_companion")
    control.close_tab(proposal)  # closing the review rejects it
    wait_turn(view)
    assert not os.path.exists(path)


def test_a_reply_is_shown_in_batches_of_at_most_32_kib_per_main_thread_tick(
    companion: Companion, workspace: str
) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    chat = chat_of(view)
    logged = len(control.command_log())
    chunk = "y" * 1023 + "\n"
    for _ in range(100):  # what the loop thread hands over while the main thread is busy elsewhere
        chat.port.agent_text(chunk)
    control.settle()
    inserts = [
        args["characters"]
        for _, name, args in control.command_log()[logged:]
        if name == "gemini_companion_chat_insert" and "y" in args["characters"]
    ]
    assert [len(i) for i in inserts] == [32768, 32768, 32768, 4096]  # 100 chunks, 4 ticks
    assert text(view).count(chunk) == 100


def test_a_flood_of_updates_reaches_the_view_whole(companion: Companion, workspace: str) -> None:
    from tests.acp import scripted_agent

    flood = {"name": "Flood", "command": sys.executable, "args": [scripted_agent.__file__, "flood"]}
    window = setup(companion, workspace, [flood])
    view = start_chat(companion, window, "Flood")
    send(view, "go")
    wait_turn(view)
    # One line of 600 000 characters: the view shows it in lines of 2000, each going on after "\n↪ ".
    assert text(view).replace("\n↪ ", "").count(scripted_agent.REPLY) == scripted_agent.FLOOD


def test_a_window_the_registry_closes_stops_its_chats_agents(companion: Companion, workspace: str) -> None:
    """The lifecycle's reconcile closes a window's server when the window is gone, with or without
    an event (sublimehq/sublime_text#5148): its chats' agents go with it, view events or not."""
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    pids, chat = agent_pids(view), chat_of(view)
    assert pids and all(psutil.pid_exists(p) for p in pids)
    companion.registry().close(window)
    control.pump_until(lambda: not any(psutil.pid_exists(p) for p in pids), CEILING, "the agent to stop")
    assert chat.ended


@pytest.mark.parametrize("mid_turn", [False, True])
def test_on_exit_stops_every_chats_agent_without_an_api_call(
    editor: Any, workspace: str, tmp_path: Any, mid_turn: bool
) -> None:
    companion = Companion(os.path.join(str(tmp_path), "tmp", "gemini", "ide"))
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    pids = agent_pids(view)
    assert pids and all(psutil.pid_exists(p) for p in pids)
    if mid_turn:  # the turn's end comes while Sublime exits, and must not reach its API
        send(view, "wait")
    control.exit_editor()  # Sublime quits: on_exit, no plugin_unloaded
    assert not any(psutil.pid_exists(p) for p in pids)  # on_exit waited for the agents' trees
    assert control.violations() == []
    assert control.errors() == []


def test_an_agent_that_needs_a_login_says_so_in_the_chat(companion: Companion, workspace: str) -> None:
    from tests.acp import scripted_agent

    agent = {"name": "Needs login", "command": sys.executable, "args": [scripted_agent.__file__, "auth"]}
    window = setup(companion, workspace, [agent])
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Needs login"})
    (view,) = chat_views(window)
    control.pump_until(lambda: "⚠" in text(view), CEILING, "the failure")
    assert "Needs login needs a login" in text(view), text(view)
    assert "Chat:" not in view.get_status("gemini_companion")  # an ended chat is not in the status bar


def test_closing_a_chat_whose_agent_never_answers_stops_it(companion: Companion, workspace: str, tmp_path: Any) -> None:
    from tests.acp import scripted_agent

    pid_file = os.path.join(str(tmp_path), "agent.pid")
    agent = {"name": "Silent", "command": sys.executable, "args": [scripted_agent.__file__, "garbage-only", pid_file]}
    window = setup(companion, workspace, [agent])
    companion.ready(window)
    assert control.run_from_palette(window, "gemini_companion_new_chat", {"agent": "Silent"})
    (view,) = chat_views(window)
    pid = int(control.pump_until(lambda: recorded(pid_file), CEILING, "the agent to start")[0])
    assert "Starting Silent" in text(view) and psutil.pid_exists(pid)
    control.close_tab(view)  # never frozen: the user closes the chat while its agent says nothing
    control.pump_until(lambda: not psutil.pid_exists(pid), CEILING, "the silent agent to stop")


def test_an_edit_made_without_asking_is_marked_and_its_diff_opens(companion: Companion, workspace: str) -> None:
    path = write(workspace, "quiet.txt", "before\n")
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    send(view, f"sneak {path} after")
    wait_turn(view)
    (card,) = [p for p in control.phantoms(view) if "Edit quietly" in p["content"]]
    assert "applied without review" in card["content"] and "reviewed<" not in card["content"]
    assert "without asking: applied without review" in text(view)  # the core's notice, a quoted line
    control.click_link(view, "diff-0", card["key"])
    diff_view = window.active_view()
    assert diff_view is not None and diff_view.name() == "quiet.txt (applied without review)"
    assert text(diff_view) == "after" and control.reference_document(diff_view) == "before\n"
    assert diff_view.is_read_only() and control.inline_diff_shown(diff_view)


def test_real_gemini_cli_cancel_during_its_review_closes_it_and_writes_nothing(
    companion: Companion, workspace: str, tmp_path: Any
) -> None:
    window, view, path, _ = gemini_writes_hello(companion, workspace, tmp_path, "Stopped.")
    assert control.press_keys(view, "escape") == "gemini_companion_chat_cancel"
    wait_turn(view)
    assert not [v for v in window.views() if v.settings().get("gemini_companion.role")]  # the review closed
    assert not os.path.exists(path)
    assert "The turn ended: cancelled." in text(view)


def test_closing_a_chat_takes_it_off_the_status_bar(companion: Companion, workspace: str) -> None:
    window = setup(companion, workspace)
    view = start_chat(companion, window)
    other = control.open_file(window, write(workspace, "a.txt", "a\n"))
    control.settle()
    assert "Chat: Script" in other.get_status("gemini_companion")
    control.close_tab(view)
    control.settle()
    assert "Chat:" not in other.get_status("gemini_companion")
