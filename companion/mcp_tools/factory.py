"""`tool_factory(settings)`: the workspace tools of one window, as `Runtime.open_window(...,
tool_factory=...)` takes them (see settings.py for what `settings` may be).

Standard library only at import: the Sublime adapter calls it on its own thread, and the MCP tools
(tools.py) are imported when a window's server is built, on the server loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .settings import SettingsSource, WorkspaceToolSettings

if TYPE_CHECKING:
    from ..core.server.window import Window
    from ..core.tool_calls import ToolSpec


def tool_factory(settings: SettingsSource | None = None) -> Callable[[Window], list[ToolSpec]]:
    """The `tool_factory` for `Runtime.open_window`: the enabled workspace tools of one window."""
    source: SettingsSource = settings if settings is not None else WorkspaceToolSettings()

    def make(server: Window) -> list[ToolSpec]:
        from .tools import build_tools  # the MCP types are imported on the server loop only

        return build_tools(server, source)

    return make
