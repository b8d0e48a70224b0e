"""Issue 36's invariant as a property: a file counts as reviewed exactly when its bytes on disk at
the turn's end are the bytes the user accepted (the proposal after the user's own edits, encoded
as the file is written). One chat with `edit_agent.py` (the SDK's agent side, a real subprocess,
its script rewritten for each example) and a checkpoint before and after each turn, as `chat
--checkpoints` runs them; "reviewed" is what the turn's change set says.

Drawn: the file's text (LF, CRLF, CR or mixed line endings, with or without a final newline, with
or without a UTF-8 BOM), the agent's edit of one line, the user's own edit in the review (or
none), the write path (fs/write_text_file, or the agent writing the file itself after the
permission, reporting the call completed or not), and what the agent does after: nothing, write the
accepted bytes (again), other bytes, append, rename its own bytes over the file, rewrite it with LF.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.acp.agents.agents import AgentSpec
from companion.acp.session import ChatSession
from companion.core.files.textfile import decode, encode
from companion.core.history.turns import Turns
from companion.core.reviews import Review
from tests.acp.conftest import AsyncEditor, RecordingView
from tests.acp.test_any_agent_edits import AGENT

BOM = b"\xef\xbb\xbf"
OTHER = b"bytes the user never saw\n"


@dataclass(frozen=True)
class Example:
    lines: list[tuple[str, str]]  # (text, line break) each
    bom: bool
    edited_line: int
    user_edit: str | None  # a line the user adds in the review
    path: str  # "fs" (we write) | "itself" (the agent writes after the permission) | "silently" (and never reports it)
    itself: str  # what the agent writes itself before reporting completed: accepted | other | lf | nothing
    after: str  # nothing | accepted | other | append | rename | lf

    def original(self) -> bytes:
        text = "".join(t + brk for t, brk in self.lines)
        return (BOM if self.bom else b"") + text.encode("utf-8")


@st.composite
def examples(draw: Any) -> Example:
    count = draw(st.integers(1, 6))
    words = draw(st.lists(st.text(alphabet="abc xyzé", max_size=6), min_size=count, max_size=count))
    breaks = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=count, max_size=count))
    if draw(st.booleans()):  # no final newline
        breaks[-1] = ""
    lines = [(f"l{i}:{w}", brk) for i, (w, brk) in enumerate(zip(words, breaks, strict=True))]
    return Example(
        lines=lines,
        bom=draw(st.booleans()),
        edited_line=draw(st.integers(0, count - 1)),
        user_edit=draw(st.sampled_from([None, "a line of the user's own"])),
        path=draw(st.sampled_from(["fs", "itself", "silently"])),
        itself=draw(st.sampled_from(["accepted", "other", "lf", "nothing"])),
        after=draw(st.sampled_from(["nothing", "accepted", "other", "append", "rename", "lf"])),
    )


def agent_steps(example: Example, path: str, accepted_file: str) -> list[dict[str, Any]]:
    old = example.lines[example.edited_line][0]
    steps: list[dict[str, Any]] = [
        {"read": path},
        {"ask": {"toolCallId": "t1", "kind": "edit", "content": [{"diff_of_read": [old, "changed"], "path": path}]}},
    ]
    if example.path == "fs":
        steps.append({"write": path, "content": {"read_with": [old, "changed"]}})
    else:
        steps += own(example.itself, path, accepted_file)
        if example.path == "itself":
            steps.append({"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}})
    return steps + own(example.after, path, accepted_file)


def own(behaviour: str, path: str, accepted_file: str) -> list[dict[str, Any]]:
    """The agent's own write of `path` (not through the client)."""
    if behaviour == "nothing":
        return []
    if behaviour == "accepted":
        return [{"own": path, "from": accepted_file}]
    if behaviour == "lf":
        return [{"own": path, "from": f"{accepted_file}.lf"}]
    if behaviour == "rename":
        return [{"own": path, "bytes": OTHER.decode("latin-1"), "how": "rename"}]
    data = OTHER if behaviour == "other" else b"appended\n"
    return [{"own": path, "bytes": data.decode("latin-1"), "how": "append" if behaviour == "append" else "write"}]


def test_a_file_is_reviewed_exactly_when_its_bytes_on_disk_are_the_accepted_bytes(
    workspace: str, tmp_path: Any
) -> None:
    side = os.path.join(str(tmp_path), "side")
    os.makedirs(side)
    script, accepted_file = os.path.join(side, "script.json"), os.path.join(side, "accepted")
    view, editor = RecordingView(), AsyncEditor()
    turns = Turns(os.path.join(str(tmp_path), "cache"), [workspace])
    names = itertools.count()
    state: dict[str, Any] = {}

    def decide(review: Review) -> None:
        """The user accepts, with their own line added when drawn; the accepted bytes are what a
        write of that text stores in the file as it is (its encoding, BOM, line endings)."""
        final = review.proposal + (state["user_edit"] + "\n" if state["user_edit"] else "")
        with open(state["path"], "rb") as handle:
            text, fmt = decode(handle.read())
        accepted = encode(final, fmt, original=text)  # as fs/write_text_file stores it
        for name, data in ((accepted_file, accepted), (f"{accepted_file}.lf", lf(accepted))):
            with open(name, "wb") as handle:
                handle.write(data)
        review.accept(final)

    editor.decide = decide
    with open(script, "w", encoding="utf-8") as handle:
        json.dump([], handle)
    session = ChatSession(AgentSpec("Edits", (sys.executable, AGENT, script)), [workspace], editor, view)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(session.start())

        @given(example=examples())
        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        def check(example: Example) -> None:
            path = os.path.join(workspace, f"file{next(names)}.txt")
            with open(path, "wb") as handle:
                handle.write(example.original())
            state.update(path=path, user_edit=example.user_edit)
            with open(script, "w", encoding="utf-8") as handle:
                json.dump(agent_steps(example, path, accepted_file), handle)
            turns.begin()
            session.writes.take()
            assert loop.run_until_complete(session.prompt("edit")) == "end_turn"
            taken = session.writes.take_turn()
            found = {c.path: c for c in turns.end("Edits", *taken)}
            with open(path, "rb") as handle:
                disk = handle.read()
            with open(accepted_file, "rb") as handle:
                accepted = handle.read()
            change = found.get(path)  # none when the file is as it was (the agent never wrote it)
            reviewed = change.reviewed if change is not None else taken.writes.get(path, False)
            assert reviewed == (disk == accepted), (example, disk, accepted)

        check()
    finally:
        loop.run_until_complete(session.close())
        loop.close()
        turns.close()


def lf(data: bytes) -> bytes:
    """`data` rewritten with LF line endings (its BOM kept)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
