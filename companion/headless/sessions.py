"""`chat --sessions [--json]`: the agent's past sessions in the folder (every page of `session/list`,
bounded, newest first), one `ID  UPDATED  TITLE` line each or a JSON list; `chat --resume ID` opens
one again (companion/headless/chat.py)."""

from __future__ import annotations

import asyncio
import json
import sys

from ..acp.agents.agents import AgentSpec
from ..acp.past_sessions import MAX_SESSIONS, Listing, Unseen
from .editor import HeadlessEditor, one_line, visible

EXIT_OK, EXIT_FAILED = 0, 1


def print_sessions(spec: AgentSpec, folder: str, as_json: bool) -> int:
    """Exit 0 with the list (an empty one too), 1 with one `error:` line (the agent lists none)."""
    from ..acp.session import ChatFailed  # the SDK loads here

    try:
        listing = asyncio.run(_listing(spec, folder))
    except ChatFailed as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        print(json.dumps([s.as_json() for s in listing.sessions], ensure_ascii=False, indent=1))
    elif not listing.sessions:
        print(f"No earlier sessions of {visible(spec.name)} in {visible(folder)}.")
    for session in [] if as_json else listing.sessions:
        print(f"{visible(session.session_id)}  {visible(session.updated_at) or '-'}  {visible(session.title)}")
    if listing.cut:
        print(f"note: only the {MAX_SESSIONS} newest sessions are listed.", file=sys.stderr)
    return EXIT_OK


async def _listing(spec: AgentSpec, folder: str) -> Listing:
    from ..acp.session import ChatSession

    # Its own process: it may adopt the agent's orphans (process_tree.py), as the chat does.
    session = ChatSession(spec, [folder], HeadlessEditor("reject"), Unseen(), subreaper=True)
    try:
        await session.connect()
        return await session.sessions()
    finally:
        await session.close()
