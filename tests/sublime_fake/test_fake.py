"""The fake behaves like Sublime Text where the adapter depends on it: threads, text units, commands,
events, windows and layouts. If the fake were looser than Sublime, adapter tests could pass on
code that fails in the editor; these tests pin the stricter behaviour down."""

from __future__ import annotations

import os
import textwrap
import threading
import types
from typing import Any

import pytest

from tests.sublime_fake import _plugin_host, _state, control, sublime, sublime_plugin

PLUGIN = """
import threading
import sublime
import sublime_plugin

calls = []


def plugin_loaded():
    calls.append(("plugin_loaded", threading.current_thread().name))


def plugin_unloaded():
    calls.append(("plugin_unloaded", threading.current_thread().name))


class RecordingListener(sublime_plugin.EventListener):
    def on_activated(self, view):
        calls.append(("on_activated", view.id(), threading.current_thread().name))

    def on_activated_async(self, view):
        calls.append(("on_activated_async", view.id(), threading.current_thread().name))

    def on_selection_modified_async(self, view):
        calls.append(("on_selection_modified_async", view.id(), threading.current_thread().name))

    def on_load(self, view):
        calls.append(("on_load", view.id(), view.is_loading()))

    def on_close(self, view):
        calls.append(("on_close", view.id(), view.window()))

    def on_pre_close(self, view):
        calls.append(("on_pre_close", view.id(), view.window()))

    def on_modified(self, view):
        calls.append(("on_modified", view.id(), view.change_count()))

    def on_text_command(self, view, name, args):
        if name == "rewrite_me":
            return ("shout", {"text": "rewritten"})
        return None

    def on_post_window_command(self, window, name, args):
        calls.append(("on_post_window_command", name, args))

    def on_new_window_async(self, window):
        calls.append(("on_new_window_async", window.id(), threading.current_thread().name))


class ShoutCommand(sublime_plugin.TextCommand):
    def run(self, edit, text="hi"):
        self.view.insert(edit, 0, text.upper())
        global last_edit
        last_edit = edit


class ExportHtmlCommand(sublime_plugin.WindowCommand):
    enabled = True

    def run(self, where):
        calls.append(("html_export", where, threading.current_thread().name))

    def is_enabled(self, where):
        return ExportHtmlCommand.enabled


class _HiddenCommand(sublime_plugin.WindowCommand):
    def run(self):
        calls.append(("hidden",))
"""


