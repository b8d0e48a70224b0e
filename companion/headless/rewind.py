"""`/rewind N` in `chat --checkpoints`: the files go back to before prompt N (the `/restore N` of
changes.py, with its conflicts and undo), then the conversation does too: a new session of the same
agent whose first prompt carries the turns before prompt N (acp/prompt/rewind.py), and prompt N's text is
printed to edit and send again (the terminal's line cannot be filled in for you). `/rewind undo`
brings back the files (`/restore undo`) and the earlier session (`session/load`, where the agent can).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from ..acp.thread import ChatFailed
from .editor import one_line, visible

if TYPE_CHECKING:  # the SDK loads with the first chat, never with `companion.headless.chat`
    from ..acp.session import ChatSession

USAGE = "type /rewind N to go back to before prompt N, files and conversation; /rewind undo to undo it"
Restore = Callable[[list[str]], Awaitable[bool]]  # `/restore ...` words -> the files were restored


async def rewind(session: ChatSession, args: Sequence[str], restore: Restore) -> None:
    """One `/rewind ...`; every failure is one `error:` line saying what to do, nothing more changed."""
    try:
        if list(args) == ["undo"]:
            await _undo(session, restore)
        elif len(args) == 1 and args[0].isdigit():
            await _rewind(session, int(args[0]), restore)
        else:
            print(f"error: {USAGE}.", flush=True)
    except (ValueError, ChatFailed) as exc:
        print(f"error: {one_line(str(exc))}", flush=True)


async def _rewind(session: ChatSession, number: int, restore: Restore) -> None:
    session.thread.transcript.prompt_text(number)  # no such prompt: said before any file changes
    if not await restore(["/restore", str(number)]):
        print("The conversation was not rewound, since the files were not restored.", flush=True)
        return
    text = await session.rewind(number)
    print(
        f"Rewound to prompt {number}: a new session of {visible(session.spec.name)}; the conversation "
        "before it goes with your next prompt. /rewind undo brings back the files and the conversation.\n"
        f"Prompt {number} was (type it again, or change it, to send it):\n{visible(text)}",
        flush=True,
    )


async def _undo(session: ChatSession, restore: Restore) -> None:
    if not session.rewinds:
        raise ValueError("there is no rewind to undo in this chat")
    if not await restore(["/restore", "undo"]):
        print("The conversation stays rewound, since the files were not brought back.", flush=True)
        return
    if await session.undo_rewind():
        print("The earlier conversation is back (session/load): your next prompt continues it.", flush=True)
    else:
        print(
            f"{visible(session.spec.name)} cannot open its earlier session again (no session/load): "
            "the chat goes on in the new session.",
            flush=True,
        )
