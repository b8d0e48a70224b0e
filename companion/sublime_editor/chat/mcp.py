"""The MCP servers of a chat in Sublime: the window's own tools (its server's `/mcp`, with a token
of the chat's own; setting `chat_editor_tools`) and the user's (setting `chat_mcp_servers`).

The settings are read on the main thread (`read_settings`); the rest (`chat_servers`, which looks
for a Python to run the stdio bridge) on the loop thread, never Sublime's.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from ...core.server.chat_servers import ChatServers, McpConfigError, UserServer, WindowTools, package_root, parse_config
from ...core.system.user_paths import expand_path
from ...runtime import WindowHandle
from .. import settings

SETTING = "chat_mcp_servers"


@dataclass(frozen=True)
class ChatMcpSettings:
    editor_tools: bool = True
    user: list[UserServer] = field(default_factory=list)
    problem: str = ""  # `chat_mcp_servers` is not valid: the chat does not start, and this says why
    bridge_python: str = ""  # the setting `bridge_python`, as typed


def read_settings() -> ChatMcpSettings:
    """Main thread: the chat's MCP settings."""
    editor_tools = settings.get("chat_editor_tools", True)
    bridge_python = settings.get("bridge_python", "").strip()
    try:
        user = parse_config(settings.settings().get(SETTING), f'the setting "{SETTING}"')
    except McpConfigError as exc:
        return ChatMcpSettings(editor_tools, [], f"{exc} Nothing was sent to the agent.", bridge_python)
    return ChatMcpSettings(editor_tools, user, "", bridge_python)


def chat_servers(config: ChatMcpSettings, handle: WindowHandle) -> ChatServers:
    """Loop thread: the chat's servers; the window's tools while its server serves `/mcp`."""
    window = None
    if config.editor_tools and handle.server is not None and handle.serves_mcp:
        python = expand_path(config.bridge_python) or shutil.which("python3") or shutil.which("python")
        window = WindowTools(handle.port, handle.chat_tokens, python or None, {"PYTHONPATH": package_root()})
    return ChatServers(window, config.user)
