"""Every edit an agent asks permission for goes through the window's review (`Reviews` and the
Editor port); what the user accepted is kept until the agent writes, so the user's version wins."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from ...core.editor import Editor
from ...core.files.disk_text import DiskText
from ...core.files.textfile import same_text
from ...core.reviews import Outcome, Review, Reviews

log = logging.getLogger(__name__)

BY_ACP = "acp"  # Review.agent for reviews an ACP chat opened
SHOW_TIMEOUT_SECONDS = 30  # the editor shows a review in a main-thread tick; this only catches a stuck one


class ReviewOpen(Exception):
    """The file already has an open review; the message says to finish it first."""


@dataclass(frozen=True)
class Decision:
    """The user's decision on a review: `always` when they accepted "for this session"."""

    outcome: Outcome
    content: str | None  # the accepted text, edits included
    always: bool = False
    reason: str = ""  # why the user rejected it, when they said (Review.reason)


@dataclass
class AcceptedEdit:
    """An edit the user accepted and the agent has not written yet."""

    tool_call_id: str
    path: str  # the real path (workspace policy)
    proposal: str  # what the agent proposed
    final: str  # what the user accepted (their edits included)
    disk: DiskText | None = None  # the file on disk when the user decided (to refuse a stale write)
    renamed_from: str | None = None  # a rename's source (real path): the agent removes it, as accepted
    deleted: bool = False  # accepted as a deletion: the file must be gone, not empty

    @property
    def edited(self) -> bool:
        """The user changed the text, not only how its lines break (the editor holds "\n")."""
        return not same_text(self.final, self.proposal)


class ReviewGate:
    """The reviews of one chat and the accepted edits waiting for the agent's write. `reviews`: the
    window's shared Reviews (one review per path across all agents), else the chat's own."""

    def __init__(self, editor: Editor, agent_name: str, reviews: Reviews | None = None) -> None:
        self.editor = editor
        self.agent_name = agent_name
        self.reviews = reviews if reviews is not None else Reviews(self._decided_from_any_thread)
        self.accepted: dict[str, AcceptedEdit] = {}  # by real path
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mine: set[Review] = set()  # the open reviews this chat opened

    async def review(
        self,
        path: str,
        before: DiskText,
        proposal: str,
        allow_always: str | None = None,
        *,
        part: tuple[int, int] | None = None,
        renamed_from: str | None = None,
        replaces: bool = False,
        delete: bool = False,
    ) -> Decision:
        """Show the proposal against `before` and wait for the user's decision; a cancelled call
        closes the review (its outcome is then CLOSED, never an accept). `allow_always` is the
        agent's "allow for this session" option name, when it offered one (Review.allow_always).
        `part` (n, count): file n of an edit of several files; `renamed_from`: a rename's source
        (`path` is its target, `before` the source's text, or with `replaces` the target's own text,
        which the rename destroys); `delete`: the agent deletes the file (`proposal` is "")."""
        loop = self._loop = asyncio.get_running_loop()
        decision: asyncio.Future[Decision] = loop.create_future()

        def settle(result: Decision) -> None:
            if not decision.done():
                decision.set_result(result)

        def decided(outcome: Outcome, content: str | None) -> None:
            # A window's shared Reviews may call this on its own loop's thread (the window server's).
            if not loop.is_closed():
                always, reason = (review.always, review.reason) if review is not None else (False, "")
                loop.call_soon_threadsafe(settle, Decision(outcome, content, always, reason))

        review = self.reviews.open_exclusive(path, proposal, self.agent_name, decided, BY_ACP)
        if review is None:
            raise ReviewOpen(f"a review of {path} is already open; finish it, then ask the agent again")
        review.disk = before
        review.allow_always = allow_always
        review.part, review.renamed_from = part, renamed_from
        review.replaces, review.delete = replaces, delete
        self._mine.add(review)
        try:
            await asyncio.wait_for(self.editor.show_review(review), SHOW_TIMEOUT_SECONDS)
            return await asyncio.shield(decision)
        except BaseException:
            await self.close(review)
            raise
        finally:
            self._mine.discard(review)

    async def close(self, review: Review) -> None:
        if not self.reviews.finish(review, Outcome.CLOSED):
            return
        if review.on_decided is not None:
            review.on_decided(Outcome.CLOSED, None)
        try:
            await asyncio.wait_for(self.editor.close_review(review), SHOW_TIMEOUT_SECONDS)
        except Exception as exc:
            log.warning("the editor could not close the review of %s: %r", review.file_path, exc)

    async def close_all(self) -> None:
        """Close this chat's open reviews; other chats' reviews in a shared Reviews stay open."""
        for review in self.reviews.all():
            if review in self._mine:
                await self.close(review)

    def _decided_from_any_thread(self, review: Review, outcome: Outcome, content: str | None) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._decide, review, outcome, content)

    def _decide(self, review: Review, outcome: Outcome, content: str | None) -> None:
        if self.reviews.finish(review, outcome) and review.on_decided is not None:
            review.on_decided(outcome, content)

    def on_accepted(self, edit: AcceptedEdit) -> None:
        self.accepted[edit.path] = edit

    def take(self, path: str) -> AcceptedEdit | None:
        """The accepted edit of `path`, once: a second write of it is not covered by the review."""
        return self.accepted.pop(path, None)

    def take_all_by_tool_call(self, tool_call_id: str) -> list[AcceptedEdit]:
        """Every accepted edit of the call, once (an edit of several files has one per file)."""
        found = []
        while (edit := self.take_by_tool_call(tool_call_id)) is not None:
            found.append(edit)
        return found

    def take_by_tool_call(self, tool_call_id: str) -> AcceptedEdit | None:
        for path, edit in list(self.accepted.items()):
            if edit.tool_call_id == tool_call_id:
                return self.accepted.pop(path)
        return None
