"""Every folder of the window for the chat's agent: the first is the session's `cwd`; the others go
in `additionalDirectories` on session/new and session/load when the agent's `initialize` advertises
`sessionCapabilities.additionalDirectories`. An agent without it sees the first folder only, and the
user is told once, by name. No SDK import here (session.py builds the requests)."""

from __future__ import annotations

import os
from collections.abc import Sequence


def additional_directories(folders: Sequence[str], supported: bool) -> list[str] | None:
    """The folders after the first (absolute paths, as the protocol requires), or None: nothing to
    send, or an agent that does not take them (the field is left out, as for an older agent)."""
    others = [os.path.abspath(f) for f in folders[1:]]
    return others if supported and others else None


def first_folder_only(agent: str, folders: Sequence[str], supported: bool) -> str | None:
    """The one notice for a window of several folders whose agent takes no additional directories."""
    if supported or len(folders) < 2:
        return None
    others = ", ".join(os.path.basename(os.path.normpath(f)) or f for f in folders[1:])
    return (
        f"{agent} sees only the first folder, {folders[0]} (it does not offer additionalDirectories): "
        f"it cannot reach {others}; open a chat in a window of that folder to work there."
    )
