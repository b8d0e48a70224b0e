"""Diff reviews in a window: the current text on the left, the editable proposal on the right.

Everything here runs on Sublime's main thread. The proposal is a scratch view the user may edit;
its gutter shows the changes against the current text (Sublime's incremental diff, through
`set_reference_document`), and a banner phantom offers Accept / Reject and hunk navigation. Saving
the proposal accepts it, closing it rejects it. The user's layout and focus come back when the
last review of the window ends.
"""

from __future__ import annotations

import html
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import sublime

from ..acp.review.review_gate import BY_ACP
from ..core.files import disk_text
from ..core.files.disk_text import DiskText
from ..core.files.textfile import dominant_newline, keep_line_endings, to_newline
from ..core.reviews import Review
from . import settings

if TYPE_CHECKING:
    from sublime_types import WindowLayout

REVIEW_SETTING = "gemini_companion.review"
# The Connect Another Agent view (connect_command): a restart brings it back like a review view.
CONNECT_SETTING = "gemini_companion.connect"
ROLE_SETTING = "gemini_companion.role"
BANNER_KEY = "gemini_companion.banner"
REVIEW = "review"  # what waits in the status bar (attention, below): a review, by its id
ATTENTION_KEY = "gemini_companion.attention"  # the status key of what waits for the user unseen
# Per-view settings that make other packages leave our views alone. LSP attaches (and runs its
# on-save code actions and formatting) only on views it deems regular, and a view with `repl` set is
# not (sublimelsp/LSP @ 7ffc721 `plugin/documents.py` is_regular_view L115–133); its formatting on
# save is also off per view with `lsp_format_on_save` (`plugin/formatting.py` FormatOnSaveTask L95–99,
# `plugin/code_actions.py` format_on_save_enabled L272–274).
LEAVE_ALONE = {"repl": True, "lsp_format_on_save": False}
BANNER_HEAD = (  # the banner's body and style, for every review's banner
    '<body id="gemini-companion-banner"><style>'
    "div.banner { padding: 0.4rem 0.6rem; border-radius: 0.3rem; background-color: var(--bluish); }"
    "a { text-decoration: none; font-weight: bold; } .warning { color: var(--yellowish); }"
    "</style>"
)
SPLIT_LAYOUT: WindowLayout = {"cols": [0.0, 0.5, 1.0], "rows": [0.0, 1.0], "cells": [[0, 0, 1, 1], [1, 0, 2, 1]]}


@dataclass
class CurrentText:
    """What the file holds now, as the user sees it: the unsaved buffer wins over the disk."""

    text: str
    is_new: bool = False
    from_unsaved_buffer: bool = False
    not_shown: str | None = None  # why the disk's text is not shown (too large, binary, unreadable)
    label: str | None = None  # the left tab's word when it is not the file's current text ("checkpoint")

    @staticmethod
    def of(window: sublime.Window, review: Review) -> CurrentText:
        """From the open buffer, else from `review.disk`, which the server read off this (main) thread."""
        open_view = window.find_open_file(review.file_path)
        if open_view is not None and open_view.is_dirty():
            return CurrentText(open_view.substr(sublime.Region(0, open_view.size())), from_unsaved_buffer=True)
        disk = review.disk or DiskText("", exists=True, not_shown="it was not read")
        if disk.not_shown is not None:
            return CurrentText(
                f"(The current text of this file is not shown: {disk.not_shown}.)\n", not_shown=disk.not_shown
            )
        # Sublime shows every line break as "\n" (it converts on load and back on save).
        text = to_newline(disk.text, "\n")
        return CurrentText(text, is_new=not disk.exists)


@dataclass
class LayoutMemory:
    """The user's layout, view positions and focus before the first review took over."""

    layout: WindowLayout
    positions: list[tuple[sublime.View, int, int]]
    active_view: sublime.View | None

    @staticmethod
    def capture(window: sublime.Window) -> LayoutMemory:
        positions = [
            (view, group, index)
            for group in range(window.num_groups())
            for index, view in enumerate(window.views_in_group(group))
        ]
        return LayoutMemory(window.layout(), positions, window.active_view())

    def restore(self, window: sublime.Window) -> None:
        window.set_layout(self.layout)
        for view, group, index in self.positions:
            if view.is_valid() and group < window.num_groups():
                window.set_view_index(view, group, min(index, len(window.views_in_group(group))))
        if self.active_view is not None and self.active_view.is_valid():
            window.focus_view(self.active_view)


