"""Restore Checkpoint on a prompt of a chat: the window's folders go back to how they were before that
prompt (core/history/turns.py), after a tab showing what will change.

The plan is computed on a thread of its own (it checkpoints the folders: file I/O, never on the main
thread, nor on the async worker every package shares). A file changed after the agent, on disk or in
an open buffer with unsaved text, is a conflict: the tab shows both texts, and a quick panel asks
Keep mine / Take the checkpoint for each; nothing is written until the last answer and a final
confirmation. After the restore a clean open buffer is reloaded from its file (`revert`), a dirty one
the user took the checkpoint for gets the checkpoint's text as one undoable edit, and one the user
kept is not touched. The restore is undoable: the command with `undo` restores the checkpoint taken
just before it ("before restore to prompt N"), which the "Undo restore" link a restore leaves at the
end of its chat runs.
"""

from __future__ import annotations

import html
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import sublime

from .. import sessions as chat_sessions
from . import rewind as chat_rewind

if TYPE_CHECKING:
    from ....core.history.restore_plan import Conflict, RestorePlan
    from ....core.history.turns import Point, Turns

log = logging.getLogger("gemini_companion")
T = TypeVar("T")
TAB_SETTING = "gemini_companion.restore_plan"
COMMAND = "gemini_companion_restore_checkpoint"
UNDO_CARD = "undo-restore"
PREFIX = "Gemini Companion: "


def restore_checkpoint(
    window: sublime.Window, chat: str, prompt: int = 0, undo: bool = False, rewind: bool = False
) -> None:
    """Restore the checkpoint before prompt `prompt` (1 = the chat's first) of the chat `chat` (its
    id); with `undo`, the checkpoint taken before the chat's last restore (the command `COMMAND`).
    With `rewind`, the conversation follows the files (rewind.py): Rewind to Here, Undo rewind."""
    found = next((c for c in chat_sessions.chats(window) if c.id == chat), None)
    turns: Turns | None = getattr(found, "turns", None)
    if found is None or turns is None:
        sublime.status_message(PREFIX + "that chat keeps no checkpoints, so there is nothing to restore.")
        return
    if found.busy:
        sublime.status_message(PREFIX + "a turn is running; restore when it ends (or press Escape to cancel it).")
        return
    back = (-1 if undo else prompt) if rewind else 0
    restore = Restore(window, turns, _open_buffers(window), chat=found, rewind=back)
    _in_thread(lambda: restore.plan(prompt, undo), restore.planned)


def _open_buffers(window: sublime.Window) -> dict[str, sublime.View]:
    """The window's open files, by the name Sublime gives them (one view a buffer)."""
    found: dict[str, sublime.View] = {}
    for view in window.views():
        name = view.file_name()
        if name and name not in found:
            found[name] = view
    return found


