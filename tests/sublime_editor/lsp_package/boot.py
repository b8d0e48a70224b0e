"""A stand-in for the LSP package (sublimelsp/LSP @ 7ffc721) with a language server that edits on
save: another package's on-save hook, loaded into the fake Sublime. What it does is LSP's:

* It serves only views it deems regular: `is_regular_view` below is LSP's (`plugin/documents.py`
  L115–133), and a view gets a session when LSP registers it on activation or load
  (`DocumentSyncListener.on_activated_async` L431–436, `on_load_async` L414–417). Untitled views
  are served too, as by a client config whose `schemes` include "buffer" (`plugin/core/types.py`
  L827).
* Its key binding replaces Ctrl+S / Cmd+S with `lsp_save {"async": true}` while the view has a
  session with a save capability (`Default.sublime-keymap` L239–244, `lsp.session_with_capability`).
* `lsp_save` runs its tasks on the async worker, then `sublime.set_timeout` runs the native `save`
  with the same arguments (`plugin/save_command.py` LspSaveCommand, `plugin/lsp_task.py`
  TasksRunner). Of its tasks, the code actions on save apply when the view has a window and code
  action kinds are on (`lsp_code_actions_on_save`, the view's setting over the user's,
  `plugin/code_actions.py` L266–283); formatting on save needs `lsp_format_on_save` (the view's
  setting first) and a file name (`plugin/formatting.py` L95–99). The stand-in server's fix-all
  code action appends `FIX` to the document; formatting upper-cases `format_me`.
* Edits from the server reach the view on the main thread as a text command
  (`lsp_apply_document_edit`, as `apply_text_edits` in `plugin/core/views.py` does).
"""

from __future__ import annotations

import json
import os
from typing import Any

import sublime
import sublime_plugin

# The package's key binding, written into Packages/LSP by the test's fixture (not kept as a
# .sublime-keymap here: the fake serves this repository as the Gemini Companion package).
CAPABILITIES = (
    "textDocumentSync.willSave | textDocumentSync.willSaveWaitUntil | codeActionProvider.codeActionKinds"
    " | documentFormattingProvider | documentRangeFormattingProvider"
)
# sublimelsp/LSP @ 7ffc721 Default.sublime-keymap L239-244: "Override native save to handle Code-Actions-On-Save"
KEYMAP = json.dumps([
    {
        "keys": ["primary+s"],
        "command": "lsp_save",
        "args": {"async": True},
        "context": [{"key": "lsp.session_with_capability", "operand": CAPABILITIES}],
    }
])  # fmt: skip
FIX = "# fixed by the language server\n"
USER_PREFS: dict[str, Any] = {"lsp_format_on_save": True, "lsp_code_actions_on_save": {"source.fixAll": True}}
sessions: set[int] = set()  # view ids LSP registered
saves: list[int] = []  # view ids on which lsp_save ran its tasks


def is_regular_view(v: sublime.View) -> bool:
    if v.element() is not None:
        return False
    settings = v.settings()
    if settings.get("is_widget") or settings.get("repl"):
        return False
    if (filename := v.file_name()) and os.path.basename(filename).startswith("syntax_test_"):
        return False
    sheet = v.sheet()
    if not sheet:
        return False
    if sheet.is_transient():  # noqa: SIM103 (LSP's code, as written)
        return False
    return True


class DocumentSyncListener(sublime_plugin.EventListener):
    def on_activated_async(self, view: sublime.View) -> None:
        if not view.is_loading() and is_regular_view(view):
            sessions.add(view.id())

    def on_load_async(self, view: sublime.View) -> None:
        if is_regular_view(view):
            sessions.add(view.id())

    def on_query_context(
        self, view: sublime.View, key: str, operator: int, operand: object, match_all: bool
    ) -> bool | None:
        if key != "lsp.session_with_capability":
            return None
        return view.id() in sessions


def _format_on_save(view: sublime.View) -> bool:
    own = view.settings().get("lsp_format_on_save", None)
    enabled = own if isinstance(own, bool) else USER_PREFS["lsp_format_on_save"]
    return bool(enabled) and bool(view.window()) and bool(view.file_name())


def _code_actions_on_save(view: sublime.View) -> bool:
    kinds = dict(USER_PREFS["lsp_code_actions_on_save"])
    kinds.update(view.settings().get("lsp_code_actions_on_save") or {})
    return bool(view.window()) and any(on for kind, on in kinds.items() if kind.startswith("source"))


class LspSaveCommand(sublime_plugin.TextCommand):
    def is_enabled(self, **kwargs: Any) -> bool:
        return self.view.id() in sessions

    def run(self, edit: sublime.Edit, **kwargs: Any) -> None:
        view = self.view
        saves.append(view.id())

        def tasks() -> None:  # on the async worker, like LSP's TasksRunner
            text = view.substr(sublime.Region(0, view.size()))
            if _code_actions_on_save(view):
                text += FIX
            if _format_on_save(view):
                text = text.replace("format_me", "FORMAT_ME")
            sublime.set_timeout(lambda: view.run_command("lsp_apply_document_edit", {"text": text}))
            sublime.set_timeout(lambda: view.run_command("save", kwargs))

        sublime.set_timeout_async(tasks)


class LspApplyDocumentEditCommand(sublime_plugin.TextCommand):
    def run(self, edit: sublime.Edit, text: str) -> None:
        if text != self.view.substr(sublime.Region(0, self.view.size())):
            self.view.replace(edit, sublime.Region(0, self.view.size()), text)