class ReviewOwner(Protocol):
    """Who decides a review that is not an agent's proposal (a turn's file against its checkpoint):
    its banner, its links, and what Save does."""

    def banner_html(self, entry: ReviewViews) -> str: ...

    def link(self, entry: ReviewViews, href: str) -> None: ...

    def accept(self, entry: ReviewViews) -> None: ...


@dataclass(frozen=True)
class LeftText:
    """The proposal view's text (`shown`, read on the main thread) and the agent's proposal its line
    breaks come back from. `text()` compares the two whole files: call it off the main thread."""

    proposal: str
    shown: str
    newline: str = "\n"

    def text(self) -> str:
        """The proposal as the user left it, with the agent's own line breaks: Sublime holds every
        break as "\n", so each line the user kept gets its break back from the proposal (CRLF, CR,
        mixed), and a line the user added gets the proposal's dominant one."""
        if "\r" not in self.proposal:
            return self.shown
        if self.shown == to_newline(self.proposal, "\n"):
            return self.proposal  # accepted as proposed: exactly the agent's text
        return keep_line_endings(self.proposal, self.shown, self.newline)


def as_proposed(review: Review) -> LeftText:
    """The proposal untouched, as `LeftText` (a review whose views are gone)."""
    return LeftText(review.proposal, to_newline(review.proposal, "\n"))


@dataclass
class ReviewViews:
    review: Review
    proposal: sublime.View
    current: sublime.View | None
    current_text: CurrentText
    newline: str = "\n"
    closing: bool = False
    accepting: bool = False  # an Accept waits for the disk check (worker thread)
    always: bool = False  # the Accept under way is the agent's "allow for this session"
    changed_on_disk: bool = False  # the file changed after the proposal arrived; the left side shows it
    changed_underneath: bool = False  # the proposal changed between the user's Accept and its sending
    banner: sublime.PhantomSet | None = field(default=None, repr=False)
    write_notes: tuple[str, ...] = ()  # "line endings: CRLF → LF", "no newline at end of file"…
    owner: ReviewOwner | None = field(default=None, repr=False)

    def left(self) -> LeftText:
        """The proposal view's text as the user left it (main thread); `.text()` off it."""
        shown = self.proposal.substr(sublime.Region(0, self.proposal.size()))
        return LeftText(self.review.proposal, shown, self.newline)

    def views(self) -> list[sublime.View]:
        return [v for v in (self.proposal, self.current) if v is not None]