@pytest.fixture
def plugin(host: _state.Host, tmp_path: object) -> types.ModuleType:
    root = os.path.join(str(tmp_path), "Fake Test Package")
    os.makedirs(root)
    with open(os.path.join(root, "plugin.py"), "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(PLUGIN))
    module = control.load_plugin("Fake Test Package.plugin", "Fake Test Package", root)
    yield module
    control.unload_plugin("Fake Test Package.plugin")


def write(tmp_path: object, name: str, text: str) -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return path


# -- threads --


def test_set_timeout_runs_only_when_the_main_thread_is_pumped_and_on_that_thread(host: _state.Host) -> None:
    ran: list[str] = []
    threading.Thread(target=lambda: sublime.set_timeout(lambda: ran.append(threading.current_thread().name))).start()
    control.wait_async_idle()
    assert ran == []
    control.pump_until(lambda: ran)
    assert ran == [threading.current_thread().name]


def test_set_timeout_async_runs_in_order_on_one_shared_worker(host: _state.Host) -> None:
    seen: list[tuple[int, str]] = []
    for i in range(20):
        sublime.set_timeout_async(lambda i=i: seen.append((i, threading.current_thread().name)))
    control.wait_async_idle()
    assert [i for i, _ in seen] == list(range(20))
    assert {name for _, name in seen} == {_state.WORKER_THREAD_NAME}


def test_delayed_timeouts_keep_their_delay(host: _state.Host) -> None:
    order: list[str] = []
    sublime.set_timeout(lambda: order.append("late"), 200)
    sublime.set_timeout(lambda: order.append("soon"), 0)
    control.pump(0)
    assert order == ["soon"]
    control.pump_until(lambda: len(order) == 2)
    assert order == ["soon", "late"]


def test_ui_changes_off_the_main_thread_are_violations_and_reads_are_not(host: _state.Host) -> None:
    window = control.new_window()
    view = window.new_file()

    def worker() -> None:
        view.size()
        view.substr(sublime.Region(0, 1))
        window.views()
        view.set_name("from a worker")

    sublime.set_timeout_async(worker)
    control.wait_async_idle()
    assert len(control.violations()) == 1
    assert "View.set_name" in control.violations()[0]


def test_api_calls_during_on_exit_are_violations(host: _state.Host, tmp_path: object) -> None:
    root = os.path.join(str(tmp_path), "Exit Package")
    os.makedirs(root)
    with open(os.path.join(root, "plugin.py"), "w", encoding="utf-8") as handle:
        handle.write(
            "import sublime, sublime_plugin\n"
            "class L(sublime_plugin.EventListener):\n"
            "    def on_exit(self):\n"
            "        sublime.status_message('bye')\n"
        )
    control.new_window()
    control.load_plugin("Exit Package.plugin", "Exit Package", root)
    control.exit_editor()
    assert any("after the API shut down" in v for v in control.violations())


# -- text units --


def test_rowcol_counts_characters_utf16_and_utf8_like_sublime(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window()
    path = write(tmp_path, "u.txt", "first\nh\u00e9 \U0001f600 x\n")
    view = control.open_file(window, path)
    point = view.text_point(1, 5)  # after "hé 😀 "
    assert view.substr(point) == "x"
    assert view.rowcol(point) == (1, 5)
    assert view.rowcol_utf16(point) == (1, 6)
    assert view.rowcol_utf8(point) == (1, 9)
    assert view.text_point_utf16(1, 6) == point
    assert view.text_point_utf8(1, 9) == point
    assert view.text_point(0, 99, clamp_column=True) == 5


def test_windows_line_endings_are_normalised_in_the_buffer_and_kept_on_save(
    host: _state.Host, tmp_path: object
) -> None:
    window = control.new_window()
    path = write(tmp_path, "crlf.txt", "a\r\nb\r\n")
    view = control.open_file(window, path)
    assert view.substr(sublime.Region(0, view.size())) == "a\nb\n"
    assert view.line_endings() == "Windows"
    control.type_text(view, "z")
    assert view.is_dirty()
    control.press_save(view)
    assert not view.is_dirty()
    with open(path, "rb") as handle:
        assert handle.read() == b"za\r\nb\r\n"


def test_revert_reloads_the_file_and_leaves_no_unsaved_changes(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window()
    path = write(tmp_path, "r.txt", "one\n")
    view = control.open_file(window, path)
    control.type_text(view, "typed ")
    write(tmp_path, "r.txt", "two\r\n")
    view.run_command("revert")
    assert (view.substr(sublime.Region(0, view.size())), view.is_dirty()) == ("two\n", False)
    assert view.line_endings() == "Windows"


def test_selection_is_sorted_and_merged_so_sel0_is_the_topmost_region(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window()
    view = control.open_file(window, write(tmp_path, "s.txt", "0123456789\n"))
    control.select(view, sublime.Region(6, 8), sublime.Region(2, 4), 3)
    assert list(view.sel()) == [sublime.Region(2, 4), sublime.Region(6, 8)]
    assert view.sel()[0] == sublime.Region(2, 4)
    with pytest.raises(IndexError):
        view.sel()[2]


# -- commands --


def test_command_names_are_derived_from_class_names_as_sublime_does(host: _state.Host) -> None:
    class HTMLExportCommand(sublime_plugin.WindowCommand):
        pass

    class GeminiCompanionApplyCommand(sublime_plugin.WindowCommand):
        pass

    class Utf8Command(sublime_plugin.TextCommand):
        pass

    window = control.new_window()
    assert HTMLExportCommand(window).name() == "h_tMLExport"  # Sublime's quirk: capitals after the first stay
    assert GeminiCompanionApplyCommand(window).name() == "gemini_companion_apply"
    assert Utf8Command(window.new_file()).name() == "utf8"


def test_text_commands_get_a_live_edit_that_dies_after_run(host: _state.Host, plugin: types.ModuleType) -> None:
    window = control.new_window()
    view = window.new_file()
    view.run_command("shout", {"text": "abc"})
    assert view.substr(sublime.Region(0, view.size())) == "ABC"
    with pytest.raises(ValueError):
        view.insert(plugin.last_edit, 0, "late")


def test_on_text_command_can_rewrite_a_command(host: _state.Host, plugin: types.ModuleType) -> None:
    window = control.new_window()
    view = window.new_file()
    view.run_command("rewrite_me")
    assert view.substr(sublime.Region(0, view.size())) == "REWRITTEN"


def test_a_disabled_command_does_not_run_and_args_go_through_json(host: _state.Host, plugin: types.ModuleType) -> None:
    window = control.new_window()
    window.run_command("export_html", {"where": ("a", "b")})
    assert ("html_export", ["a", "b"], threading.current_thread().name) in plugin.calls
    assert ("on_post_window_command", "export_html", {"where": ["a", "b"]}) in plugin.calls
    plugin.ExportHtmlCommand.enabled = False
    count = len(plugin.calls)
    window.run_command("export_html", {"where": "c"})
    assert len(plugin.calls) == count
    with pytest.raises(TypeError):
        window.run_command("export_html", {"where": object()})


def test_only_public_names_are_loaded_and_unknown_commands_are_recorded(
    host: _state.Host, plugin: types.ModuleType
) -> None:
    window = control.new_window()
    window.run_command("_hidden")
    assert ("hidden",) not in plugin.calls
    assert ("window", "_hidden", None) in control.unknown_commands()


def test_read_only_buffers_ignore_edits_unless_append_is_forced(host: _state.Host) -> None:
    window = control.new_window()
    view = window.new_file()
    view.set_read_only(True)
    view.run_command("append", {"characters": "no"})
    view.run_command("insert", {"characters": "no"})
    assert view.size() == 0
    view.run_command("append", {"characters": "yes", "force": True})
    assert view.substr(sublime.Region(0, view.size())) == "yes"


# -- events and plugin lifecycle --


def test_plugin_loaded_runs_and_activation_is_synthesized_on_load(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window()
    view = window.new_file()
    control.wait_async_idle()  # the window's own events are over before the plugin arrives
    root = os.path.join(str(tmp_path), "Fake Test Package")
    os.makedirs(root)
    with open(os.path.join(root, "plugin.py"), "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(PLUGIN))
    module = control.load_plugin("Fake Test Package.plugin", "Fake Test Package", root)
    control.wait_async_idle()
    main = threading.current_thread().name
    assert module.calls[:3] == [
        ("plugin_loaded", main),
        ("on_activated", view.id(), main),
        ("on_activated_async", view.id(), _state.WORKER_THREAD_NAME),
    ]
    control.unload_plugin("Fake Test Package.plugin")
    assert module.calls[-1] == ("plugin_unloaded", main)
    assert control.listener_count() == 0 and control.command_classes() == []


def test_at_startup_plugin_loaded_waits_for_the_api(host: _state.Host, tmp_path: object) -> None:
    root = os.path.join(str(tmp_path), "Startup Package")
    os.makedirs(root)
    with open(os.path.join(root, "plugin.py"), "w", encoding="utf-8") as handle:
        handle.write("import sublime\ncalls = []\ndef plugin_loaded():\n    calls.append(sublime.version())\n")
    module = control.load_plugin("Startup Package.plugin", "Startup Package", root, startup=True)
    assert module.calls == ["4213"]
    control.unload_plugin("Startup Package.plugin")


def test_async_events_run_on_the_worker_and_on_close_has_no_window(
    host: _state.Host, plugin: types.ModuleType, tmp_path: object
) -> None:
    window = control.new_window()
    control.wait_async_idle()
    assert ("on_new_window_async", window.id(), _state.WORKER_THREAD_NAME) in plugin.calls
    view = control.open_file(window, write(tmp_path, "a.txt", "abc\n"))
    assert ("on_load", view.id(), False) in plugin.calls
    control.click(view, 2)
    control.wait_async_idle()
    assert ("on_selection_modified_async", view.id(), _state.WORKER_THREAD_NAME) in plugin.calls
    control.close_tab(view)
    assert ("on_pre_close", view.id(), window) in plugin.calls
    assert ("on_close", view.id(), None) in plugin.calls
    assert not view.is_valid()
    # The ST4 regressions sublimehq/sublime_text#3463 and #3516: no window in on_pre_close either.
    control.pre_close_window(False)
    other = control.open_file(window, write(tmp_path, "b.txt", "b\n"))
    control.close_tab(other)
    assert ("on_pre_close", other.id(), None) in plugin.calls
    assert window.views() == [] and not other.is_valid()


def test_a_handler_exception_is_recorded_and_the_other_handlers_still_run(host: _state.Host, tmp_path: object) -> None:
    root = os.path.join(str(tmp_path), "Broken Package")
    os.makedirs(root)
    with open(os.path.join(root, "plugin.py"), "w", encoding="utf-8") as handle:
        handle.write(
            "import sublime_plugin\nseen = []\n"
            "class A(sublime_plugin.EventListener):\n    def on_new(self, view):\n        raise RuntimeError('boom')\n"
            "class B(sublime_plugin.EventListener):\n    def on_new(self, view):\n        seen.append(view.id())\n"
        )
    window = control.new_window()
    module = control.load_plugin("Broken Package.plugin", "Broken Package", root)
    view = window.new_file()
    assert module.seen == [view.id()]
    assert len(control.errors()) == 1 and "boom" in control.errors()[0]
    control.unload_plugin("Broken Package.plugin")
    host.errors.clear()


# -- windows, layouts, sheets --


def test_layout_groups_focus_and_closing_the_active_tab(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window()
    first = control.open_file(window, write(tmp_path, "one.txt", "1"))
    second = control.open_file(window, write(tmp_path, "two.txt", "2"))
    window.set_layout({"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]})
    assert window.num_groups() == 2
    window.set_view_index(second, 1, 0)
    assert window.get_view_index(second) == (1, 0)
    assert window.views_in_group(0) == [first]
    window.focus_group(0)
    assert window.active_view() == first
    window.set_layout({"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1]]})
    assert window.num_groups() == 1
    assert window.views() == [first, second]  # the removed group's tabs joined the last group
    window.focus_view(second)
    control.close_tab(second)
    assert window.active_view() == first
    with pytest.raises(ValueError):
        window.set_layout({"cols": [0.0, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 2, 1]]})


def test_folders_come_from_project_data_and_output_panels_have_no_sheet(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window([str(tmp_path)])
    assert window.folders() == [str(tmp_path)]
    panel = window.create_output_panel("x")
    assert panel.sheet() is None and panel.element() == "output:output"
    assert window.find_output_panel("x") == panel
    assert window.views() == []


def test_phantom_sets_keep_unchanged_phantoms_and_links_call_back(host: _state.Host) -> None:
    window = control.new_window()
    view = window.new_file()
    clicked: list[str] = []
    phantoms = sublime.PhantomSet(view, "k")

    def nav(href: str) -> None:
        clicked.append(href)

    phantom = sublime.Phantom(sublime.Region(0), '<a href="go">Go</a>', sublime.PhantomLayout.BLOCK, nav)
    phantoms.update([phantom])
    first_id = phantom.id
    again = sublime.Phantom(sublime.Region(0), '<a href="go">Go</a>', sublime.PhantomLayout.BLOCK, nav)
    phantoms.update([again])
    assert again.id == first_id and len(control.phantoms(view, "k")) == 1
    control.click_link(view, "go")
    assert clicked == ["go"]
    phantoms.update([])
    assert control.phantoms(view) == []


def test_settings_notify_and_reject_values_sublime_cannot_store(host: _state.Host) -> None:
    settings = sublime.load_settings("Test.sublime-settings")
    assert sublime.load_settings("Test.sublime-settings").settings_id == settings.settings_id
    changes: list[object] = []
    settings.add_on_change("t", lambda: changes.append(settings.get("k")))
    settings.set("k", [1, 2])
    assert changes == [[1, 2]]
    value = settings.get("k")
    value.append(3)
    assert settings.get("k") == [1, 2]  # a copy, as the real API returns
    with pytest.raises(TypeError):
        settings.set("bad", {1, 2})
    settings.clear_on_change("t")
    settings.set("k", 1)
    assert len(changes) == 1


def test_scratch_views_are_never_dirty_and_dirty_files_ask_before_closing(host: _state.Host, tmp_path: object) -> None:
    window = control.new_window()
    scratch = window.new_file()
    scratch.set_scratch(True)
    scratch.run_command("insert", {"characters": "x"})
    assert not scratch.is_dirty()
    view = control.open_file(window, write(tmp_path, "d.txt", "d"))
    control.type_text(view, "y")
    assert control.close_tab(view) is False  # no scripted answer: the prompt is cancelled
    assert view.is_valid() and control.dialogs()[-1].kind == "yes_no_cancel"
    control.answer_dialogs(sublime.DialogResult.NO)
    assert control.close_tab(view) is True and not view.is_valid()


def test_timing_notes_each_callback_with_its_thread_and_owner(plugin: types.ModuleType) -> None:
    def later() -> None:
        pass

    window = control.new_window()
    first = window.new_file()
    window.new_file()
    control.focus_window(window)
    control.settle()
    control.start_timing()
    control.focus(first)
    sublime.set_timeout(later, 0)
    control.settle()
    timings = control.stop_timing()
    names = {(thread, name) for thread, name, _ns in timings}
    here = f"{__name__}.test_timing_notes_each_callback_with_its_thread_and_owner.<locals>.later"
    assert ("main", here) in names
    assert ("main", "Fake Test Package.plugin.RecordingListener.on_activated") in names, plugin.calls
    assert (_state.WORKER_THREAD_NAME, "Fake Test Package.plugin.RecordingListener.on_activated_async") in names
    assert all(ns >= 0 for _t, _n, ns in timings)
    window.new_file()
    control.settle()
    assert control.stop_timing() == []  # off again


def test_build_results_are_parsed_with_the_panels_regexes_like_the_exec_command_reads_them(
    host: _state.Host, tmp_path: Any
) -> None:
    window = control.new_window([])
    panel = window.create_output_panel("exec")
    panel.settings().set("result_file_regex", r"^(\S+):(\d+):(\d+): (.*)$")
    panel.settings().set("result_line_regex", r"^  line (\d+):(\d*) (.*)$")
    panel.settings().set("result_base_dir", str(tmp_path))
    text = "a.py:3:5: bad name\nnoise\n  line 9: more\n/abs/b.py:1:1: other\n"  # line 9 has no column
    panel.run_command("append", {"characters": text})
    assert panel.find_all_results_with_text() == [
        (os.path.join(str(tmp_path), "a.py"), 3, 5, "bad name"),
        (os.path.join(str(tmp_path), "a.py"), 9, 0, "more"),
        ("/abs/b.py", 1, 1, "other"),
    ]
    assert panel.find_all_results()[0] == (os.path.join(str(tmp_path), "a.py"), 3, 5)


def test_expand_variables_reads_two_backslashes_as_one_like_sublime() -> None:
    """sublimehq/sublime_text#4826 (SublimeTextIssues/Core#1878): a UNC path loses a backslash;
    `\\$` is a `$`; any other backslash and the variables' values are left as they are."""
    assert sublime.expand_variables(r"\\192.168.1.2", {}) == r"\192.168.1.2"
    assert sublime.expand_variables(r"C:\a\b ${x} \$y", {"x": r"\\s\h"}) == r"C:\a\b \\s\h $y"
    assert sublime.expand_variables([r"\\\\s\\h"], {}) == [r"\\s\h"]


def _syntax(root: str, name: str, body: str) -> str:
    with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
        handle.write("%YAML 1.2\n---\n" + textwrap.dedent(body))
    return f"Packages/Mine/{name}"


def test_a_syntax_extending_another_loads_only_with_the_same_version_an_existing_parent_and_no_cycle(
    host: _state.Host, tmp_path: object
) -> None:
    root = os.path.join(str(tmp_path), "Mine")
    os.makedirs(root)
    _plugin_host.register_package("Mine", root)
    markdown = "extends: Packages/Markdown/Markdown.sublime-syntax\n"  # Markdown is version 2
    mixed = _syntax(root, "Mixed.sublime-syntax", "name: Mixed\nscope: text.mixed\n" + markdown)
    same = _syntax(root, "Same.sublime-syntax", "name: Same\nscope: text.same\nversion: 2\n" + markdown)
    child = _syntax(root, "Child.sublime-syntax", "scope: text.child\nversion: 2\nextends: Same.sublime-syntax\n")
    lost = _syntax(root, "Lost.sublime-syntax", "scope: text.lost\nversion: 2\nextends: [Nowhere.sublime-syntax]\n")
    _syntax(root, "A.sublime-syntax", "scope: text.a\nversion: 2\nextends:\n  - B.sublime-syntax # loop\n")
    _syntax(root, "B.sublime-syntax", "scope: text.b\nversion: 2\nextends: 'A.sublime-syntax'\n")
    assert "mixed versions" in (control.syntax_problem(mixed) or "")
    assert control.syntax_problem(same) is None and control.syntax_problem(child) is None
    assert "to extend: Packages/Mine/Nowhere.sublime-syntax" in (control.syntax_problem(lost) or "")
    assert "extends itself" in (control.syntax_problem("Packages/Mine/A.sublime-syntax") or "")
    view = control.new_window().new_file()
    view.assign_syntax(mixed)  # an error dialog, and the view keeps its syntax
    assert view.syntax() is not None and view.syntax().scope == "text.plain"
    assert [d.kind for d in control.dialogs()] == ["error"] and "mixed versions" in control.dialogs()[0].message
    view.assign_syntax(child)
    assert view.syntax() is not None and view.syntax().scope == "text.child"


def test_every_syntax_the_package_ships_loads(host: _state.Host) -> None:
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    _plugin_host.register_package("Gemini Companion", repo)
    shipped = [r for r in sublime.find_resources("*.sublime-syntax") if r.startswith("Packages/Gemini Companion/")]
    assert "Packages/Gemini Companion/Gemini Companion Chat.sublime-syntax" in shipped
    assert {r: control.syntax_problem(r) for r in shipped} == dict.fromkeys(shipped)


def test_undo_and_redo_are_changes_that_fire_on_modified(host: _state.Host, plugin: types.ModuleType) -> None:
    view = control.new_window().new_file()
    view.run_command("insert", {"characters": "ab"})
    view.run_command("insert", {"characters": "c"})
    modified = lambda: [c for c in plugin.calls if c[0] == "on_modified"]  # noqa: E731
    for command, expected in (("undo", "ab"), ("undo", ""), ("redo", "ab"), ("redo_or_repeat", "abc")):
        count = view.change_count()
        view.run_command(command)
        assert view.substr(sublime.Region(0, view.size())) == expected
        assert view.change_count() == count + 1 and modified()[-1] == ("on_modified", view.id(), count + 1)
    view.run_command("undo")
    view.run_command("insert", {"characters": "!"})  # a new change: nothing left to redo
    view.run_command("redo")
    assert view.substr(sublime.Region(0, view.size())) == "ab!"
    view.clear_undo_stack()
    view.run_command("undo")
    assert view.substr(sublime.Region(0, view.size())) == "ab!"


def test_a_key_runs_the_newest_binding_whose_context_holds_and_defaults_escape_is_oldest(host: _state.Host) -> None:
    window = control.new_window()
    view = window.new_file()
    view.run_command("insert", {"characters": "one two"})
    assert control.press_keys(view, "escape") == ""  # nothing to close: Default's Escape does nothing
    control.show_ui(view, auto_complete=True, popup=True)
    assert control.press_keys(view, "escape") == "hide_auto_complete"
    assert control.press_keys(view, "escape") == "hide_popup"
    assert control.press_keys(view, "escape") == ""
    control.show_ui(view, auto_complete=True)
    assert control.press_keys(view, "enter") == "commit_completion"
    assert control.press_keys(view, "enter") == "insert"
    assert view.substr(sublime.Region(0, view.size())) == "one two\n"


def test_a_clone_shares_its_buffer_and_a_dragged_tab_keeps_its_view(host: _state.Host) -> None:
    first, second = control.new_window(), control.new_window()
    view = first.new_file()
    view.settings().set("mine", 1)
    clone = control.clone_view(view)
    assert clone.buffer_id() == view.buffer_id() and view.clones() == [clone] and not clone.is_primary()
    assert clone.settings().get("mine") == 1 and first.active_view() == clone
    clone.run_command("insert", {"characters": "shared"})
    assert view.substr(sublime.Region(0, view.size())) == "shared"
    control.close_tab(clone)
    assert view.is_valid() and view.clones() == []
    control.drag_to_window(view, second)
    assert view.window() == second and second.active_view() == view and view not in first.views()
    assert sublime.active_window() == second


def test_revert_modification_puts_back_the_reference_lines_of_the_hunk_under_the_caret(host: _state.Host) -> None:
    view = control.new_window().new_file()
    view.run_command("insert", {"characters": "A\nb\nc\nE\n"})
    view.set_reference_document("a\nb\nc\nd\ne\n")  # line 0 changed; "d" deleted and "e" changed: one hunk
    whole = lambda: view.substr(sublime.Region(0, view.size()))  # noqa: E731
    control.select(view, view.text_point(1, 0))  # outside every hunk: nothing happens
    view.run_command("revert_modification")
    assert whole() == "A\nb\nc\nE\n"
    control.select(view, view.text_point(3, 0))
    view.run_command("revert_modification")
    assert whole() == "A\nb\nc\nd\ne\n"
    control.select(view, 0)
    view.run_command("revert_modification")
    assert whole() == "a\nb\nc\nd\ne\n"
    view.run_command("undo")  # one undoable edit each
    assert whole() == "A\nb\nc\nd\ne\n"


def test_typing_over_a_selection_leaves_a_caret_after_the_text_typed(host: _state.Host, tmp_path: Any) -> None:
    """The `insert` command replaces each selection, as typing does, and the caret follows the text
    (a committed completion replaces the word before the caret the same way)."""
    window = control.new_window([str(tmp_path)])
    view = window.new_file()
    control.type_text(view, "look at @no")
    control.select(view, sublime.Region(9, 11))
    control.type_text(view, "notes.txt ")
    control.type_text(view, "then")
    assert view.substr(sublime.Region(0, view.size())) == "look at @notes.txt then"
    assert [(r.a, r.b) for r in view.sel()] == [(23, 23)]


def test_a_completion_list_is_filled_from_any_thread(host: _state.Host) -> None:
    """`CompletionList.set_completions` "is thread-safe" ([stubs] L3083, since 4184): no violation."""
    completions = sublime.CompletionList(None, sublime.INHIBIT_WORD_COMPLETIONS)
    item = sublime.CompletionItem("@notes.txt", "file", "notes.txt")
    thread = threading.Thread(target=lambda: completions.set_completions([item], sublime.DYNAMIC_COMPLETIONS))
    thread.start()
    thread.join()
    assert completions.completions == [item] and completions.flags == sublime.DYNAMIC_COMPLETIONS
    assert control.violations() == []


def test_symbol_locations_finds_the_indexed_name_under_the_windows_folders_or_open(
    host: _state.Host, tmp_path: Any
) -> None:
    folder, other = str(tmp_path / "project"), str(tmp_path / "other")
    for path in (folder, other):
        os.makedirs(path)
    inside, outside = os.path.join(folder, "app.py"), os.path.join(other, "lib.py")
    for path in (inside, outside):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("class Foo: pass\n")
    control.index_symbol("Foo", inside, 1, 7)
    control.index_symbol("Foo", outside, 1, 7)
    window = control.new_window([folder])
    (found,) = window.symbol_locations("Foo", sublime.SYMBOL_SOURCE_INDEX, sublime.SYMBOL_TYPE_DEFINITION)
    assert (found.path, found.display_name, found.row, found.col) == (inside, "project/app.py", 1, 7)
    assert window.symbol_locations("Fo") == []  # the exact name only
    control.open_file(window, outside)
    assert {loc.path for loc in window.symbol_locations("Foo")} == {inside, outside}  # ANY: and the open files


def test_an_input_panel_answers_with_its_text_and_an_image_tab_has_a_file_but_no_view(
    host: _state.Host, tmp_path: Any
) -> None:
    window = control.new_window()
    answers: list[str | None] = []
    panel = window.show_input_panel("Path:", "/start/", answers.append, None, lambda: answers.append(None))
    assert panel.sheet() is None and control.input_panels()[0]["initial_text"] == "/start/"  # a panel, not a tab
    control.answer_input_panel("/start/shot.png")
    window.show_input_panel("Path:", "", answers.append, None, lambda: answers.append(None))
    control.answer_input_panel(None)  # Escape
    control.pump()
    assert answers == ["/start/shot.png", None] and control.input_panels() == []
    sheet = control.open_image(window, str(tmp_path / "shot.png"))
    assert isinstance(sheet, sublime.ImageSheet) and isinstance(window.active_sheet(), sublime.ImageSheet)
    assert sheet.view() is None and window.active_view() is None
    assert sheet.file_name() == str(tmp_path / "shot.png")
