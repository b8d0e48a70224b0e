"""The MCP servers a chat's agent gets in `session/new` and `session/load` (`mcpServers`).

First the window's own tools (its `/mcp` endpoint: `get_diagnostics`, `read_file` with unsaved
buffers, `list_files`, ...), reached with a token of the chat's own that is revoked when the chat
ends: an `http` entry when the agent's `initialize` answer says `mcpCapabilities.http`, else a
stdio entry that runs our bridge (`python -m companion bridge --port N`, the token in its
environment, never in its argv). Then the user's own servers, from the setting `chat_mcp_servers` or
`chat --mcp-config FILE`, in the `{"mcpServers": {name: {...}}}` format Claude and Gemini CLI use:
each one sent only where the agent advertises its transport, the others skipped with a notice.

Pure: no SDK (acp/session.py validates the entries into the SDK's models), no I/O but `read_config`.
Here, beside the server, because it is what a chat is handed to reach the window's server, and
both front ends build it (headless/chat.py, sublime_editor/chat/mcp.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .chat_tokens import BRIDGE_TOKEN_ENV, ChatTokens

WINDOW_SERVER_NAME = "sublime"  # what the agent calls the window's tools (`mcp__sublime__read_file`)
Transport = Literal["stdio", "http", "sse"]
CONFIG_HINT = (
    'the format is {"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}}} for a program, '
    'or {"mcpServers": {"NAME": {"type": "http", "url": "https://...", "headers": {...}}}}'
)


class McpConfigError(ValueError):
    """The user's MCP servers are not valid; the message names the bad entry and what to fix."""


@dataclass(frozen=True)
class UserServer:
    """One of the user's own MCP servers, validated."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AgentTransports:
    """What the agent's `initialize` answer says of MCP (`agentCapabilities.mcpCapabilities`); stdio is always there."""

    http: bool = False
    sse: bool = False

    @classmethod
    def from_capabilities(cls, capabilities: Mapping[str, Any] | None) -> AgentTransports:
        """From `mcpCapabilities` as JSON (None: the agent said nothing, stdio only)."""
        found = capabilities or {}
        return cls(http=found.get("http") is True, sse=found.get("sse") is True)

    def takes(self, transport: Transport) -> bool:
        return transport == "stdio" or (transport == "http" and self.http) or (transport == "sse" and self.sse)


@dataclass
class WindowTools:
    """The window's MCP tools endpoint as a chat reaches it: its port, the tokens it accepts from
    chats, and how to run the stdio bridge to it (`bridge_python` None: no Python for it is known)."""

    port: int
    tokens: ChatTokens
    bridge_python: str | None = None
    bridge_env: Mapping[str, str] = field(default_factory=dict)  # PYTHONPATH to import `companion`, ...

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


class ChatServers:
    """One chat's MCP servers: its own token for the window's tools (issued when the first session
    opens, revoked by `end`), and the entries for each `session/new` / `session/load`."""

    def __init__(self, window: WindowTools | None = None, user: Sequence[UserServer] = ()) -> None:
        self.window = window
        self.user = list(user)
        self.token = ""  # the chat's own token; "" until issued and after `end`

    def entries(self, transports: AgentTransports) -> tuple[list[dict[str, Any]], list[str]]:
        """The `mcpServers` entries (ACP's JSON shape) and a notice for what could not be sent."""
        window = self.window
        if window is not None and not self.token:
            self.token = window.tokens.issue()
        return session_servers(transports, window, self.token, self.user)

    def end(self) -> None:
        """The chat ended: its token answers 401 from now on."""
        if self.window is not None and self.token:
            self.window.tokens.revoke(self.token)
        self.token = ""