class WindowReviews:
    """The open reviews of one Sublime window."""

    def __init__(self, window: sublime.Window) -> None:
        self.window = window
        self.open: dict[int, ReviewViews] = {}
        self._memory: LayoutMemory | None = None
        # Set when the window's server is going away: from then on the server must not wait for
        # the main thread (which may be the one stopping it, in plugin_unloaded).
        self.detached = False
        # Every file the user accepted a review of (its path as the client sent it, who asked, the
        # text accepted): the terminal agents write the accepted text themselves, so this is how
        # their change set knows who made a change and whether the disk holds what was accepted
        # (terminal_checkpoints).
        self.accepted: list[tuple[str, str, str]] = []

    # -- called by the server (through the Editor port, marshalled to the main thread) --

    def show(
        self,
        review: Review,
        left: CurrentText | None = None,
        owner: ReviewOwner | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        """Show `review`; `left` replaces the file's current text on the left (and as the gutter's
        reference), `owner` the agent's banner and Accept. `notes`: what the write changes besides
        the lines (core/write_notes.py, computed off this thread), shown in the banner."""
        if not self.window.is_valid():
            raise RuntimeError("the window was closed")
        existing = self.open.get(review.id)
        if existing is not None:
            existing.write_notes = tuple(notes)
            self._show_newer_proposal(existing)
            return
        inline = settings.diff_layout() == "inline"
        if not self.open and not inline:
            self._memory = LayoutMemory.capture(self.window)
        entry = self._create_views(review, inline, left)
        entry.owner = owner
        entry.write_notes = tuple(notes)
        self.open[review.id] = entry
        self._render_banner(entry)
        if settings.get("focus_review", True):
            self.window.focus_view(entry.proposal)
        name = os.path.basename(review.file_path) or review.file_path
        attention_asked(entry.proposal, REVIEW, str(review.id), f"a review of {name} waits for you")

    def close(self, review: Review) -> LeftText:
        """Close the review's views without a decision; returns the proposal's current text (its
        `.text()` off the main thread)."""
        entry = self.open.get(review.id)
        if entry is None:
            return as_proposed(review)
        left = entry.left() if entry.proposal.is_valid() else as_proposed(review)
        self._dispose(entry)
        return left

    def close_all(self) -> None:
        for entry in list(self.open.values()):
            self._dispose(entry)

    def close_leftovers(self) -> None:
        """Close review views no live review owns, and Connect views: Sublime restores scratch views
        with their settings and text after a restart (hot exit; Terminus relies on it), but the agent
        that asked is gone, a save there would accept nothing, and a Connect view's port and token
        belong to a server that no longer runs. Main thread, when the window's server starts."""
        live = {view.id() for entry in self.open.values() for view in (entry.proposal, entry.current) if view}
        for view in self.window.views():
            view_settings = view.settings()
            ours = view_settings.get(REVIEW_SETTING) is not None or view_settings.get(CONNECT_SETTING)
            if ours and view.id() not in live:
                view.close()

    def detach(self) -> None:
        """Close every review without a decision; the server no longer reaches this window."""
        self.detached = True
        self.close_all()

    # -- called by commands and listeners (the user's decisions) --

    def accept(self, entry: ReviewViews, seen: int | None = None, always: bool = False) -> None:
        """Accept with the user's edits, unless the file changed on disk since the left side was
        shown: then the left side shows the new text and the user decides again. The file is read
        on a thread of its own: never here, and not on the async worker every package shares
        (a 16 MiB file takes tens of milliseconds to read and hash).

        `seen` is the proposal's change count when the user asked (default: now). What is sent must
        be what the user saw: if another package changed the proposal since (an on-save formatter,
        a late code action), it is shown again instead. `always`: the user chose the ACP agent's
        "allow for this session" (Review.accept_always)."""
        if entry.owner is not None:
            entry.owner.accept(entry)
            return
        if entry.accepting:
            return
        entry.always = always
        seen = entry.proposal.change_count() if seen is None else seen
        if entry.proposal.change_count() != seen:
            self._show_again(entry)
            return
        entry.changed_underneath = False
        left = entry.left()
        baseline = entry.review.disk
        # The left side is the buffer, not the disk, when it came from an unsaved buffer: no disk check.
        checked = None if entry.current_text.from_unsaved_buffer else baseline
        entry.accepting = True
        path = entry.review.file_path

        def check_disk() -> None:
            content = left.text()
            now = disk_text.read(path) if checked is not None else None
            sublime.set_timeout(lambda: self._accept_if_unchanged(entry, content, checked, now, seen))

        threading.Thread(target=check_disk, name="gemini-companion-disk-check", daemon=True).start()

    def _accept_if_unchanged(
        self,
        entry: ReviewViews,
        content: str,
        baseline: disk_text.DiskText | None,
        now: disk_text.DiskText | None,
        seen: int,
    ) -> None:
        entry.accepting = False
        if self.open.get(entry.review.id) is not entry or not entry.review.is_open:
            return  # rejected, closed or replaced meanwhile
        if entry.proposal.change_count() != seen:
            self._show_again(entry)
            return
        if baseline is None or now is None or not disk_text.changed(baseline, now):
            self._finish_accept(entry, content)
            return
        entry.review.disk = now
        entry.changed_on_disk = True
        self._refresh_current(entry)
        self._render_banner(entry)
        sublime.status_message(f"{os.path.basename(entry.review.file_path)} changed on disk: review it again")

    def _show_again(self, entry: ReviewViews) -> None:
        """The proposal changed after the user accepted it: nothing is sent; they look again."""
        entry.changed_underneath = True
        self._render_banner(entry)
        self.window.focus_view(entry.proposal)
        name = os.path.basename(entry.review.file_path)
        sublime.status_message(f"The proposal for {name} changed after you accepted it: check it, then accept again")

    def _finish_accept(self, entry: ReviewViews, content: str) -> None:
        self.accepted.append((entry.review.file_path, entry.review.requested_by, content))
        self._dispose(entry)
        if entry.always:
            entry.review.accept_always(content)
        else:
            entry.review.accept(content)

    def reject(self, entry: ReviewViews, reason: str = "") -> None:
        self._dispose(entry)
        entry.review.reject(reason)

    def ask_why(self, entry: ReviewViews) -> None:
        """ "Reject and say why…": the reason in an input panel, then the reject (an ACP chat's agent
        hears the reason: acp/prompt/reasons.py). Escape leaves the review open."""
        name = os.path.basename(entry.review.file_path)

        def done(reason: str) -> None:
            if entry.review.id in self.open and entry.review.is_open:
                self.reject(entry, reason)
            else:  # decided or replaced meanwhile: the words are not lost
                sublime.set_clipboard(reason)
                sublime.status_message(f"The review of {name} had already ended; your reason is on the clipboard")

        self.window.show_input_panel(f"Why reject the change to {name}? (the agent hears it)", "", done, None, None)

    def for_view(self, view: sublime.View) -> ReviewViews | None:
        review_id = view.settings().get(REVIEW_SETTING)
        return self.open.get(review_id) if isinstance(review_id, int) else None

    def target(self) -> ReviewViews | None:
        """The review the palette commands act on: the focused one, else the newest."""
        active = self.window.active_view()
        if active is not None:
            entry = self.for_view(active)
            if entry is not None:
                return entry
        return list(self.open.values())[-1] if self.open else None

    def proposal_closed_by_user(self, view_id: int) -> None:
        for entry in list(self.open.values()):
            if entry.proposal.id() == view_id and not entry.closing:
                self.reject(entry)

    # -- views --

    def _create_views(self, review: Review, inline: bool, left_text: CurrentText | None = None) -> ReviewViews:
        current = left_text or CurrentText.of(self.window, review)
        newline = dominant_newline(review.proposal) or "\n"
        syntax = sublime.find_syntax_for_file(review.file_path)
        name = os.path.basename(review.file_path) or review.file_path
        left: sublime.View | None = None
        if not inline:
            self.window.set_layout(SPLIT_LAYOUT)
            label = "new file" if current.is_new else ("unsaved" if current.from_unsaved_buffer else "current")
            label = "not shown" if current.not_shown else current.label or label
            left = self._new_view(review, "current", f"{name} ({label})", current.text, syntax, group=0)
            left.set_read_only(True)
        right = self._new_view(
            review,
            "proposal",
            f"{name} ↔ proposed",
            to_newline(review.proposal, "\n"),
            syntax,
            group=None if inline else 1,
        )
        right.set_reference_document(current.text)
        if inline:
            right.run_command("toggle_inline_diff")
        entry = ReviewViews(review, right, left, current, newline)
        entry.banner = sublime.PhantomSet(right, BANNER_KEY)
        return entry

    def _new_view(
        self, review: Review, role: str, name: str, text: str, syntax: sublime.Syntax | None, group: int | None
    ) -> sublime.View:
        view = self.window.new_file()
        view.set_scratch(True)
        view.set_name(name)
        if syntax is not None:
            view.assign_syntax(syntax)
        view.settings().set(REVIEW_SETTING, review.id)
        view.settings().set(ROLE_SETTING, role)
        for key, value in LEAVE_ALONE.items():
            view.settings().set(key, value)
        view.run_command("append", {"characters": text, "force": True, "scroll_to_end": False})
        view.sel().clear()
        view.sel().add(sublime.Region(0, 0))
        if group is not None:
            self.window.set_view_index(view, group, len(self.window.views_in_group(group)))
        return view

    def _show_newer_proposal(self, entry: ReviewViews) -> None:
        review = entry.review
        entry.newline = dominant_newline(review.proposal) or "\n"
        entry.changed_on_disk = False  # the server read the disk again for this proposal
        # One undoable edit: the user's changes to the earlier proposal are an undo away.
        entry.proposal.run_command("gemini_companion_replace_text", {"text": to_newline(review.proposal, "\n")})
        self._refresh_current(entry)
        self._render_banner(entry)

    def _refresh_current(self, entry: ReviewViews) -> None:
        """The left side and the gutter's reference from the review's current text."""
        entry.current_text = CurrentText.of(self.window, entry.review)
        entry.proposal.set_reference_document(entry.current_text.text)
        if entry.current is not None:
            entry.current.set_read_only(False)
            entry.current.run_command("gemini_companion_replace_text", {"text": entry.current_text.text})
            entry.current.set_read_only(True)

    def render_banner(self, entry: ReviewViews) -> None:
        """Show the banner again (its owner's state changed)."""
        self._render_banner(entry)

    def _render_banner(self, entry: ReviewViews) -> None:
        if entry.banner is None:
            return
        content = entry.owner.banner_html(entry) if entry.owner is not None else banner_html(entry)
        entry.banner.update(
            [
                sublime.Phantom(
                    sublime.Region(0, 0),
                    content,
                    sublime.PhantomLayout.BLOCK,
                    on_navigate=lambda href, e=entry: self._on_banner_link(e, href),
                )
            ]
        )

    def _on_banner_link(self, entry: ReviewViews, href: str) -> None:
        if entry.review.id not in self.open:
            return
        if entry.owner is not None:
            entry.owner.link(entry, href)
        elif href == "accept":
            self.accept(entry)
        elif href == "accept-always" and entry.review.allow_always is not None:
            self.accept(entry, always=True)
        elif href == "reject":
            self.reject(entry)
        elif href == "reject-why":
            self.ask_why(entry)
        elif href in ("next", "previous"):
            entry.proposal.run_command("next_modification" if href == "next" else "prev_modification")

    def _dispose(self, entry: ReviewViews) -> None:
        if entry.closing:
            return
        entry.closing = True
        self.open.pop(entry.review.id, None)
        attention_answered(REVIEW, str(entry.review.id))
        for view in entry.views():
            if view.is_valid():
                view.close()
        if not self.open and self._memory is not None and self.window.is_valid():
            memory, self._memory = self._memory, None
            memory.restore(self.window)


def banner_html(entry: ReviewViews) -> str:
    review = entry.review
    path = html.escape(review.file_path)
    requester = html.escape(review.requested_by)
    notes: list[str] = []
    if review.renamed_from is not None:
        notes.append(f"Rename <code>{html.escape(review.renamed_from)}</code> → <code>{path}</code>.")
        if review.replaces:
            notes.append(
                f'<span class="warning">Replacing <code>{path}</code>: its current text (left) is lost.</span>'
            )
    if review.delete:
        notes.append(f'<span class="warning">Delete <code>{path}</code>: accepting removes the file.</span>')
    if review.part is not None:
        notes.append(
            f"File {review.part[0]} of {review.part[1]} of one edit: it is allowed only if you accept every file."
        )
    if entry.current_text.is_new and review.renamed_from is None:
        notes.append("This file does not exist yet: accepting creates it.")
    notes.extend(f'<span class="warning">{html.escape(note)}</span>' for note in entry.write_notes)
    if entry.changed_on_disk:
        notes.append(
            '<span class="warning">The file changed on disk since this proposal arrived; the left side '
            "now shows it. Check the change again, then Accept.</span>"
        )
    if entry.changed_underneath:
        notes.append(
            '<span class="warning">This side changed after you accepted it (another package may have edited '
            "it): nothing was sent. Check it, then Accept again.</span>"
        )
    if entry.current_text.not_shown:
        notes.append(
            f'<span class="warning">The current text is not shown ({html.escape(entry.current_text.not_shown)}): '
            "accepting replaces the whole file with this side.</span>"
        )
    if entry.current_text.from_unsaved_buffer:
        notes.append(
            '<span class="warning">The file has unsaved changes in Sublime; they are what the left side shows.</span>'
        )
    links = disk_text.other_links_note(review.disk.other_links if review.disk is not None else 0)
    if links:  # counted where the server read the file, off this thread
        notes.append(f'<span class="warning">{html.escape(links)}</span>')
    if review.revision > 1:
        notes.append(f"Updated proposal ({review.revision}); undo brings back your edits to the earlier one.")
    if review.allow_always is not None:
        notes.append(
            f"<i>{html.escape(review.allow_always)}</i> accepts this change and lets {requester} make its later "
            "edits in this chat <b>without a review</b>."
        )
    notes.append("Edit this side freely: Save accepts it, closing it rejects it.")
    note_html = "".join(f"<div>{n}</div>" for n in notes)
    return (
        f"{BANNER_HEAD}"
        f'<div class="banner"><div><b>{requester}</b> proposes a change to <code>{path}</code></div>'
        f'<div><a href="accept">Accept</a> · {_always_link(review)}<a href="reject">Reject</a> · '
        f"{_why_link(review)}"
        '<a href="previous">◀ Previous change</a> · <a href="next">Next change ▶</a></div>'
        f"{note_html}</div></body>"
    )


def _why_link(review: Review) -> str:
    """ "Reject and say why…" for an ACP chat's review: the only agents that can hear a reason."""
    if review.agent != BY_ACP:
        return ""
    return '<a href="reject-why" title="Reject, and tell the agent why">Reject and say why…</a> · '


def _always_link(review: Review) -> str:
    """An ACP agent's "allow for this session", under the agent's own name for it: accepting this
    way lets its later edits in the session through without a review (the banner says so)."""
    if review.allow_always is None:
        return ""
    name = html.escape(review.allow_always)
    return f'<a href="accept-always" title="Accept; later edits in this chat are not reviewed">{name}</a> · '


# -- attention (issue #41): a chat's permission card asked while the chat's view is not the active
# view of its window, or its window not the active one, or a review shown so (`focus_review` off, a
# window in the background), is named in the status bar of every view of the window until it is
# answered, withdrawn or closed. Sublime Text's API (build 4213, sublime-text-stubs) has no bell
# and no way to flash a tab or ask the window manager for attention: the status bar is what a
# package can do. Here, beside the reviews, since chat/ (the permission cards) is above them.

# window id -> (owner: a chat's id or "review", key) -> the words for it
_waiting: dict[int, dict[tuple[str, str], str]] = {}


def is_seen(view: sublime.View) -> bool:
    """The view is the active view of the active window: the user sees its card."""
    window = view.window()
    if window is None:
        return False
    active = window.active_view()
    return sublime.active_window().id() == window.id() and active is not None and active.id() == view.id()


def attention_asked(view: sublime.View, owner: str, key: str, words: str) -> None:
    """Something waits for an answer in `view` (a chat's own view, a review's proposal)."""
    window = view.window()
    if window is None or is_seen(view):
        return
    _waiting.setdefault(window.id(), {})[(owner, key)] = words
    _show_attention(window)


def attention_answered(owner: str, key: str | None) -> None:
    """It was answered or withdrawn (or its chat closed: `key` None drops all of the owner's)."""
    for window_id, waiting in list(_waiting.items()):
        for found in [k for k in waiting if k[0] == owner and (key is None or k[1] == key)]:
            del waiting[found]
            _show_attention(sublime.Window(window_id))
        if not waiting:
            del _waiting[window_id]


def _show_attention(window: sublime.Window) -> None:
    if not window.is_valid():
        return
    words = list(dict.fromkeys(_waiting.get(window.id(), {}).values()))  # each once, in order
    text = "Gemini Companion: " + "; ".join(words) if words else ""
    for view in window.views():
        if text:
            view.set_status(ATTENTION_KEY, text)
        else:
            view.erase_status(ATTENTION_KEY)
