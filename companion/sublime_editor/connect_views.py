"""The Connect views' state below the command that opens them: their Copy links, and closing them
all when the package unloads (their port and token are stale then). Main thread only.

Its own module in the base: the lifecycle, which closes them, sits below the Connect command
(commands/), which opens them, and never imports it.
"""

from __future__ import annotations

import sublime

from .review_ui import CONNECT_SETTING

copy_links: dict[int, sublime.PhantomSet] = {}  # Connect view id → its Copy link


def close_views() -> None:
    """Close every Connect view (main thread): after an unload its port and token are stale."""
    for window in sublime.windows():
        for view in window.views():
            if view.settings().get(CONNECT_SETTING):
                view.close()
    copy_links.clear()
