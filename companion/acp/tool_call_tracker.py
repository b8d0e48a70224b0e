"""A chat's tool calls: the one tracker of what the agent said about each call, with one memory bound.

Each call is one record: everything the agent said about it (its `tool_call`, every
`tool_call_update`, then the permission request's `toolCall`, a ToolCallUpdate whose only required
field is `toolCallId`), merged in one place (`update_fields`), and the card the view shows (the
view's ToolCall, its content capped: updates.py).

A field an update carries replaces the earlier one (reference acp.md §1), with two exceptions so
nothing the agent said is lost before the user decides: `rawInput` is merged key by key, and a
`content` without a diff (a tool's output, or `[]`) keeps the diff the call carried before (the card
shows the content as last sent). Plain dicts as the SDK dumps them (the protocol's camelCase
names); no SDK import here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from . import updates
from .review.edits import diff_blocks
from .view import Location, ToolCall

_ENDED = ("completed", "failed")
# What a chat's tool calls may hold in all, in bytes of memory of their texts (what they said, and
# their cards): an agent may open calls it never ends, each carrying a file's text (a hostile one
# sent 16 calls of 25 MB). The memory, not characters: CPython stores 1, 2 or 4 bytes a character,
# so 64 Mi characters outside Latin-1 would be 256 MB. Over it, the calls updated longest ago lose
# their content first (their cards were shown long ago; a permission for one is then decided on
# what its request itself says), the newest last: one call that alone says more than the bound (a
# hostile agent adding rawInput keys update after update) loses its content too.
HELD_IN_TOTAL = 64 * 1024 * 1024
_EMPTY = sys.getsizeof("")


@dataclass
class _Record:
    said: dict[str, Any] | None  # all the agent said, to decide on; None once ended or forgotten
    card: ToolCall | None  # what the view shows; None until an update (not a request) names the call
    held: int = 0  # bytes of memory its texts take


class Merged(NamedTuple):
    said: dict[str, Any]  # everything the agent said about the call, to decide on
    card: ToolCall  # the call as the view shows it now


def merged(earlier: dict[str, Any] | None, update: dict[str, Any]) -> dict[str, Any]:
    """`earlier` (what was said about the call so far) with `update` on top."""
    call = dict(earlier or {})
    for key, value in update.items():
        if value is None or key == "sessionUpdate":
            continue
        before = call.get(key)
        if key == "rawInput" and isinstance(value, dict) and isinstance(before, dict):
            call[key] = {**before, **value}
        elif key == "content" and isinstance(value, list) and not diff_blocks(update) and diff_blocks(call):
            call[key] = diff_blocks(call) + value
        else:
            call[key] = value
    return call


def card(known: ToolCall | None, update: dict[str, Any], reviewed: bool) -> ToolCall:
    """The card with `update` on top: a field it carries replaces the earlier one (content and
    locations as whole lists, as the view shows the call now); an empty title, kind or status says
    nothing new."""
    call = known or ToolCall(update["toolCallId"], "", "other", "")
    changes: dict[str, Any] = {"reviewed": reviewed}
    for key in ("title", "kind", "status"):
        if update.get(key):
            changes[key] = str(update[key])
    if "locations" in update:
        changes["locations"] = tuple(Location(str(x.get("path", "")), x.get("line")) for x in update["locations"])
    if "content" in update:
        content = update["content"] or []
        changes["diffs"] = updates.tool_diffs(content)
        changes["output"] = updates.tool_output(content)
        changes["terminals"] = updates.tool_terminals(content)
    return replace(call, **changes)


def update_fields(record: _Record, update: dict[str, Any], reviewed: bool, shown: bool = True) -> None:
    """The one place a tool call's update is merged: into what was said and, for a `session/update`
    (`shown`), into its card (a permission request's `toolCall` is what to decide on, not news for
    the card)."""
    record.said = merged(record.said, update)
    if shown:
        record.card = card(record.card, update, reviewed)


class ToolCalls:
    """A chat's tool calls by id, their texts taking at most `limit` bytes of memory in all. A call
    that ended keeps only its card without content: nothing is decided about it any more, and the
    view was shown its content when it ended."""

    def __init__(self, limit: int = HELD_IN_TOTAL) -> None:
        self.limit = limit
        self._records: dict[str, _Record] = {}  # updated longest ago first
        self._holding: dict[str, _Record] = {}  # those whose texts take memory, updated longest ago first
        self._held = 0
        self._asked: set[str] = set()  # ids that went through a permission request

    @property
    def held_chars(self) -> int:
        """The memory the calls' texts take: a byte a character of Latin-1 text, 2 or 4 of others."""
        return self._held

    def get(self, call_id: str) -> ToolCall | None:
        record = self._records.get(call_id)
        return record.card if record is not None else None

    def __getitem__(self, call_id: str) -> ToolCall:
        card = self.get(call_id)
        if card is None:
            raise KeyError(call_id)
        return card

    def __setitem__(self, call_id: str, call: ToolCall) -> None:
        """The card as the chat marks it (the user's decision on it)."""
        record = self._touch(call_id)
        record.card = call
        self._measure(record)

    def embedding(self, terminal_id: str) -> list[str]:
        """The calls whose cards embed the client terminal `terminal_id`."""
        return [i for i, r in self._records.items() if r.card is not None and terminal_id in r.card.terminals]

    def asked(self, call_id: str) -> bool:
        return call_id in self._asked

    def add(self, update: dict[str, Any]) -> dict[str, Any]:
        """A session/update about a call: everything said about it now."""
        return self.update(update).said

    def update(self, update: dict[str, Any]) -> Merged:
        """A session/update about a call: what was said about it, and its card, as they are now."""
        call_id = str(update.get("toolCallId", ""))
        record = self._touch(call_id)
        update_fields(record, update, call_id in self._asked)
        assert record.said is not None and record.card is not None
        now = Merged(record.said, record.card)
        if now.said.get("status") in _ENDED:
            self._lighten(record)
        else:
            self._measure(record)
        return now

    def request(self, tool_call: dict[str, Any]) -> dict[str, Any]:
        """A permission request's `toolCall`: everything said about the call, to decide on."""
        call_id = str(tool_call.get("toolCallId", ""))
        self._asked.add(call_id)
        record = self._touch(call_id)
        update_fields(record, tool_call, True, shown=False)
        self._measure(record)
        assert record.said is not None
        return record.said

    def card_of(self, said: dict[str, Any]) -> ToolCall:
        """The call's card; for a call only a permission request named, the card of what it said."""
        return self.get(said["toolCallId"]) or card(None, said, True)

    def _touch(self, call_id: str) -> _Record:
        """The call's record, moved last: the most recently updated."""
        record = self._records.pop(call_id, None) or _Record(None, None)
        self._records[call_id] = record
        self._holding.pop(call_id, None)
        self._holding[call_id] = record
        return record

    def _measure(self, record: _Record) -> None:
        before, record.held = record.held, _held(record)
        self._held += record.held - before
        if self._held > self.limit:  # else nothing to walk: an update costs O(1)
            self._shrink()

    def _shrink(self) -> None:
        """Lighten the calls updated longest ago until the texts fit, the newest last. Each call
        leaves the holding list when lightened and returns only when updated again: the walks of a
        whole chat cost O(updates), never O(calls) per update."""
        while self._held > self.limit and self._holding:
            call_id = next(iter(self._holding))
            self._lighten(self._holding.pop(call_id))

    def _lighten(self, record: _Record) -> None:
        """Forget what was said; the card keeps its title, status and decision, not its content."""
        record.said = None
        if record.card is not None:
            call = record.card
            size = updates.kept_size(call)
            diffs = tuple(updates.not_kept(d, size) if d.kept else d for d in call.diffs)
            record.card = replace(call, output="", diffs=diffs)
        self._held -= record.held
        record.held = _held(record)
        self._held += record.held


def _held(record: _Record) -> int:
    """The memory the record's texts take, each text once (the card's are mostly the said ones)."""
    texts = {id(t): t for t in _texts(record)}
    return sum(sys.getsizeof(t) - _EMPTY for t in texts.values())


def _texts(record: _Record) -> Iterator[str]:
    said, call = record.said, record.card
    if said is not None:
        for block in said.get("content") or []:
            if isinstance(block, dict):
                yield from _block_texts(block)
        raw = said.get("rawInput")
        if isinstance(raw, dict):
            yield from (v for v in raw.values() if isinstance(v, str))
    if call is not None:
        yield call.output
        # a diff not kept holds our short note, not the agent's text
        yield from (t for d in call.diffs if d.kept for t in (d.old_text, d.new_text) if t is not None)


def _block_texts(block: dict[str, Any]) -> Iterator[str]:
    if block.get("type") == "diff":
        yield from (t for t in (block.get("oldText"), block.get("newText")) if isinstance(t, str))
    inner = block.get("content")
    if isinstance(inner, dict) and isinstance(inner.get("text"), str):
        yield inner["text"]
