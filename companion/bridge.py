"""`python -m companion bridge`: an MCP stdio server that forwards to a Sublime window's workspace tools.

For clients that only start stdio servers (Claude Desktop). It finds the window the way Gemini CLI
does: every `gemini-ide-server-*-*.json` in Node's tmpdir owned by this user (and the
`sublime-companion-server-*-*.json` a window writes instead with Gemini CLI turned off), keeping the files whose
`workspacePath` contains the folder (`--workspace`, default the current folder), live PIDs first,
then the newest; `GEMINI_CLI_IDE_SERVER_PORT` breaks ties. With `--port P` it takes the file for
that port; with `--port P` and a token in GEMINI_COMPANION_BRIDGE_TOKEN (a chat's agent runs it
so: the chat's own token, core/server/chat_tokens.py) it connects to that port directly, no
discovery file read. It then connects as a Streamable HTTP client with the file's token and offers the
window's workspace tools (never `openDiff`/`closeDiff`, which belong to Gemini CLI).

The window is looked up again whenever the connection is missing or stale (checked with a ping
before each call), so the bridge keeps working when Sublime restarts or the window is reopened;
meanwhile every call answers with a clear tool error. Logs go to stderr (stdout is the protocol).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from . import __version__
from .core.server.chat_tokens import BRIDGE_TOKEN_ENV
from .core.system.processes import pid_alive
from .core.system.token_files import pid_reused_since, port_answers
from .gemini_ide.discovery import discovery_dir, our_files
from .gemini_ide.protocol import CLOSE_DIFF, OPEN_DIFF

log = logging.getLogger("gemini_companion.bridge")

BRIDGE_NAME = "gemini-companion-bridge"
CONNECT_TIMEOUT_SECONDS = 10.0
PING_TIMEOUT_SECONDS = 5.0
HIDDEN_TOOLS = frozenset({OPEN_DIFF, CLOSE_DIFF})


class WindowUnavailable(Exception):
    """No window server to forward to; the message tells the user what to do."""


@dataclass(frozen=True)
class Endpoint:
    port: int
    token: str
    workspace_path: str
    pid: int
    file: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


# -- finding the window (the rules of Gemini CLI's ide-connection-utils) --


def read_endpoints(directory: str) -> list[Endpoint]:
    """Every usable discovery file in `directory`, live PIDs first, then larger PIDs."""
    found: list[Endpoint] = []
    for path, pid, _port in our_files(directory):
        try:
            with open(path, encoding="utf-8") as handle:
                payload = json.load(handle)
        except (OSError, ValueError):
            continue
        if not isinstance(payload, dict):
            continue
        try:
            port = int(str(payload.get("port")))
        except ValueError:
            continue
        token, workspace = payload.get("authToken"), payload.get("workspacePath")
        if not 0 < port < 65536 or not isinstance(token, str):
            continue
        found.append(Endpoint(port, token, workspace if isinstance(workspace, str) else "", pid, path))
    # Like Gemini CLI: live PIDs first, then larger ones; a PID reused since its file was written
    # (the editor crashed) counts as dead.
    found.sort(key=lambda e: (not pid_alive(e.pid) or pid_reused_since(e.file, e.pid), -e.pid))
    return found


def _resolve_workspace_part(part: str) -> str:
    if part.startswith("file://"):
        part = part[len("file://") :]
    try:
        part = urllib.parse.unquote(part, errors="strict")
    except UnicodeDecodeError:
        pass
    return os.path.realpath(os.path.abspath(part))


def _is_subpath(parent: str, child: str) -> bool:
    if sys.platform in ("darwin", "win32"):
        parent, child = parent.lower(), child.lower()
    rel = os.path.relpath(child, parent) if os.path.splitdrive(parent)[0] == os.path.splitdrive(child)[0] else ".."
    return rel == "." or not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))


def workspace_contains(workspace_path: str, folder: str) -> bool:
    real = os.path.realpath(folder)
    return any(_is_subpath(_resolve_workspace_part(p), real) for p in workspace_path.split(os.pathsep) if p)


def choose_endpoint(
    endpoints: list[Endpoint],
    folder: str | None,
    port: int | None,
    env_port: str | None = None,
    answers: Callable[[int], bool] = port_answers,
) -> Endpoint | None:
    if port is not None:
        return next((e for e in endpoints if e.port == port), None)
    assert folder is not None
    matching = [e for e in endpoints if workspace_contains(e.workspace_path, folder)]
    if len(matching) > 1:  # a file left by a crash must not win over a window that answers
        answering = [e for e in matching if answers(e.port)]
        matching = answering or matching
    if len(matching) > 1 and env_port:
        for endpoint in matching:
            if str(endpoint.port) == env_port:
                return endpoint
    return matching[0] if matching else None


# -- the connection to the window --


class WindowLink:
    """The HTTP client side: one SDK session to the window server, re-established when needed."""

    def __init__(
        self,
        task_group: TaskGroup,
        workspace: str | None = None,
        port: int | None = None,
        directory: Callable[[], str] = discovery_dir,
    ) -> None:
        self.task_group = task_group
        self.workspace = os.path.abspath(workspace or os.getcwd())
        self.port = port
        self.directory = directory
        self.session: ClientSession | None = None
        self.endpoint: Endpoint | None = None
        self._drop: anyio.Event | None = None
        self._lock = anyio.Lock()

    def describe(self) -> str:
        return f"port {self.port}" if self.port is not None else self.workspace

    def find(self) -> Endpoint:
        token = os.environ.get(BRIDGE_TOKEN_ENV, "")
        if token and self.port is not None:  # a chat's agent runs us: its own token, no discovery file
            return Endpoint(self.port, token, "", 0, "")
        directory = self.directory()
        endpoint = choose_endpoint(
            read_endpoints(directory), self.workspace, self.port, os.environ.get("GEMINI_CLI_IDE_SERVER_PORT")
        )
        if endpoint is not None:
            return endpoint
        if self.port is not None:
            raise WindowUnavailable(
                f"No Sublime Text window of Gemini Companion is serving on port {self.port} (no discovery file for "
                f"that port in {directory}). Check that Sublime Text is running with that window open; the bridge "
                "connects again on the next call."
            )
        raise WindowUnavailable(
            f"No Sublime Text window has {self.workspace} open (no Gemini Companion discovery file for it in "
            f"{directory}). Start Sublime Text and open that folder (the Gemini Companion package must be "
            "enabled); the bridge connects again on the next call."
        )

    async def ensure(self, client_name: str) -> ClientSession:
        async with self._lock:
            if self.session is not None:
                try:
                    with anyio.fail_after(PING_TIMEOUT_SECONDS):
                        await self.session.send_ping()
                    return self.session
                except Exception as exc:
                    log.info("the window server stopped answering (%r); looking for it again", exc)
                    self.drop()
            endpoint = self.find()
            ready = anyio.Event()
            outcome: dict[str, Any] = {}
            drop = anyio.Event()
            self._drop = drop
            self.task_group.start_soon(self._hold, endpoint, client_name, ready, drop, outcome)
            await ready.wait()
            if "session" not in outcome:
                error = outcome.get("error")
                raise WindowUnavailable(
                    f"The Sublime Text window for {self.describe()} (port {endpoint.port}) did not answer: "
                    f"{_describe_error(error)}. Sublime Text may have closed or the window may be gone; "
                    "the bridge connects again on the next call."
                )
            session: ClientSession = outcome["session"]
            self.session, self.endpoint = session, endpoint
            log.info("connected to the window server at %s", endpoint.url)
            return session

    async def _hold(
        self, endpoint: Endpoint, client_name: str, ready: anyio.Event, drop: anyio.Event, outcome: dict[str, Any]
    ) -> None:
        """Own the connection (anyio scopes must be entered and left by one task) until dropped."""
        headers = {"Authorization": f"Bearer {endpoint.token}"}
        try:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(CONNECT_TIMEOUT_SECONDS, read=None)) as http,
                streamable_http_client(endpoint.url, http_client=http) as (read, write),
                ClientSession(
                    read,
                    write,
                    client_info=types.Implementation(name=f"{client_name} via stdio bridge", version=__version__),
                ) as session,
            ):
                with anyio.fail_after(CONNECT_TIMEOUT_SECONDS):
                    await session.initialize()
                outcome["session"] = session
                ready.set()
                await drop.wait()
        except Exception as exc:
            outcome["error"] = exc
            log.debug("connection to %s ended: %r", endpoint.url, exc)
        finally:
            ready.set()
            if self._drop is drop:
                self.session = None

    def drop(self) -> None:
        if self._drop is not None:
            self._drop.set()
        self.session = None
        self._drop = None

    async def list_tools(self, client_name: str) -> list[types.Tool]:
        session = await self.ensure(client_name)
        result = await session.list_tools()
        return [tool for tool in result.tools if tool.name not in HIDDEN_TOOLS]

    async def call_tool(self, name: str, arguments: dict[str, Any], client_name: str) -> types.CallToolResult:
        session = await self.ensure(client_name)
        try:
            return await session.call_tool(name, arguments)
        except Exception as exc:
            self.drop()
            raise WindowUnavailable(
                f"The Sublime Text window for {self.describe()} went away during the call ({_describe_error(exc)}). "
                "If the call changed something, check the file before trying again."
            ) from exc


def _describe_error(error: object) -> str:
    if error is None:
        return "no answer"
    inner = getattr(error, "exceptions", None)  # an exception group (Python 3.11+)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(_describe_error(e) for e in inner)
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# -- the stdio side --


def default_tools() -> list[types.Tool]:
    """What the window usually offers: shown while no window is reachable, so clients know the tools."""
    from .mcp_tools.tools import TOOL_DEFINITIONS

    return list(TOOL_DEFINITIONS.values())


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else "stdio client"


def build_server(link: WindowLink) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            tools = await link.list_tools(_client_name(ctx))
        except WindowUnavailable as exc:
            log.info("%s", exc)
            tools = default_tools()
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name in HIDDEN_TOOLS:
            return _error(f"{params.name} is for Gemini CLI only; the bridge does not offer it.")
        try:
            return await link.call_tool(params.name, params.arguments or {}, _client_name(ctx))
        except WindowUnavailable as exc:
            return _error(str(exc))

    return Server(
        BRIDGE_NAME,
        version=__version__,
        instructions="Tools of the user's Sublime Text window (Gemini Companion): list, read and write files of "
        "the open folders (every write is reviewed and accepted or rejected by the user), and ask Gemini.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(workspace: str | None, port: int | None) -> None:
    async with anyio.create_task_group() as task_group:
        link = WindowLink(task_group, workspace, port)
        server = build_server(link)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        link.drop()
        task_group.cancel_scope.cancel()


def run(workspace: str | None, port: int | None, debug: bool = False) -> int:
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG if debug else logging.WARNING, format="bridge %(levelname)s %(message)s"
    )
    if workspace is not None and not os.path.isdir(workspace):
        print(f"error: {workspace} is not a folder; pass --workspace with an existing folder.", file=sys.stderr)
        return 2
    try:
        anyio.run(serve, workspace, port)
    except KeyboardInterrupt:
        pass
    return 0
