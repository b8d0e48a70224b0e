"""What the package keeps per Sublime window: its server handle, reviews, agents' terminal folder,
the agent used last, the workspace tools' settings snapshot and the files it shares.

Its own module, below `windows` (which opens and closes them) and `status` (which shows them), so
that neither of those imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sublime

from ..runtime import WindowHandle
from .mcp_tools import WorkspaceSnapshot
from .review_ui import WindowReviews


@dataclass
class WindowState:
    window: sublime.Window
    handle: WindowHandle
    reviews: WindowReviews
    terminal_folder: str | None = None  # where this window's agent terminals run
    last_agent: str | None = None  # "gemini", "claude" or "chat:<id>": the agent the user used last (Send goes there)
    tools: WorkspaceSnapshot = field(default_factory=WorkspaceSnapshot)  # what the loop's tools read
    paths: dict[int, str] = field(default_factory=dict)  # view id → the file it shares in the context
    chat_status: str = ""  # the window's chats in its status bar ("Chat: Gemini CLI (Default)"; chat_sessions)
