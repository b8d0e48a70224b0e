"""The chat's state and decisions, apart from the protocol (session.py, the only SDK import).

`ChatThread` holds what the agent said and what the user decided: its tool calls, the permission
decisions (an edit opens a review: review/review_gate.py), the writes of each turn and whether the file on
disk is still what the user accepted, the notes the next prompt carries. The agent's optional
capabilities are small objects the chat asks for: `SessionModes`, `SessionModels`, `ConfigOptions`
(None when the agent offers none), each sending its request through `AgentRequests`, which
session.py provides. Plain dicts as the SDK dumps them (the protocol's camelCase names); no SDK
import here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Protocol

from ..core.files import disk_text
from ..core.files.disk_text import DiskText
from ..core.files.paths import Resolved
from ..core.files.textfile import lines
from ..core.history.turn_writes import ABSENT, TurnWrites, digest_of, written_digest
from ..core.reviews import Outcome
from . import updates
from .modes import Kind, Seen, asking_mode
from .modes import kind as mode_kind
from .prompt.reasons import rejection_note
from .prompt.rewind import Transcript
from .review.edits import NotRebuildable, agent_text, edit_path, is_edit, proposed_text
from .review.file_changes import FileChange, file_changes, named_paths
from .review.files import AgentFiles, FsRefused
from .review.review_gate import AcceptedEdit, ReviewGate, ReviewOpen
from .review.unchecked import UncheckedEdits
from .tool_call_tracker import ToolCalls
from .view import ChatView, Choice, Command, ConfigOption, Mode, Rejection

log = logging.getLogger(__name__)

# One file of an edit of several, ready for its review (ChatThread._prepare).
_Prepared = tuple[FileChange, Resolved, Resolved, DiskText, DiskText, str, str | None]


class ChatFailed(Exception):
    """The chat cannot go on; the message is one line saying why and what to do."""


class WriteRefused(Exception):
    """An `fs/write_text_file` refused before anything was written: the agent's parameters name a
    write no review allowed (session.py answers invalid params, with this message)."""


class WriteFailed(Exception):
    """An allowed `fs/write_text_file` that could not be written (session.py answers an internal error)."""


class AgentRequests(Protocol):
    """The requests the capabilities send to the agent (session.py: over the SDK's connection).
    Each raises ChatFailed, saying why, when the agent fails or the chat has not started."""

    async def set_mode(self, mode_id: str) -> None: ...

    async def set_model(self, model_id: str) -> None: ...

    async def set_config_option(self, config_id: str, value: str | bool) -> list[dict[str, Any]] | None:
        """The agent's answer's `configOptions` (every option, as the SDK dumps them), if it sent any."""
        ...

    def queue_prompt(self, text: str) -> bool:
        """Send `text` as a prompt now, to run after the agent's turn, when the agent queues prompts
        (it said so at initialize); False, nothing sent, when it does not."""
        ...


class _Offered:
    """What the agent offers to pick from in session/new (its modes, its models) and the current one."""

    kind = ""  # "mode" or "model", as the agent's error names it

    def __init__(
        self, agent: str, view: ChatView, requests: AgentRequests, available: list[Mode], current: str | None
    ) -> None:
        self.agent = agent
        self.available = available
        self.current = current
        self._view = view
        self._requests = requests

    def __iter__(self) -> Iterator[Mode]:
        return iter(self.available)

    def _check(self, wanted: str) -> None:
        """ChatFailed, naming the ones offered, for an id the agent does not offer."""
        ids = [m.id for m in self.available]
        if wanted not in ids:
            raise ChatFailed(f"{self.agent} has no {self.kind} {wanted!r}; pick one of {ids}.")


class SessionModes(_Offered):
    """The agent's session modes (session/new's `modes`): the ones it offers and the current one."""

    kind = "mode"

    async def set(self, mode_id: str) -> None:
        """session/set_mode; the view is told the new mode. ChatFailed for a mode the agent lacks."""
        if self.available:  # an agent that lists none may still take a mode id it documents
            self._check(mode_id)
        await self._requests.set_mode(mode_id)
        self.changed(mode_id)

    def changed(self, mode_id: str) -> None:
        """The mode is now `mode_id` (set by us, or the agent's `current_mode_update`)."""
        self.current = mode_id
        self._view.mode(mode_id, self.available)


class SessionModels(_Offered):
    """Gemini's models (session/new's `models`, for session/set_model: reference acp.md §2)."""

    kind = "model"

    async def set(self, model_id: str) -> None:
        self._check(model_id)
        await self._requests.set_model(model_id)
        self.current = model_id
        self._view.models(model_id, self.available)


class ConfigOptions:
    """The session's config options (Claude's mode, model, effort …: reference acp.md §3)."""

    def __init__(
        self,
        agent: str,
        view: ChatView,
        requests: AgentRequests,
        options: list[ConfigOption],
        mode_set: Callable[[str], None],
    ) -> None:
        self.agent = agent
        self.options = options
        self._view = view
        self._requests = requests
        self._mode_set = mode_set  # the option `mode` is the session's mode

    async def set(self, config_id: str, value: str | bool) -> None:
        """session/set_config_option; the agent answers with every option, which the view gets."""
        option = next((o for o in self.options if o.id == config_id), None)
        if option is None:
            known = [o.id for o in self.options]
            raise ChatFailed(f"{self.agent} has no setting {config_id!r}; pick one of {known}.")
        values = [c.value for c in option.choices]
        if option.kind == "select" and (not isinstance(value, str) or (values and value not in values)):
            raise ChatFailed(f"{value!r} is not a value of {option.name}; pick one of {values}.")
        if option.kind == "boolean" and not isinstance(value, bool):
            raise ChatFailed(f"{option.name} is on or off (true or false), not {value!r}.")
        answered = await self._requests.set_config_option(config_id, value)
        if answered is not None:
            self.changed(answered)
        mode = next((o for o in self.options if o.id == "mode" and isinstance(o.current, str)), None)
        if config_id == "mode" and mode is not None:
            self._mode_set(str(mode.current))

    def changed(self, options: list[dict[str, Any]]) -> None:
        """Every option as the agent sends them now (its answer, or `config_option_update`)."""
        self.options = [updates.config_option(o) for o in options]
        self._view.config_options(self.options)


class ChatThread:
    """One chat's state and the decisions on what the agent asks; session.py hands each request to it."""

    def __init__(
        self, agent: str, view: ChatView, gate: ReviewGate, files: AgentFiles, requests: AgentRequests
    ) -> None:
        self.agent = agent  # the agent's name, as the user's notices say it
        self.view = view
        self.gate = gate
        self.files = files
        self.requests = requests  # session.py's: over the SDK's connection
        self.always_allowed = False  # the user allowed this agent's edits for the session
        self.unchecked = UncheckedEdits()  # edits that did not go through the review (`chat` reports them)
        self.writes = TurnWrites()  # what the agent wrote through us this turn, for the change set
        # The bytes each accepted edit must leave on disk when the agent writes the file itself, by
        # (tool call id, real path); None when the accepted text cannot be stored in the file's encoding.
        self._accepted_bytes: dict[tuple[str, str], bytes | None] = {}
        # The agent's own whole text of an accepted edit (UTF-8, as it writes it): a file found holding
        # exactly these bytes after its write gets the accepted bytes (_land_accepted).
        self._agent_bytes: dict[tuple[str, str], bytes] = {}
        self.seen = Seen()  # what the agent did with edits in each mode: names are only hints (modes.py)
        self._notes: list[str] = []  # told to the agent with the next prompt
        self.transcript = Transcript()  # the prompts and replies, for a rewind (rewind.py)
        self._calls = ToolCalls()  # by id: all the agent said about each, to decide on, and its card
        self.modes: SessionModes | None = None
        self.models: SessionModels | None = None
        self.config_options: ConfigOptions | None = None
        self.commands: list[Command] = []
        self.title: str | None = None
        # The user's last answer this turn rejected an edit: a turn then ending `cancelled` is the
        # agent stopping after the rejection (some agents' reject ends the turn), not a failure.
        self.rejected_last = False

    # -- the session's modes, models and config options --

    @property
    def mode(self) -> str | None:
        return self.modes.current if self.modes is not None else None

    def opened(self, data: dict[str, Any], raw: dict[str, Any]) -> None:
        """What session/new (or session/load) tells: modes, models, config options; to the view.
        `raw`: the answer as sent (SDK 0.12.1 drops Gemini's `models`: session.py `_opening`)."""
        self.modes = self.models = self.config_options = None  # what a load's replay said is replaced
        if "modes" in data:
            modes = data["modes"] or {}
            available = [updates.mode(m) for m in modes.get("availableModes", [])]
            self.modes = SessionModes(self.agent, self.view, self.requests, available, modes.get("currentModeId"))
        found = raw.get("models")
        if isinstance(found, dict):
            models = [updates.model(m) for m in found.get("availableModels", [])]
            self.models = SessionModels(self.agent, self.view, self.requests, models, found.get("currentModelId"))
        options = [updates.config_option(o) for o in data.get("configOptions") or []]
        if options:
            self.config_options = ConfigOptions(self.agent, self.view, self.requests, options, self._mode_set)
        if self.mode is not None:
            self.view.mode(self.mode, self.modes.available if self.modes else [])
        if self.models is not None and self.models.current is not None:
            self.view.models(self.models.current, self.models.available)
        if self.config_options is not None:
            self.view.config_options(self.config_options.options)

    def offered_modes(self) -> SessionModes:
        """The modes, or none known (not kept until a mode is set): an agent that listed none may
        still switch (it says so with `current_mode_update`, or answers session/set_mode)."""
        return self.modes or SessionModes(self.agent, self.view, self.requests, [], None)

    def offered_config(self) -> ConfigOptions:
        """The config options, or none known: a set then names no setting (the object is not kept)."""
        return self.config_options or ConfigOptions(self.agent, self.view, self.requests, [], self._mode_set)

    async def set_model(self, model_id: str) -> None:
        """Gemini lists `models` and takes session/set_model; Claude's model is the config option
        `model` (reference acp.md §2, §3)."""
        if self.models is not None and self.models.available:
            await self.models.set(model_id)
        elif self.config_options is not None and any(o.id == "model" for o in self.config_options.options):
            await self.config_options.set("model", model_id)
        else:
            raise ChatFailed(f"{self.agent} offers no choice of model.")

    def _mode_set(self, mode_id: str) -> None:
        self.modes = self.offered_modes()
        self.modes.current = mode_id

    def warn_if_unreviewed_mode(self) -> None:
        modes = self.modes.available if self.modes else []
        current = next((m for m in modes if m.id == self.mode), None)
        if current is not None and mode_kind(current, self.seen) is Kind.WRITES:
            self.view.notice(
                f"{self.agent} runs in mode {current.id!r}, which applies edits without review (you set it).",
                "warning",
            )

    def _unreviewed(self, text: str) -> None:
        """A warning about an edit that went through no review: with a one-click switch to the
        agent's asking mode when it runs in another one."""
        modes = self.modes.available if self.modes else []
        asking = asking_mode(modes, self.seen)
        if asking is not None and asking.id != self.mode:
            self.view.offer_mode(text, asking)
        elif asking is None and modes and asking_mode(modes) is None:  # else: said to ask, did not
            hint = 'to review its edits, set its "mode" in the setting "agents" (or --mode) to one that asks'
            self.view.notice(f"{text} None of {self.agent}'s modes is known to ask; {hint}.", "warning")
        else:
            self.view.notice(text, "warning")

    # -- turns --

    def take_notes(self) -> list[str]:
        """The notes the next prompt carries before the user's text, once; a new turn begins."""
        notes, self._notes = self._notes, []
        self.rejected_last = False
        return notes

    def add_note(self, note: str) -> None:
        """A note from the editor that the next prompt carries before the user's text, once (what
        the user reverted or restored since the agent's last turn: core/turns.py take_notes)."""
        self._notes.append(note)

    def tell_reason(self, what: str, reason: str) -> None:
        """The user rejected `what` and said why: the transcript shows it, and the agent hears it at
        once where it queues prompts, else with the next prompt (acp/prompt/reasons.py). No reason: nothing."""
        if not reason.strip():
            return
        self.view.notice(f"You rejected {what}: {reason.strip()}", "info")
        note = rejection_note(what, reason)
        if not self.requests.queue_prompt(note):
            self._notes.append(note)

    def stopped_after_rejection(self, stop_reason: str) -> bool:
        """The turn ended `cancelled` right after the user rejected an edit: the agent's answer to
        the rejection (its only reject option ends the turn), not an error."""
        return stop_reason == "cancelled" and self.rejected_last

    async def check_reviewed(self) -> None:
        """The turn's end: a file counts as reviewed only if its bytes on disk are the bytes the user
        accepted (core/turn_writes.py); each other one is named, and no longer reviewed."""
        await self._written_unreported()
        for path in await asyncio.to_thread(self.writes.changed_after_review):
            self.unchecked.changed.add(path)
            self.view.notice(
                f"{path} changed after your review: the file on disk is not what you accepted "
                f"(after {self.agent}'s write, it or another program wrote other bytes); check it.",
                "warning",
            )

    async def _written_unreported(self) -> None:
        """An accepted edit neither written through us nor reported done whose file changed since the
        user decided: the agent wrote it itself (or something else did), so it must hold the accepted
        bytes. One whose file did not change still waits for its write."""
        waiting = {(e.tool_call_id, e.path) for e in self.gate.accepted.values()}
        self._accepted_bytes = {k: v for k, v in self._accepted_bytes.items() if k in waiting}
        self._agent_bytes = {k: v for k, v in self._agent_bytes.items() if k in waiting}
        for edit in list(self.gate.accepted.values()):
            now = await asyncio.to_thread(disk_text.read, edit.path)
            if edit.disk is None or not disk_text.changed(edit.disk, now):
                continue
            self.gate.take(edit.path)
            expected = self._accepted_bytes.pop((edit.tool_call_id, edit.path), None)
            if not await self._land_accepted(edit, expected):
                self.writes.record(edit.path, True, *_expected(expected, edit.deleted))

    # -- session/request_permission --

    def asked(self, tool_call: dict[str, Any]) -> dict[str, Any]:
        """A permission request's `toolCall`: merged into all the agent said about the call."""
        return self._calls.request(tool_call)

    async def decide(self, call: dict[str, Any], choices: list[Choice]) -> str | None:
        """The option to answer the permission request with; None: no answer (cancelled)."""
        known = self._calls.get(call["toolCallId"])
        kind = call.get("kind") or (known.kind if known else None)
        if not is_edit(call, kind):
            title = str(call.get("title") or kind or "a tool")
            answer = await self.view.choose(title, choices)
            if isinstance(answer, Rejection):
                self.tell_reason(f"your request ({title})", answer.reason)
                return answer.option_id
            return answer
        self.seen.asked(self.mode)  # this mode asks before an edit, whatever its name
        reject = _pick(choices, "reject_once", "reject_always")
        try:
            changes = file_changes(call, kind)
        except NotRebuildable as exc:
            what = edit_path(call) or "several files"
            self.view.notice(f"Rejected {self.agent}'s edit of {what}: {exc}; nothing of it was reviewed.", "warning")
            self.unchecked.refused.add(what)
            return reject
        path = edit_path(call)
        named = [p for c in changes for p in (c.path, c.target)] if changes else [path] if path else []
        unchanged = await self._unchanged_locations(call, named)
        if unchanged:  # reviewing the others would let one review stand for files it does not show
            what = ", ".join(unchanged)
            message = f"it names {what} but carries no change for it; nothing of it was reviewed"
            self.view.notice(f"Rejected {self.agent}'s edit of {path or what}: {message}.", "warning")
            self.unchecked.refused.add(what)
            return reject
        if changes:  # several files, a rename or a patch: each file reviewed, all or nothing
            return await self._decide_files(call, changes, choices, reject)
        if path is None:
            message = f"Rejected an edit by {self.agent}: it names no file, so it cannot be reviewed."
            self.view.notice(message, "warning")
            self.unchecked.refused.add("a file it did not name")
            return reject
        return await self._decide_file(call, path, choices, reject)

    async def _decide_file(
        self, call: dict[str, Any], path: str, choices: list[Choice], reject: str | None
    ) -> str | None:
        """An edit of one file: its review, and the option the user's decision answers with."""
        always = next((c for c in choices if c.kind == "allow_always"), None)
        try:
            target = await self.files.resolve(path)
            disk = await self.files.disk(target)  # what a later write must still find there
            before = await self.files.current(target, disk)
            if before.not_shown is not None:
                raise NotRebuildable(f"the file's current text cannot be shown: {before.not_shown}")
            # Off the loop: rebuilding the text keeps each line's break, a whole-file line diff.
            proposal = await asyncio.to_thread(proposed_text, call, before.text, None if before is disk else disk.text)
            decision = await self.gate.review(target.path, before, proposal, always.name if always else None)
        except (FsRefused, NotRebuildable, ReviewOpen) as exc:
            self.view.notice(f"Rejected {self.agent}'s edit of {path}: {exc}.", "warning")
            self.unchecked.refused.add(path)
            return reject
        if decision.outcome is not Outcome.ACCEPTED:
            if decision.outcome is Outcome.REJECTED:
                self._mark_decided(call, "rejected")
                self.tell_reason(f"your edit of {path}", decision.reason)
            return reject
        allow = always.option_id if decision.always and always else _pick(choices, "allow_once")
        if allow is None:
            message = f"{self.agent} offers no one-time allow for {path}; the edit was not allowed."
            self.view.notice(message, "warning")
            return None
        final = decision.content or proposal
        edit = AcceptedEdit(call["toolCallId"], target.path, proposal, final, disk)
        self._accepted_bytes[(edit.tool_call_id, edit.path)] = await self.files.accepted_bytes(target, final)
        sent = agent_text(call, before.text, None if before is disk else disk.text)
        if sent is not None:
            self._agent_bytes[(edit.tool_call_id, edit.path)] = sent.encode("utf-8")
        self.gate.on_accepted(edit)
        self._mark_decided(call, "accepted with your edits" if edit.edited else "accepted")
        if decision.always and always:
            self._allowed_always(always)
        return allow

    async def _unchanged_locations(self, call: dict[str, Any], named: list[str]) -> list[str]:
        """The files the call names anywhere (`named_paths`: locations, rawInput, diff blocks) that are
        none of `named` (the files it changes), compared as real paths; one outside the workspace is
        one of them."""
        found = named_paths(call)
        if all(p in named for p in found):
            return []
        real = set()
        for path in named:
            with contextlib.suppress(FsRefused):
                real.add((await self.files.resolve(path)).path)
        unchanged = []
        for path in found:
            try:
                if (await self.files.resolve(path)).path not in real:
                    unchanged.append(path)
            except FsRefused:
                unchanged.append(path)
        return unchanged

    async def _decide_files(
        self, call: dict[str, Any], changes: list[FileChange], choices: list[Choice], reject: str | None
    ) -> str | None:
        """A call changing several files (or renaming one): every file's proposal is built first
        (one that cannot be refuses the whole call: no subset is ever reviewed), then each is
        reviewed in turn; the call is allowed only when the user accepted every one of them."""
        names = ", ".join(c.describe() for c in changes)
        what = f"edit of {len(changes)} files ({names})" if len(changes) > 1 else f"edit ({names})"
        always = next((c for c in choices if c.kind == "allow_always"), None)
        prepared = []
        try:
            seen: dict[str, str] = {}  # real path -> as the call named it
            for change in changes:
                prepared.append(await self._prepare(change, seen))
        except (FsRefused, NotRebuildable) as exc:
            self.view.notice(f"Rejected {self.agent}'s {what}: {exc}; nothing of it was reviewed.", "warning")
            self.unchecked.refused.add(names)
            return reject
        decisions = []
        for n, (change, source, target, before, _, proposal, _) in enumerate(prepared, 1):
            part = (n, len(prepared)) if len(prepared) > 1 else None
            renamed_from = source.path if change.new_path else None
            try:
                offer = always.name if always else None
                decision = await self.gate.review(
                    target.path,
                    before,
                    proposal,
                    offer,
                    part=part,
                    renamed_from=renamed_from,
                    replaces=target.exists and renamed_from is not None,
                    delete=change.delete,
                )
            except ReviewOpen as exc:
                self.view.notice(f"Rejected {self.agent}'s {what}: {exc}.", "warning")
                self.unchecked.refused.add(names)
                return reject
            if decision.outcome is not Outcome.ACCEPTED:
                self._partly_rejected(call, changes, n, decision.outcome)
                self.tell_reason(f"your {what}", decision.reason)
                return reject
            decisions.append(decision)
        allow = always.option_id if always and all(d.always for d in decisions) else _pick(choices, "allow_once")
        if allow is None:
            self.view.notice(f"{self.agent} offers no one-time allow for its {what}; it was not allowed.", "warning")
            return None
        edited = False
        for (change, source, target, _, disk, proposal, sent), decision in zip(prepared, decisions, strict=False):
            final = decision.content or proposal
            deleted = change.delete and not final  # accepted as a deletion: the file must be gone
            renamed_from = source.path if change.new_path else None
            edit = AcceptedEdit(call["toolCallId"], target.path, proposal, final, disk, renamed_from, deleted)
            # A rename moves the source's bytes: encoded as the source is stored, not as the file it replaces.
            stored_as = source if change.new_path and source.exists else target
            self._accepted_bytes[(edit.tool_call_id, edit.path)] = await self.files.accepted_bytes(stored_as, final)
            if sent is not None:
                self._agent_bytes[(edit.tool_call_id, edit.path)] = sent.encode("utf-8")
            self.gate.on_accepted(edit)
            edited = edited or edit.edited
        self._mark_decided(call, "accepted with your edits" if edited else "accepted")
        if always and allow == always.option_id:
            self._allowed_always(always)
        return allow

    async def _prepare(self, change: FileChange, seen: dict[str, str]) -> _Prepared:
        """One file of an edit of several, ready for its review: (change, its file (a rename's
        source), the file the review shows, its text now, its disk, the proposal, the agent's own
        text). A rename onto a file that exists is reviewed as replacing that file: its current
        text against the new one (never "no changes" while its content is lost). NotRebuildable
        for a file the call changes twice (two half-reviews would each show what never lands)."""
        source = await self.files.resolve(change.path)
        target = await self.files.resolve(change.target) if change.new_path else source
        mine = {source.path: change.path, target.path: change.target}
        for real, named in mine.items():
            if real in seen:
                raise NotRebuildable(
                    f"it changes {named} twice (also as {seen[real]}), so no one review could show what lands; "
                    "ask it for one change per file"
                )
        seen.update(mine)
        disk = await self.files.disk(source)
        before = await self.files.current(source, disk)
        if before.not_shown is not None:
            raise NotRebuildable(f"the current text of {change.path} cannot be shown: {before.not_shown}")
        try:
            proposal = change.proposal(before.text, None if before is disk else disk.text)
        except NotRebuildable as exc:
            raise NotRebuildable(f"{change.path}: {exc}") from None
        sent = change.agent_text(before.text, None if before is disk else disk.text)  # as the agent writes it
        if change.new_path is not None and target.exists:  # what the user loses is the target's text
            disk = await self.files.disk(target)
            before = await self.files.current(target, disk)
            if before.not_shown is not None:
                raise NotRebuildable(
                    f"the text of {change.target}, which it replaces, cannot be shown: {before.not_shown}"
                )
        return change, source, target, before, disk, proposal, sent

    def _partly_rejected(self, call: dict[str, Any], changes: list[FileChange], n: int, outcome: Outcome) -> None:
        """One line: which file of the edit the user rejected (or closed), and that nothing of it
        was allowed, the files accepted before it included."""
        said = "rejected" if outcome is Outcome.REJECTED else "closed the review of"
        line = f"You {said} {changes[n - 1].describe()}"
        if len(changes) > 1:
            accepted = [c.describe() for c in changes[: n - 1]]
            unseen = [c.describe() for c in changes[n:]]
            line += f", so {self.agent}'s whole edit of {len(changes)} files was rejected"
            others = [f"accepted: {', '.join(accepted)}"] if accepted else []
            others += [f"not reviewed: {', '.join(unseen)}"] if unseen else []
            line += f" ({'; '.join(others)})" if others else ""
        self.view.notice(line + ".", "info")
        if outcome is Outcome.REJECTED:
            self._mark_decided(call, "rejected")

    def terminal_output(self, terminal_id: str, output: str) -> None:
        """A client terminal's output so far (its end): the cards of the calls embedding it show it."""
        for call_id in self._calls.embedding(terminal_id):
            self._calls[call_id] = replace(self._calls[call_id], output=output)
            self.view.tool_call(self._calls[call_id])

    def _mark_decided(self, call: dict[str, Any], decision: str) -> None:
        """The call's card says what the user decided, whatever the agent reports about it later."""
        call_id = call["toolCallId"]
        self.rejected_last = decision == "rejected"
        known = self._calls.card_of(call)
        self._calls[call_id] = replace(known, decision=decision, reviewed=True)
        self.view.tool_call(self._calls[call_id])

    def _allowed_always(self, option: Choice) -> None:
        """After "allow for this session" the agent asks no more: say so, since its later edits
        reach the files without a review."""
        self.always_allowed = True
        self.view.notice(
            f"Later edits by {self.agent} in this session are applied without review (you chose "
            f"“{option.name}”); start a new chat to review every edit again.",
            "warning",
        )

    # -- session/update --

    async def update(self, data: dict[str, Any]) -> None:
        """One `session/update` notification, as the SDK dumps it."""
        what = data.get("sessionUpdate")
        if what in ("tool_call", "tool_call_update"):
            await self._tool_call(data)
        elif what is not None and what in _ROUTES:
            _ROUTES[what](self, data)
        else:
            log.debug("session/update %r ignored", what)

    def _chunk(self, data: dict[str, Any]) -> None:
        content = data.get("content") or {}
        text = content.get("text") if content.get("type") == "text" else None
        if text is None:
            return
        what = data["sessionUpdate"]
        meta = (data.get("_meta") or {}).get("claudeCode") or {}
        if meta.get("kind") == "informational":  # reference acp.md §3: not the model's text
            self.view.notice(text, "agent")
        elif what == "agent_message_chunk":
            self.transcript.replied(text)
            self.view.agent_text(text)
        elif what == "user_message_chunk":
            if not updates.hidden_context(text):  # Gemini's own context turn, replayed: never typed
                self.view.user_text(text)
        else:
            self.view.thought(text)

    def _plan(self, data: dict[str, Any]) -> None:
        self.view.plan([updates.plan_entry(e) for e in data.get("entries", [])])

    def _usage(self, data: dict[str, Any]) -> None:
        self.view.usage(updates.usage(data))

    def _commands(self, data: dict[str, Any]) -> None:
        self.commands = [updates.command(c) for c in data.get("availableCommands", [])]
        self.view.available_commands(self.commands)

    def _mode_changed(self, data: dict[str, Any]) -> None:
        self.modes = modes = self.offered_modes()
        modes.current = data.get("currentModeId", modes.current)
        self.view.mode(modes.current or "", modes.available)

    def _config_changed(self, data: dict[str, Any]) -> None:
        self.config_options = self.offered_config()  # an agent that listed none may send them later
        self.config_options.changed(data.get("configOptions", []))

    def _info_changed(self, data: dict[str, Any]) -> None:
        if "title" in data:  # an update of updatedAt alone keeps the title
            self.title = data["title"]
            self.view.session_info(self.title)

    async def _tool_call(self, data: dict[str, Any]) -> None:
        call_id = data["toolCallId"]
        said, call = self._calls.update(data)
        self.view.tool_call(call)
        if data.get("status") == "failed":
            self.gate.take_all_by_tool_call(call_id)
        if data.get("status") != "completed":
            return
        if await self._landed(call_id):
            return
        if call.decision == "rejected":
            path = edit_path(said) or "the file"
            self.view.notice(
                f"{self.agent} reports its edit of {path} as done, but you rejected it: nothing was written "
                "through the editor; if the file changed anyway, the agent wrote it itself.",
                "warning",
            )
        elif not self._calls.asked(call_id) and is_edit(said, call.kind):
            path = edit_path(said) or (call.diffs[0].path if call.diffs else "a file")
            self.seen.wrote(self.mode)  # this mode applies edits without asking, whatever its name
            self._unreviewed(f"{self.agent} changed {path} without asking: applied without review.")
            self.unchecked.applied.add(path)
            with contextlib.suppress(FsRefused):  # outside the workspace: no change set holds it
                await self._wrote((await self.files.resolve(path)).path, reviewed=False)

    async def _landed(self, call_id: str) -> bool:
        """A call reported done whose edits the user accepted (one per file of an edit of several):
        the files must now hold the accepted bytes. False when it had none."""
        taken = self.gate.take_all_by_tool_call(call_id)
        for accepted in taken:
            expected = self._accepted_bytes.pop((accepted.tool_call_id, accepted.path), None)
            if accepted.edited:  # the agent wrote its own proposal (Claude): now the user's version
                await self._write_users_version(accepted, expected)
            elif not await self._land_accepted(accepted, expected):
                # the agent wrote the file itself: the turn's end must find the accepted bytes there
                self.writes.record(accepted.path, True, *_expected(expected, accepted.deleted))
            if accepted.renamed_from is not None:  # the rename's source is gone, as the user accepted
                self.writes.record(accepted.renamed_from, reviewed=True)
        return bool(taken)

    # -- the files the agent writes --

    async def write_text_file(self, path: str, content: str) -> None:
        """`fs/write_text_file`: written only as a review accepted it. WriteRefused when none did
        (or the path is not the workspace's), WriteFailed when the accepted write failed."""
        try:
            target = await self.files.resolve(path)
        except FsRefused as exc:
            self.view.notice(f"Refused {self.agent}'s write of {path}: {exc}", "warning")
            self.unchecked.refused.add(path)
            raise WriteRefused(str(exc)) from None
        edit = self.gate.take(target.path)
        if edit is None and self.always_allowed:  # the user let it edit without asking (notice shown)
            edit = AcceptedEdit("", target.path, content, content)
        if edit is None:
            message = f"Refused the write of {path}: no review accepted it. Every edit goes through a review."
            self.seen.wrote(self.mode)
            self._unreviewed(message)
            self.unchecked.refused.add(path)
            raise WriteRefused(message)
        # The bytes encoded when the user decided: the write refuses a file changed since, so they
        # are what encoding it now would give (once: keeping each line's ending costs a diff).
        accepted = self._accepted_bytes.pop((edit.tool_call_id, edit.path), None)
        final = edit.final
        if not edit.edited and await asyncio.to_thread(lambda: lines(content) == lines(final)):
            # The lines the user accepted, as the agent sent them: its final newline (a diff rebuilt
            # without it must not drop it) and, for a new file, its line breaks.
            edit = replace(edit, proposal=content, final=content)  # still not edited by the user
            accepted = None  # encoded from the agent's text by the write
        try:
            data = await self.files.write_accepted(target, edit, data=accepted)
        except FsRefused as exc:
            self.view.notice(str(exc), "warning")
            raise WriteFailed(str(exc)) from None
        self._wrote_bytes(target.path, bool(edit.tool_call_id), data)  # "" when allowed for the session
        if edit.edited:
            self._note_edited(edit)

    async def _wrote(self, path: str, reviewed: bool) -> None:
        """Record a write for the change set, with the file's digest now: what the turn's end must
        still find there for the write to count as the agent's (core/turn_writes.py)."""
        self.writes.record(path, reviewed, await asyncio.to_thread(written_digest, path))

    async def _land_accepted(self, edit: AcceptedEdit, expected: bytes | None) -> bool:
        """After the agent's own write: a file holding exactly the agent's own text (its bytes, as it
        sent them) where the user accepted other bytes (the review keeps the file's line endings;
        Codex writes its lines with LF) gets the accepted bytes, through the write that refuses a
        file changed since it was read. A file holding anything else is never overwritten: the
        turn's end names it. True when the accepted bytes were written."""
        raw = self._agent_bytes.pop((edit.tool_call_id, edit.path), None)
        if raw is None or expected is None or raw == expected:
            return False
        now = await asyncio.to_thread(disk_text.read, edit.path)
        if now.stamp != disk_text.Stamp(len(raw), digest_of(raw)):
            return False
        try:
            target = await self.files.resolve(edit.path)
            data = await self.files.write_accepted(target, replace(edit, disk=now), data=expected)
        except FsRefused as exc:
            self.view.notice(f"The version of {edit.path} you accepted could not be written: {exc}", "warning")
            return False
        self._wrote_bytes(edit.path, True, data)
        return True

    async def _write_users_version(self, edit: AcceptedEdit, accepted: bytes | None) -> None:
        """`accepted`: the user's version encoded when they decided (the agent's write may have
        changed the file's encoding, BOM or line endings since)."""
        try:
            target = await self.files.resolve(edit.path)
            # check_disk=False: the agent has just written it
            data = await self.files.write_accepted(target, edit, check_disk=False, data=accepted)
        except FsRefused as exc:
            self.view.notice(f"Your edited version of {edit.path} could not be written: {exc}", "warning")
            self.writes.record(edit.path, True, *_expected(None))  # what the agent wrote is not what you accepted
            return
        self._wrote_bytes(edit.path, True, data)
        self._note_edited(edit)

    def _wrote_bytes(self, path: str, reviewed: bool, forms: tuple[bytes, ...]) -> None:
        """Record our write from the bytes we wrote (or the forms the editor's save may store);
        none: no bytes can hold the accepted text, so none is taken for it."""
        if forms:
            self.writes.wrote(path, reviewed, *forms)
        else:
            self.writes.record(path, reviewed, *_expected(None))

    def _note_edited(self, edit: AcceptedEdit) -> None:
        self._notes.append(
            f"[Note from the editor: the user changed your proposed edit of {edit.path} before accepting it. "
            f"The file's final text is:]\n{edit.final}"
        )


_ROUTES: dict[str, Callable[[ChatThread, dict[str, Any]], None]] = {
    "agent_message_chunk": ChatThread._chunk,
    "agent_thought_chunk": ChatThread._chunk,
    "user_message_chunk": ChatThread._chunk,
    "plan": ChatThread._plan,
    "usage_update": ChatThread._usage,
    "available_commands_update": ChatThread._commands,
    "current_mode_update": ChatThread._mode_changed,
    "config_option_update": ChatThread._config_changed,
    "session_info_update": ChatThread._info_changed,
}


def _expected(data: bytes | None, deleted: bool = False) -> tuple[str, int]:
    """`TurnWrites.record`'s digest and size for accepted bytes; for None (no write can hold the
    accepted text) a digest no file has; for an accepted deletion, the file gone (ABSENT)."""
    if deleted:
        return ABSENT, -2  # no size: a file that exists, even empty, is not the deletion accepted
    return (digest_of(data), len(data)) if data is not None else ("", -1)


def _pick(choices: list[Choice], *kinds: str) -> str | None:
    for kind in kinds:
        for choice in choices:
            if choice.kind == kind:
                return choice.option_id
    return None