def session_servers(
    transports: AgentTransports, window: WindowTools | None, token: str, user: Sequence[UserServer]
) -> tuple[list[dict[str, Any]], list[str]]:
    """`mcpServers` for one session: the window's tools (http when the agent takes it, else the
    stdio bridge), then each user server whose transport the agent takes; notices say what was skipped."""
    entries: list[dict[str, Any]] = []
    notices: list[str] = []
    if window is not None:
        own = window_entry(transports, window, token)
        if own is not None:
            entries.append(own)
        else:
            notices.append(
                "This agent cannot reach the window's tools: it takes no MCP server over HTTP, and no Python "
                'to run the stdio bridge was found (set "bridge_python" in the Gemini Companion settings).'
            )
    skipped = [s for s in user if not transports.takes(s.transport)]
    entries += [user_entry(s) for s in user if transports.takes(s.transport)]
    if skipped:
        names = ", ".join(f"{s.name} ({s.transport})" for s in skipped)
        notices.append(f"Not sent to this agent, which does not take their transport: {names}.")
    return entries, notices


def window_entry(transports: AgentTransports, window: WindowTools, token: str) -> dict[str, Any] | None:
    if transports.http:
        headers = [{"name": "Authorization", "value": f"Bearer {token}"}]
        return {"type": "http", "name": WINDOW_SERVER_NAME, "url": window.url, "headers": headers}
    if window.bridge_python is None:
        return None
    env = {**window.bridge_env, BRIDGE_TOKEN_ENV: token}
    return {
        "name": WINDOW_SERVER_NAME,
        "command": window.bridge_python,
        "args": ["-m", "companion", "bridge", "--port", str(window.port)],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }


def user_entry(server: UserServer) -> dict[str, Any]:
    if server.transport == "stdio":
        env = [{"name": k, "value": v} for k, v in server.env]
        return {"name": server.name, "command": server.command, "args": list(server.args), "env": env}
    headers = [{"name": k, "value": v} for k, v in server.headers]
    return {"type": server.transport, "name": server.name, "url": server.url, "headers": headers}


# -- the user's configuration --


def parse_config(data: object, source: str) -> list[UserServer]:
    """`{"mcpServers": {...}}` (or the map alone, as a setting holds it) from `source`, validated;
    McpConfigError names the first bad entry and what to fix."""
    if isinstance(data, Mapping) and "mcpServers" in data:
        data = data["mcpServers"]
    if data is None:
        return []
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{source}: mcpServers must be an object of named servers; {CONFIG_HINT}.")
    return [_server(str(name), entry, source) for name, entry in data.items()]


def read_config(path: str) -> list[UserServer]:
    """`chat --mcp-config FILE`: the file's servers; McpConfigError when it cannot be read or is not valid."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise McpConfigError(f"cannot read the MCP configuration {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise McpConfigError(f"{path} is not valid JSON ({exc}); {CONFIG_HINT}.") from None
    if not isinstance(data, Mapping) or "mcpServers" not in data:
        raise McpConfigError(f"{path} has no mcpServers object; {CONFIG_HINT}.")
    return parse_config(data, path)


def _server(name: str, entry: object, source: str) -> UserServer:
    where = f"{source}: MCP server {name!r}"
    if not name.strip():
        raise McpConfigError(f"{source}: an MCP server has an empty name; give each server a name.")
    if name == WINDOW_SERVER_NAME:
        raise McpConfigError(f"{where}: that name is the window's own tools; rename your server.")
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{where} must be an object; {CONFIG_HINT}.")
    kind = entry.get("type", "http" if "url" in entry and "command" not in entry else "stdio")
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise McpConfigError(f'{where} needs "command": the program to run (or "type": "http" with a "url").')
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpConfigError(f'{where}: "args" must be a list of strings.')
        env = _pairs(entry.get("env", {}), f'{where}: "env"')
        return UserServer(name, "stdio", command=command, args=tuple(args), env=env)
    if kind in ("http", "sse"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpConfigError(f'{where} needs "url": an http:// or https:// address of the server.')
        headers = _pairs(entry.get("headers", {}), f'{where}: "headers"')
        return UserServer(name, "http" if kind == "http" else "sse", url=url, headers=headers)
    raise McpConfigError(f'{where}: "type" {kind!r} is not known; use "stdio", "http" or "sse".')


def _pairs(value: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f'{where} must be an object of string values, such as {{"NAME": "value"}}.')
    return tuple((str(k), v) for k, v in value.items())


def package_root() -> str:
    """The folder (or .sublime-package file) that holds `companion`: the bridge's PYTHONPATH."""
    here = os.path.abspath(__file__)  # <root>/companion/core/server/chat_servers.py
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))
