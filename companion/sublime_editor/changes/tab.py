"""The change-set tab (issue #30): every file a turn changed, each opening our split review against
the checkpoint, with Keep / Revert per hunk, per file and for the whole turn.

Main thread here; every disk read and write runs on a thread of its own (`_off_main`), never on
Sublime's main thread nor on the async worker every package shares. A file with unsaved changes in
Sublime is never overwritten: Apply and Revert refuse and say so, and its text stays.

The tab is a read-only scratch view in the chat's syntax (Markdown-like): one line per file
(change, path relative to its folder, +/-, by whom, reviewed or not, a note, what the user decided),
a Review · Keep · Revert link on each line (Enter on a line opens it too), Keep All · Revert All on
top. Each file's review (`TurnFile`) reuses `review_ui`'s split: the checkpoint's text on the left
(read-only), the current text on the right as an editable proposal whose reference document is the
checkpoint, so Sublime's own hunks are the turn's changes and its `revert_modification` (History ›
Revert Hunk) reverts the hunk under the caret.
"""

from __future__ import annotations

import html
import itertools
import os
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import sublime

from ...core.files.disk_text import DiskText
from ...core.files.textfile import to_newline
from ...core.history.change_set import FileChange
from ...core.history.restore import RestoreFailed, RestoreRefused
from ...core.reviews import Outcome, Review
from ..review_ui import BANNER_HEAD, LEAVE_ALONE, CurrentText, ReviewViews, WindowReviews
from ..settings import syntax_path
from .sources import ApplyRefused, ChangeSource, NotReviewable, apply_text, checkpoint_text, current_text

T = TypeVar("T")
TAB_SETTING = "gemini_companion.change_set"
HEADER_KEY = "gemini_companion.change_set.header"
ROWS_KEY = "gemini_companion.change_set.rows"
# The tab's setting is this run's token and a number: a tab hot exit brings back after a restart (or
# that outlives a reload of the package) has no change set behind its links, and is closed.
RUN = secrets.token_hex(6)
_ids = itertools.count(1)
_tabs: dict[int, ChangeSetTab] = {}  # window id -> its change-set tab
REFUSED = (ApplyRefused, RestoreRefused, RestoreFailed, NotReviewable, OSError, ValueError)


def _off_main(work: Callable[[], T], then: Callable[[T | None, BaseException | None], None]) -> None:
    """`work` on a thread of its own, `then(result, error)` on the main thread."""

    def run() -> None:
        try:
            result, error = work(), None
        except Exception as exc:  # reported to `then`, which says it in the tab
            result, error = None, exc
        sublime.set_timeout(lambda: then(result, error))

    threading.Thread(target=run, name="gemini-companion-change-set", daemon=True).start()


def show(window: sublime.Window, reviews: WindowReviews, source: ChangeSource, focus: bool = True) -> ChangeSetTab:
    """Open (or refresh) the window's change-set tab on `source`. Without `focus` (a turn just
    ended) the view the user was in keeps the focus: they may be typing the next prompt."""
    active = window.active_view()
    tab = _tabs.get(window.id())
    if tab is None or not tab.view.is_valid():
        tab = ChangeSetTab(window, reviews, source)
        _tabs[window.id()] = tab
    elif tab.source is not source:
        tab.source, tab.decided = source, {}  # another turn: its own decisions
    tab.load()
    if focus:
        window.focus_view(tab.view)
    elif active is not None and active.is_valid():
        window.focus_view(active)
    return tab


def is_leftover(view: sublime.View) -> bool:
    """A change-set tab of an earlier run or load of the package."""
    value = view.settings().get(TAB_SETTING)
    return value is not None and not (isinstance(value, str) and value.startswith(f"{RUN}-"))


def for_view(view: sublime.View) -> ChangeSetTab | None:
    tab = next((t for t in _tabs.values() if t.view.id() == view.id()), None)
    return tab if tab is not None and tab.view.is_valid() else None


def _relative(path: str, folders: Sequence[str]) -> str:
    folder = next((f for f in folders if path.startswith(f.rstrip(os.sep) + os.sep)), None)
    return os.path.relpath(path, folder) if folder else path


