"""The workspace tools as MCP tools of one window server (imported on the server loop only)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from ..core.files import disk_text
from ..core.files.listing import ListOptions, list_files
from ..core.files.paths import PathPolicy, Resolved, WorkspaceError, is_inside
from ..core.files.reading import read_text
from ..core.files.textfile import TextFormat, encode, to_newline, with_breaks_of
from ..core.files.uris import diagnostics_by_uri
from ..core.files.writing import existing_format, write_atomically
from ..core.reviews import Outcome
from ..core.server.security import from_chat
from ..core.server.window import Window
from ..core.tool_calls import ToolError, ToolSpec
from .ask import ask_gemini
from .settings import (
    ASK_GEMINI,
    GET_DIAGNOSTICS,
    LIST_FILES,
    READ_FILE,
    TOOL_NAMES,
    WRITE_FILE,
    SettingsSource,
    WorkspaceToolSettings,
    current,
)

log = logging.getLogger("gemini_companion")

PATH_DESCRIPTION = (
    "An absolute path, a file:// URI, or a path relative to the window's folder (with several folders, "
    "start it with the folder's name as list_files prints it)."
)

TOOL_DEFINITIONS: dict[str, types.Tool] = {
    LIST_FILES: types.Tool(
        name=LIST_FILES,
        description="List the files of the folders open in the user's Sublime Text window, one path per line, "
        "relative to the folder (prefixed with the folder's name when the window has several). Honours the "
        "editor's exclude patterns and, inside git repositories, .gitignore. recursive=false lists only the "
        "top level (folders end with '/'). Long listings end with a '[truncated: ...]' line.",
        input_schema={
            "type": "object",
            "properties": {
                "recursive": {"type": "boolean", "description": "List sub-folders too (default true)."},
                "path": {"type": "string", "description": "Only list this folder inside the workspace."},
            },
        },
    ),
    READ_FILE: types.Tool(
        name=READ_FILE,
        description="Read a text file inside the user's Sublime Text workspace. When the file is open with "
        "unsaved changes, returns the editor's text and says so.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": PATH_DESCRIPTION}},
            "required": ["path"],
        },
    ),
    WRITE_FILE: types.Tool(
        name=WRITE_FILE,
        description="Propose the full new content of a file inside the user's Sublime Text workspace. The user "
        "reviews it as a diff in the editor and may edit it; the call waits for the decision. The file is "
        "written only if the user accepts (with the user's edits); the result says whether it was accepted "
        "or rejected. New files and folders may be created inside the workspace. The file keeps its line "
        "endings and encoding.",
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": PATH_DESCRIPTION},
                "content": {"type": "string", "description": "The complete new text of the file."},
            },
            "required": ["path", "content"],
        },
    ),
    ASK_GEMINI: types.Tool(
        name=ASK_GEMINI,
        description="Ask Google's Gemini model a question through the user's own Gemini CLI, run headless in "
        "the workspace folder (so it can read the project). Returns Gemini's answer as text.",
        input_schema={
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The question or task for Gemini."}},
            "required": ["prompt"],
        },
    ),
    GET_DIAGNOSTICS: types.Tool(
        name=GET_DIAGNOSTICS,
        description="The diagnostics the user's Sublime Text has for the workspace: the errors of the last build "
        "(its output panel) and the LSP package's Diagnostics panel while it shows. JSON: [{uri, diagnostics: "
        "[{message, severity, source, range}]}] with 0-based "
        "lines; an empty list when there are none.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Only this file. " + PATH_DESCRIPTION}},
        },
    ),
}


def build_tools(server: Window, source: SettingsSource) -> list[ToolSpec]:
    """The enabled workspace tools of `server`'s window."""
    tools = WorkspaceTools(server, source)
    handlers = {
        LIST_FILES: tools.list_files,
        READ_FILE: tools.read_file,
        WRITE_FILE: tools.write_file,
        ASK_GEMINI: tools.ask_gemini,
        GET_DIAGNOSTICS: tools.get_diagnostics,
    }
    settings = current(source)
    return [ToolSpec(TOOL_DEFINITIONS[name], handlers[name]) for name in TOOL_NAMES if settings.enabled(name)]


def _text(text: str) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    value = _json_value(text)
    if value is _NOT_JSON or isinstance(value, dict):
        return types.CallToolResult(content=content)
    # Gemini CLI (0.61.0, McpComplianceTransport) takes a first text block that parses as JSON for
    # the structured result, and MCP's structuredContent is an object: a list or a number (a file
    # holding `[1, 2]` or `42`) fails its check and the agent gets a tool error. An object of our
    # own keeps it off, the text exactly as sent (clients that show structuredContent show that).
    return types.CallToolResult(content=content, structured_content={"result": text})


def _json(value: object) -> types.CallToolResult:
    """A result that is JSON by design: its text, and the value as structuredContent, wrapped in
    `{"result": ...}` as the pinned SDK wraps what is not an object (see `_text` for why)."""
    text = json.dumps(value)
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(
        content=content, structured_content=value if isinstance(value, dict) else {"result": value}
    )


