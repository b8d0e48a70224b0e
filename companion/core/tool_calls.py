"""MCP tool calls as every room that serves tools answers them: the error a caller reads, a tool's
definition with its handler, and the checked string argument.

Gemini's openDiff/closeDiff (gemini_ide), Claude Code's tools (claude_ide) and the workspace tools
(mcp_tools/tools.py) all answer a bad call the same way: a tool result with `isError` and a message
that says what to do, never a JSON-RPC error. Imported on the server loop only (it needs `mcp`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types


class ToolError(Exception):
    """A tool call that cannot be served; its message is shown to the client as is."""


class ToolSpec:
    """An extra tool offered by a window server (the workspace tools for other agents)."""

    def __init__(self, tool: types.Tool, handler: Callable[..., Any]) -> None:
        self.tool = tool
        self.handler = handler


def string_argument(arguments: dict[str, Any], name: str, allow_empty: bool = False) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ToolError(f"The argument {name!r} must be a string.")
    if not value and not allow_empty:
        raise ToolError(f"The argument {name!r} must not be empty.")
    return value


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