class ChangeSetTab:
    def __init__(self, window: sublime.Window, reviews: WindowReviews, source: ChangeSource) -> None:
        self.window = window
        self.reviews = reviews
        self.source = source
        self.id = next(_ids)
        self.changes: list[FileChange] = []
        self.real_folders: list[str] = []
        self.decided: dict[str, str] = {}  # path -> kept | applied | reverted
        self.message = "Reading the change set…"
        self.busy = False
        self.rows: dict[int, str] = {}  # row -> path
        self.files: dict[str, TurnFile] = {}  # path -> its open review
        self.view = window.new_file()
        self.view.set_scratch(True)
        self.view.set_read_only(True)
        self.view.assign_syntax(syntax_path())
        self.view.settings().set(TAB_SETTING, f"{RUN}-{self.id}")
        for key, value in {**LEAVE_ALONE, "word_wrap": False, "line_numbers": False, "gutter": False}.items():
            self.view.settings().set(key, value)
        self.header = sublime.PhantomSet(self.view, HEADER_KEY)
        self.row_links = sublime.PhantomSet(self.view, ROWS_KEY)

    # -- loading and showing --

    def load(self) -> None:
        self.view.set_name(f"Changes: {self.source.title}")
        source = self.source

        def work() -> tuple[list[FileChange], list[str]]:
            return source.changes(), [os.path.realpath(f) for f in source.folders]

        _off_main(work, self._loaded)

    def _loaded(self, result: tuple[list[FileChange], list[str]] | None, error: BaseException | None) -> None:
        if not self.view.is_valid():
            return
        if error is not None or result is None:
            self.message = f"⚠ The change set cannot be read: {error}"
        else:
            self.changes, self.real_folders = result
            self.decided = {p: d for p, d in self.decided.items() if any(c.path == p for c in self.changes)}
            self.message = "" if self.changes else "No file changed."
        self.render()

    def render(self) -> None:
        if not self.view.is_valid():  # the user closed the tab meanwhile
            return
        lines = [f"# Changes: {self.source.title}", "", self.message or self._summary(), ""]
        self.rows = {}
        for change in self.changes:
            self.rows[len(lines)] = change.path
            lines.append(self._line(change))
        text = "\n".join(lines) + "\n"
        self.view.set_read_only(False)
        self.view.run_command("gemini_companion_replace_text", {"text": text})
        self.view.set_read_only(True)
        self._links()

    def _summary(self) -> str:
        counts = {kind: sum(c.change == kind for c in self.changes) for kind in ("added", "modified", "deleted")}
        parts = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
        files = f"{len(self.changes)} file{'s' * (len(self.changes) != 1)}"
        return f"{files} ({parts}). Enter on a file (or Review) opens it against the checkpoint."

    def _line(self, change: FileChange) -> str:
        counts = "binary" if change.binary else "" if change.added is None else f"+{change.added} -{change.removed}"
        by = "by outside the agent" if change.by == "outside" else f"by {change.by}"
        parts = [
            f"{change.change:<8}",
            _relative(change.path, self.real_folders),
            counts,
            by,
            "reviewed" if change.reviewed else "not reviewed",
            change.note,
            self.decided.get(change.path, ""),
        ]
        return "- " + "  ".join(p for p in parts if p)

    def _links(self) -> None:
        top = self.view.text_point(2, 0)
        self.header.update(
            [
                sublime.Phantom(
                    sublime.Region(top, top),
                    '<body><a href="keep-all">Keep All</a> · <a href="revert-all">Revert All</a></body>',
                    sublime.PhantomLayout.BLOCK,
                    on_navigate=self._clicked,
                )
            ]
        )
        phantoms: list[sublime.Phantom] = []
        for row, path in self.rows.items():
            end = self.view.line(self.view.text_point(row, 0)).end()
            index = next(i for i, c in enumerate(self.changes) if c.path == path)
            links = " · ".join(f'<a href="{what}:{index}">{what.title()}</a>' for what in ("review", "keep", "revert"))
            phantoms.append(
                sublime.Phantom(
                    sublime.Region(end, end),
                    f"<body>&nbsp;{links}</body>",
                    sublime.PhantomLayout.INLINE,
                    on_navigate=self._clicked,
                )
            )
        self.row_links.update(phantoms)

    def _clicked(self, href: str) -> None:
        if href == "keep-all":
            self.keep_all()
        elif href == "revert-all":
            self.revert_all()
        elif ":" in href:
            what, index = href.split(":", 1)
            if not index.isdigit() or int(index) >= len(self.changes):
                return
            change = self.changes[int(index)]
            if what == "review":
                self.open_file(change)
            elif what == "keep":
                self.keep([change.path])
            elif what == "revert":
                self.revert([change.path])

    def say(self, text: str) -> None:
        self.message = f"⚠ {text}"
        sublime.status_message(f"Gemini Companion: {text}")
        self.render()

    def change_at_caret(self) -> FileChange | None:
        selection = self.view.sel()
        if not len(selection):
            return None
        path = self.rows.get(self.view.rowcol(selection[0].b)[0])
        return next((c for c in self.changes if c.path == path), None)

    # -- decisions --

    def open_file(self, change: FileChange) -> None:
        existing = self.files.get(change.path)
        if existing is not None and existing.entry is not None and existing.entry.proposal.is_valid():
            self.window.focus_view(existing.entry.proposal)
            return
        if self._unsaved([change.path], "reviewed"):
            return
        if change.after is None:
            self.say(
                f"{os.path.basename(change.path)} was deleted in this turn: Revert brings it back, Keep leaves it."
            )
            return
        source = self.source

        def work() -> tuple[str, DiskText]:
            return checkpoint_text(source, change), current_text(change)

        _off_main(work, lambda result, error: self._show_file(change, result, error))

    def _show_file(self, change: FileChange, result: tuple[str, DiskText] | None, error: BaseException | None) -> None:
        if not self.view.is_valid():
            return
        if error is not None or result is None:
            self.say(str(error))
            return
        before, now = result
        if now.not_shown is not None or not now.exists:
            self.say(f"{os.path.basename(change.path)} cannot be reviewed now ({now.not_shown or 'it is gone'}).")
            return
        if self._unsaved([change.path], "reviewed"):
            return
        turn_file = TurnFile(self, change, now, before)
        review = Review(change.path, now.text, change.by, turn_file.decided)
        review.disk = now
        self.files[change.path] = turn_file
        left = CurrentText(to_newline(before, "\n"), is_new=change.before is None, label="checkpoint")
        self.reviews.show(review, left=left, owner=turn_file)
        turn_file.entry = self.reviews.open.get(review.id)

    def keep(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.decided[path] = "kept"
            self._close_review(path)
        self.render()

    def keep_all(self) -> None:
        self.keep([c.path for c in self.changes if c.path not in self.decided])

    def revert_all(self) -> None:
        undecided = [c for c in self.changes if c.path not in self.decided]
        covered = [c.path for c in undecided if c.before is None or c.before.covered]
        if covered:
            self.revert(covered)
        elif undecided:
            self.say("no file left to revert is covered by the checkpoint; nothing was written.")

    def revert(self, paths: Sequence[str]) -> None:
        """Back to the checkpoint, through core restore: refused, with nothing written, when a file
        changed since the turn ended or has unsaved changes in Sublime."""
        if self.busy or self._unsaved(paths, "reverted"):
            return
        self.busy = True
        source, wanted = self.source, list(paths)

        def work() -> list[tuple[str, bool]]:
            source.revert(wanted)
            return [(p, os.path.isfile(p)) for p in wanted]

        _off_main(work, self._reverted)

    def _reverted(self, result: list[tuple[str, bool]] | None, error: BaseException | None) -> None:
        self.busy = False
        if not self.view.is_valid():
            return
        if error is not None or result is None:
            # core restore's refusal speaks the `changes` command's words; here each file has a Revert link
            reason = str(error).replace("with --revert", "with their Revert link")
            self.say(reason if isinstance(error, REFUSED) else f"the revert failed: {error!r}")
            return
        for path, exists in result:
            self.decided[path] = "reverted"
            self._close_review(path)
            _reload_clean(self.window, path, exists)
        self.message = f"Reverted {len(result)} file{'s' * (len(result) != 1)} to the checkpoint."
        self.render()

    def applied(self, turn_file: TurnFile) -> None:
        path = turn_file.change.path
        self.decided[path] = "applied"
        self._close_review(path)
        _reload_clean(self.window, path, True)
        self.message = f"Applied {os.path.basename(path)}."
        self.render()

    def _close_review(self, path: str) -> None:
        turn_file = self.files.pop(path, None)
        if turn_file is not None and turn_file.entry is not None:
            self.reviews.close(turn_file.entry.review)

    def _unsaved(self, paths: Sequence[str], doing: str) -> bool:
        """A file with unsaved changes in Sublime is a conflict: say so (its text stays)."""
        for path in paths:
            view = self.window.find_open_file(path)
            if view is not None and view.is_dirty():
                name = os.path.basename(path)
                self.say(
                    f"{name} has unsaved changes in Sublime; it was not {doing} and nothing was written. "
                    "Save or close them, then try again."
                )
                return True
        return False


def _reload_clean(window: sublime.Window, path: str, exists: bool) -> None:
    """An open buffer without unsaved changes shows the file's new text (File › Revert File)."""
    view = window.find_open_file(path)
    if view is not None and not view.is_dirty() and exists:
        view.run_command("revert")


@dataclass(eq=False)
class TurnFile:
    """One file of the change set in our split review (a `review_ui.ReviewOwner`)."""

    tab: ChangeSetTab
    change: FileChange
    shown: DiskText  # the file when its review opened: Apply refuses if it is no longer this
    checkpoint: str  # the file's text at the checkpoint, breaks as stored: what a reverted hunk puts back
    entry: ReviewViews | None = None
    note: str = ""
    writing: bool = field(default=False)

    def decided(self, review: Review, outcome: Outcome, _content: str | None) -> None:
        """The review's sink: closing the proposal (or Keep) keeps the file as it is."""
        if outcome is Outcome.REJECTED and self.tab.files.get(self.change.path) is self:
            self.tab.keep([self.change.path])

    def banner_html(self, entry: ReviewViews) -> str:
        path = html.escape(_relative(self.change.path, self.tab.real_folders))
        by = "another program" if self.change.by == "outside" else html.escape(self.change.by)
        note = f'<div class="warning">{html.escape(self.note)}</div>' if self.note else ""
        return (
            f"{BANNER_HEAD}"
            f'<div class="banner"><div><b>{by}</b> changed <code>{path}</code> in this turn; the left side is '
            "the checkpoint before the prompt.</div>"
            '<div>Hunk under the caret: <a href="revert-hunk">Revert hunk</a> (Ctrl+Alt+Z) or leave it to keep it · '
            '<a href="previous">◀ Previous change</a> · <a href="next">Next change ▶</a></div>'
            '<div>File: <a href="apply">Apply</a> (writes this side) · <a href="keep">Keep</a> (nothing written) · '
            '<a href="revert">Revert</a> (back to the checkpoint)</div>'
            f"{note}</div></body>"
        )

    def link(self, entry: ReviewViews, href: str) -> None:
        if href == "revert-hunk":
            entry.proposal.run_command("revert_modification")
        elif href in ("next", "previous"):
            entry.proposal.run_command("next_modification" if href == "next" else "prev_modification")
        elif href == "apply":
            self.accept(entry)
        elif href == "keep":
            self.tab.keep([self.change.path])
        elif href == "revert":
            self.tab.revert([self.change.path])

    def accept(self, entry: ReviewViews) -> None:
        """Apply: write the proposal's text (after the user's hunk reverts and edits), unless the
        file changed on disk or in an unsaved buffer since its review opened."""
        if self.writing:
            return
        path = self.change.path
        view = self.tab.window.find_open_file(path)
        if view is not None and view.is_dirty():
            self._refused(
                f"{os.path.basename(path)} has unsaved changes in Sublime; nothing was written. "
                "Save or close them, then open it again from the change set."
            )
            return
        self.writing = True
        left, source, shown, checkpoint = entry.left(), self.tab.source, self.shown, self.checkpoint

        def work() -> None:
            text = left.text()
            apply_text(list(source.folders), path, text, shown, checkpoint)
            source.applied(path, shown.text, text)

        _off_main(work, self._written)

    def _written(self, _result: Any, error: BaseException | None) -> None:
        self.writing = False
        if error is not None:
            self._refused(str(error) if isinstance(error, REFUSED) else f"not written: {error!r}")
            return
        self.tab.applied(self)

    def _refused(self, text: str) -> None:
        self.note = text
        sublime.status_message(f"Gemini Companion: {text}")
        if self.entry is not None and self.entry.review.id in self.tab.reviews.open:
            self.tab.reviews.render_banner(self.entry)