@dataclass
class Restore:
    """One restore, from the plan to the buffers' update; main thread except `plan` and `apply`."""

    window: sublime.Window
    turns: Turns
    views: dict[str, sublime.View]  # file name -> its open view
    unsaved: dict[str, str] = field(default_factory=dict[str, str])  # file name -> its unsaved text
    seen: dict[str, int] = field(default_factory=dict[str, int])  # file name -> change count at the plan
    real: dict[str, str] = field(default_factory=dict[str, str])  # real path (as the plan names it) -> file name
    take: list[str] = field(default_factory=list[str])
    tab: sublime.View | None = None
    chat: chat_sessions.Chat | None = None  # where "Undo restore" goes
    rewind: int = 0  # Rewind to Here: the prompt the conversation goes back to (-1: Undo rewind)

    def __post_init__(self) -> None:
        for name, view in self.views.items():
            self.seen[name] = view.change_count()
            if view.is_dirty():
                self.unsaved[name] = view.substr(sublime.Region(0, view.size()))

    # -- worker thread --

    def plan(self, number: int, undo: bool) -> RestorePlan:
        self.real = {os.path.realpath(name): name for name in self.views}
        point = self._undo_point() if undo else self.turns.prompt_point(number)
        buffers = {real: self.unsaved[name] for real, name in self.real.items() if name in self.unsaved}
        return self.turns.plan(point, buffers)

    def _undo_point(self) -> Point:
        undos = [p for p in self.turns.points() if p.label.startswith("before restore")]
        if not undos:
            raise ValueError("this chat has no restore to undo")
        return undos[-1]

    # -- main thread --

    def planned(self, plan: RestorePlan | None, error: BaseException | None) -> None:
        if plan is None:
            sublime.status_message(PREFIX + _reason(error))
            return
        self.tab = _show_plan(self.window, plan)
        if not plan.changes:
            sublime.status_message(PREFIX + f"nothing to restore: the files are as they were before {plan.label}.")
            self._then_the_conversation()
            return
        self._ask(plan, 0)

    def _ask(self, plan: RestorePlan, index: int) -> None:
        """Keep mine / Take the checkpoint for conflict `index`, then the final confirmation."""
        if index == len(plan.conflicts):
            self._confirm(plan)
            return
        conflict = plan.conflicts[index]
        where = "your unsaved buffer" if conflict.in_buffer else "your version on disk"

        def chosen(picked: int) -> None:
            if picked < 0:
                self._cancelled()
                return
            if picked == 1:
                self.take.append(conflict.path)
            self._ask(plan, index + 1)

        self.window.show_quick_panel(
            [
                [f"Keep mine: {conflict.path}", f"leave {where} as it is"],
                [f"Take the checkpoint: {conflict.path}", f"as it was before {plan.label} (both texts are in the tab)"],
            ],
            chosen,
            placeholder=f"Conflict {index + 1} of {len(plan.conflicts)}: changed after the agent",
        )

    def _confirm(self, plan: RestorePlan) -> None:
        count = len(plan.changes) - (len(plan.conflicts) - len(self.take))

        def chosen(picked: int) -> None:
            if picked != 0:
                self._cancelled()
            elif self._buffers_unchanged(plan):
                _in_thread(
                    lambda: self.turns.apply(plan, self.take), lambda undo, error: self.applied(plan, undo, error)
                )

        self.window.show_quick_panel(
            [
                [f"Restore {plan.label}", f"{count} file(s) change; the tab lists them"],
                ["Cancel", "nothing is written"],
            ],
            chosen,
            placeholder=f"Restore the workspace to how it was before {plan.label}?",
        )

    def _buffers_unchanged(self, plan: RestorePlan) -> bool:
        """A buffer edited since the plan was shown refuses the restore (nothing written)."""
        for real in (c.path for c in plan.changes):
            name = self.real.get(real)
            view = self.views.get(name) if name else None
            if view is not None and view.is_valid() and view.change_count() != self.seen[name or ""]:
                sublime.status_message(
                    PREFIX + f"{name} changed after the restore plan was shown, so nothing was written; "
                    "restore again to see the new plan."
                )
                return False
        return True

    def applied(self, plan: RestorePlan, undo: Point | None, error: BaseException | None) -> None:
        if undo is None:
            sublime.status_message(PREFIX + _reason(error))
            return
        conflicts = {c.path: c for c in plan.conflicts}
        for change in plan.changes:
            name = self.real.get(change.path)
            view = self.views.get(name) if name else None
            if view is None or not view.is_valid() or (change.path in conflicts and change.path not in self.take):
                continue  # not open, or kept as the user has it
            _update_buffer(view, change.change, conflicts.get(change.path))
        message = f"Restored {plan.label} (undo: Restore checkpoint '{undo.label}')"
        sublime.status_message(PREFIX + message)
        self._offer_undo(undo)
        if self.tab is not None and self.tab.is_valid():
            _set_text(self.tab, _text_of(self.tab) + f"\n**{message}.**\n")
        self._then_the_conversation()

    def _then_the_conversation(self) -> None:
        """Rewind to Here and Undo rewind: the files are done; the chat's session follows."""
        if self.chat is None or not self.rewind:
            return
        if self.rewind > 0:
            chat_rewind.rewound_files(self.chat, self.rewind)
        else:
            chat_rewind.undone_files(self.chat)

    def _offer_undo(self, undo: Point) -> None:
        """ "Undo restore" at the end of the chat (the command needs the chat's id, which nobody types);
        one link, for the newest restore, which is the one `undo` restores."""
        chat = self.chat
        if chat is None or chat.ended or not chat.panel.view.is_valid():
            return
        args = {"chat": chat.id, "undo": True, "rewind": self.rewind > 0}
        window = self.window
        chat.panel.remove_card(UNDO_CARD)
        label = html.escape(undo.label)
        what = "Undo rewind" if self.rewind > 0 else "Undo restore"
        more = " and the conversation before the rewind" if self.rewind > 0 else ""
        link = f'<a href="undo">{what}</a> <span class="dim">(restores checkpoint \'{label}\'{more})</span>'
        chat.panel.card(UNDO_CARD, link, {"undo": lambda: window.run_command(COMMAND, args)})

    def _cancelled(self) -> None:
        sublime.status_message(PREFIX + "restore cancelled; nothing was written.")