_NOT_JSON = object()


def _json_value(text: str) -> object:
    """`text` as a JSON value when it is one (by JavaScript's rules: no NaN or Infinity), else _NOT_JSON."""

    def refuse(name: str) -> object:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError:
        return _NOT_JSON


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = ctx.session.client_params
    return params.client_info.name if params is not None else "client"


class WorkspaceTools:
    def __init__(self, server: Window, source: SettingsSource) -> None:
        self.server = server
        self.source = source

    def _settings(self, name: str) -> WorkspaceToolSettings:
        settings = current(self.source)
        if not settings.enabled(name):
            raise ToolError(f"The {name} tool is turned off in the Gemini Companion settings.")
        return settings

    def _policy(self) -> PathPolicy:
        return PathPolicy(self.server.folders())

    @staticmethod
    def _path_argument(arguments: dict[str, Any], name: str = "path") -> str:
        value = arguments.get(name)
        if not isinstance(value, str) or not value:
            raise ToolError(f"The argument {name!r} must be a non-empty string.")
        return value

    # -- list_files --

    async def list_files(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        settings = self._settings(LIST_FILES)
        recursive = arguments.get("recursive", True)
        if not isinstance(recursive, bool):
            raise ToolError("The argument 'recursive' must be true or false.")
        path = arguments.get("path")
        if path is not None and not isinstance(path, str):
            raise ToolError("The argument 'path' must be a string.")
        self._check_chat(ctx)
        chat_excludes = tuple(self.server.context.policy.exclude) if from_chat(ctx.request) else ()
        options = ListOptions(
            recursive=recursive,
            limit=settings.list_limit,
            folder_excludes=settings.folder_exclude_patterns,
            file_excludes=(*settings.file_exclude_patterns, *chat_excludes),
            use_gitignore=settings.use_gitignore,
        )

        def work() -> str:
            policy = self._policy()
            start = policy.resolve(path, kind="folder") if path else None
            if start is None and not policy.folders:
                raise WorkspaceError("This window has no folder open; open a folder in Sublime Text to list files.")
            return list_files(policy, options, start).text()

        try:
            return _text(await asyncio.to_thread(work))
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None

    # -- get_diagnostics --

    async def get_diagnostics(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        self._settings(GET_DIAGNOSTICS)
        path = arguments.get("path")
        if path is not None and (not isinstance(path, str) or not path):
            raise ToolError("The argument 'path' must be a non-empty string.")
        self._check_chat(ctx)
        policy = self._policy()
        try:
            target = await asyncio.to_thread(policy.resolve, path, kind="file") if path else None
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None
        if target is not None:
            self._check_chat(ctx, target)
        try:
            found = await asyncio.wait_for(self.server.editor.diagnostics(target.path if target else None), 10)
        except Exception as exc:
            raise ToolError(f"The editor could not report its diagnostics ({exc!r}); try again.") from None
        # Only the workspace's files: a build may report files elsewhere, which this tool never shows.
        inside = {p: d for p, d in found.items() if any(is_inside(p, f) for f in policy.folders)}
        if from_chat(ctx.request):  # nor, for a chat's agent, a file the user keeps from sharing
            inside = {p: d for p, d in inside.items() if not self.server.context.policy.excludes(p)}
        return _json(diagnostics_by_uri(inside))

    # -- read_file --

    async def read_file(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        settings = self._settings(READ_FILE)
        argument = self._path_argument(arguments)
        self._check_chat(ctx)
        try:
            policy = self._policy()
            target = await asyncio.to_thread(policy.resolve, argument, kind="file")
            self._check_chat(ctx, target)
            buffer_text = await self._unsaved_text(target)
            result = await asyncio.to_thread(read_text, target, buffer_text, settings.read_limit_bytes, argument)
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None
        if result.unsaved:
            note = f"[{target.path}: the editor's unsaved text, which differs from the file on disk]\n"
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=note),
                    types.TextContent(type="text", text=result.text),
                ]
            )
        return _text(result.text)

    def _check_chat(self, ctx: ServerRequestContext[Any], target: Resolved | None = None) -> None:
        """A chat's agent sees no more than the chat shares: nothing while sharing is paused, and no
        file the setting `context_exclude` names (`.env`, keys). Other clients are not affected."""
        if not from_chat(ctx.request):
            return
        context = self.server.context
        if context.paused:
            raise ToolError(
                "Context sharing is paused in the editor, so the chat's agent can read nothing; the user "
                "resumes it with Gemini Companion: Pause/Resume Context Sharing."
            )
        if target is not None and any(context.policy.excludes(p) for p in (target.requested, target.path)):
            raise ToolError(f"{target.requested} matches the setting context_exclude: it is not shared with the chat.")

    async def _unsaved_text(self, target: Resolved) -> str | None:
        for path in dict.fromkeys((target.requested, target.path)):
            try:
                text = await asyncio.wait_for(self.server.editor.unsaved_text(path), 10)
            except Exception:
                return None
            if text is not None:
                return text
        return None

    # -- write_file --

    async def write_file(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        settings = self._settings(WRITE_FILE)
        argument = self._path_argument(arguments)
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ToolError("The argument 'content' must be a string (the complete new text of the file).")
        self._check_chat(ctx)
        policy = self._policy()
        try:
            target = await asyncio.to_thread(policy.resolve, argument, kind="file", must_exist=False)
            self._check_chat(ctx, target)  # it shows the file's current text in the review
            fmt = await asyncio.to_thread(existing_format, target, argument)
            proposal = to_newline(content, "\n")  # editors hold "\n"; the file's own endings come back on write
            encode(proposal, fmt, argument)  # refuse text the file's encoding cannot hold before asking
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None
        timeout = settings.write_timeout_seconds
        started = time.monotonic()
        # What the user will review the change against: an edit saved meanwhile must not be overwritten.
        baseline = await asyncio.to_thread(disk_text.read, target.path)
        outcome, accepted = await self.server.request_review(
            target.path, proposal, _client_name(ctx), timeout, baseline
        )
        if outcome is Outcome.REJECTED:
            if accepted is None and time.monotonic() - started >= timeout * 0.99:
                return _text(
                    f"Rejected: the user did not decide within {timeout:g} s, which counts as a rejection. "
                    f"{target.path} was not changed."
                )
            return _text(f"Rejected: the user rejected the change. {target.path} was not changed.")
        if outcome is not Outcome.ACCEPTED:
            return _text(f"Rejected: the review was closed without a decision. {target.path} was not changed.")
        text = to_newline(accepted if accepted is not None else proposal, "\n")
        edited = (
            " The user edited your proposal before accepting; read the file to see the final text."
            if (text != proposal)
            else ""
        )
        try:
            await self._refuse_if_changed(target, baseline, argument)
            if target.exists and await self._write_through_buffer(target, text, argument):
                return _text(
                    f"Accepted: the user accepted the change; {target.path} was saved from the editor.{edited}"
                )
            size = await asyncio.to_thread(self._write, policy, target, content, text, fmt, argument)
        except WorkspaceError as exc:
            kept = await self._keep_unwritten(target, text, str(exc))
            raise ToolError(
                f"The user accepted the change, but it could not be written: {exc}"
                + (
                    " The accepted text (with the user's edits) is open in the editor as an unsaved buffer; "
                    "the user can save it once the problem is fixed. Do not send the change again unasked."
                    if kept
                    else ""
                )
            ) from None
        what = "created" if not target.exists else f"written ({fmt.description})"
        return _text(f"Accepted: the user accepted the change; {target.path} was {what}, {size} bytes.{edited}")

    @staticmethod
    def _write(policy: PathPolicy, target: Resolved, sent: str, text: str, fmt: TextFormat, name: str) -> int:
        """A new file gets the line breaks the agent sent (CRLF stays CRLF); an existing file keeps
        its own (write_atomically). Worker thread: both compare the texts line by line."""
        if not target.exists:
            text = with_breaks_of(sent, text)
        return write_atomically(policy, target, text, fmt, name)

    async def _refuse_if_changed(self, target: Resolved, baseline: disk_text.DiskText, name: str) -> None:
        """The user approved a diff against `baseline`; if the file is different now (another program,
        a formatter), writing would silently throw that change away."""
        now = await asyncio.to_thread(disk_text.read, target.path)
        if disk_text.changed(baseline, now):
            raise WorkspaceError(
                f"{name} changed on disk while its review was open (saved by another program or a formatter), "
                "so the diff the user approved no longer matches it. Nothing was written and that change is kept. "
                "Read the file again and propose the change anew if it is still needed."
            )

    async def _write_through_buffer(self, target: Resolved, text: str, name: str) -> bool:
        for path in dict.fromkeys((target.requested, target.path)):
            try:
                if await asyncio.wait_for(self.server.editor.write_through_buffer(path, text), 30):
                    return True
            except Exception as exc:
                raise WorkspaceError(
                    f"the editor could not save {name} from its buffer: {exc or type(exc).__name__}"
                ) from None
        return False

    async def _keep_unwritten(self, target: Resolved, text: str, reason: str) -> bool:
        """Hand the accepted text back to the editor so the user's work is not lost; True when it took it."""
        try:
            return await asyncio.wait_for(self.server.editor.keep_unwritten(target.path, text, reason), 30)
        except Exception as exc:
            log.warning("could not keep the unwritten text of %s in the editor: %s", target.path, exc)
            return False

    # -- ask_gemini --

    async def ask_gemini(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        settings = self._settings(ASK_GEMINI)
        prompt = arguments.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolError("The argument 'prompt' must be a non-empty string.")
        folders = self.server.folders()
        if not folders or not os.path.isdir(folders[0]):
            raise ToolError(
                "This window has no folder open; open the project's folder in Sublime Text, then ask again."
            )
        cwd = folders[0]
        try:
            answer = await ask_gemini(
                settings.gemini_command, prompt, settings.ask_model, cwd, settings.ask_timeout_seconds
            )
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None
        return _text(answer)