def _update_buffer(view: sublime.View, change: str, conflict: Conflict | None) -> None:
    """The open buffer of a restored file shows the restored text: a dirty one the user chose to
    replace gets the checkpoint's text as one undoable edit; any other is reloaded from its file."""
    if change == "deleted":
        return  # no file to load: Sublime shows the buffer as deleted, its text stays
    if conflict is not None and conflict.in_buffer and conflict.checkpoint_text is not None:
        view.run_command("gemini_companion_replace_text", {"text": conflict.checkpoint_text})
    else:
        view.run_command("revert")


def _show_plan(window: sublime.Window, plan: RestorePlan) -> sublime.View:
    """The plan in a scratch tab (Markdown, like the chat): what will change, each conflict's texts."""
    view = window.new_file()
    view.set_scratch(True)
    view.set_name(f"Restore {plan.label}")
    view.settings().set(TAB_SETTING, True)
    view.assign_syntax("Packages/Markdown/Markdown.sublime-syntax")
    lines = [f"# Restore {plan.label}", "", f"The workspace goes back to how it was before {plan.label}.", ""]
    lines += [f"- {line}" for line in plan.lines()] or ["Nothing changes."]
    for conflict in plan.conflicts:
        lines += ["", *_conflict_section(conflict, plan.label)]
    _set_text(view, "\n".join(lines) + "\n")
    window.focus_view(view)
    return view


def _conflict_section(conflict: Conflict, label: str) -> list[str]:
    where = "your unsaved buffer" if conflict.in_buffer else "yours, on disk now"
    return [
        f"## Conflict: {conflict.path}",
        "",
        "It changed after the agent. Keep mine leaves it as it is; Take the checkpoint restores it.",
        "",
        f"### {where}",
        *_fenced(conflict.current_text),
        "",
        f"### the checkpoint (before {label})",
        *_fenced(conflict.checkpoint_text),
    ]


def _fenced(text: str | None) -> list[str]:
    if text is None:
        return ["(no file)"]
    fence = "`" * max(3, max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0) + 1)
    return [fence, text.rstrip("\n"), fence]


def _set_text(view: sublime.View, text: str) -> None:
    view.set_read_only(False)
    view.run_command("gemini_companion_replace_text", {"text": text})
    view.set_read_only(True)


def _text_of(view: sublime.View) -> str:
    return view.substr(sublime.Region(0, view.size()))


def _reason(error: BaseException | None) -> str:
    """The one-line reason of a refused plan or restore (they say what to do), else ours."""
    if error is None:
        return "the restore did not run."
    if type(error).__name__ in ("NoTurn", "RestoreRefused", "RestoreFailed") or isinstance(
        error, (OSError, ValueError)
    ):
        return str(error)
    log.warning("restore error: %r", error)
    return f"the restore stopped on an unexpected error ({error!r}); nothing more was written; see the console."


def _in_thread(work: Callable[[], T], then: Callable[[T | None, BaseException | None], Any]) -> None:
    """`work` on a thread of its own; `then(result, error)` on the main thread."""

    def run() -> None:
        try:
            result = work()
        except Exception as exc:
            failed = exc  # `exc` is gone once the except clause ends; the callback runs later
            sublime.set_timeout(lambda: then(None, failed))
            return
        sublime.set_timeout(lambda: then(result, None))

    threading.Thread(target=run, name="gemini-companion-restore", daemon=True).start()
