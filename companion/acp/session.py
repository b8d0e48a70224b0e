"""One chat with an ACP agent: the SDK's ClientSideConnection over the agent's stdio, on an asyncio
loop. The only module that imports the SDK (`acp`), so it loads on the first chat, never at start-up.

The agent's requests: `session/request_permission` for an edit opens a review (review_gate.py),
others go to the ChatView; `fs/*` go to files.py. A turn has no timeout (the user cancels it);
starting does (`start_timeout`), so an agent that never answers gets a clear message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from acp import RequestError, embedded_text_resource, resource_block, resource_link_block, text_block
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)
from acp.utils import serialize_params
from pydantic import ValidationError

from .. import __version__
from ..core.editor import Editor
from ..core.files import disk_text
from ..core.files.disk_text import DiskText
from ..core.files.paths import PathPolicy, Resolved
from ..core.files.textfile import lines
from ..core.history.turn_writes import ABSENT, TurnWrites, digest_of, written_digest
from ..core.reviews import Outcome, Reviews
from . import past_sessions, process, updates
from .agents import AgentNotFound, AgentSpec, agent_environment, resolve_command, with_private_temp
from .edits import NotRebuildable, agent_text, edit_path, is_edit, proposed_text
from .file_changes import FileChange, file_changes, named_paths
from .files import READ_LIMIT_BYTES, AgentFiles, FsRefused
from .modes import Kind, Seen, asking_mode, starting_mode
from .modes import kind as mode_kind
from .resources import Attachment, Resource, attach
from .review_gate import AcceptedEdit, ReviewGate, ReviewOpen
from .tool_call_reports import ToolCallReports
from .unchecked import UncheckedEdits
from .view import ChatView, Choice, Command, ConfigOption, Mode

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1  # what every agent we know answers (reference acp.md §1)
START_TIMEOUT_SECONDS = 60.0  # initialize and session/new: an agent's first start may install or index
EXIT_GRACE_SECONDS = 2.0  # after the agent's process ends, its last lines may still be in the pipe
_AUTH_WORDS = ("auth", "api key", "login", "log in")
_SET_MODEL = "session/set_model"
_STATUS_KEYS = ("message", "text", "status", "title")  # where an extension notification's words are
STATUS_CHARS = 300  # a status line is one line
# JSON-RPC's own codes for a request the agent could not take as sent: a protocol error. Any other
# code (-32603 internal error, -32000 and up: the agent's own) is the agent's error, in its words.
_PROTOCOL_ERRORS = (-32700, -32600, -32601, -32602)
# What an agent's answer can fail with: a closed pipe, a JSON-RPC error, an answer that is not ACP.
_AGENT_ERRORS = (ConnectionError, RequestError, ValidationError)
T = TypeVar("T")
# One file of an edit of several, ready for its review (ChatSession._prepare).
_Prepared = tuple[FileChange, Resolved, Resolved, DiskText, DiskText, str, str | None]
Opened = TypeVar("Opened", NewSessionResponse, LoadSessionResponse, ResumeSessionResponse)


class ChatFailed(Exception):
    """The chat cannot go on; the message is one line saying why and what to do."""


class ChatSession:
    """A chat with one agent in one workspace; also the SDK's Client (its callbacks below)."""

    def __init__(
        self,
        spec: AgentSpec,
        folders: Sequence[str],
        editor: Editor,
        view: ChatView,
        env: Mapping[str, str] | None = None,
        start_timeout: float = START_TIMEOUT_SECONDS,
        reviews: Reviews | None = None,
        read_limit_bytes: int | None = None,
        subreaper: bool = False,
    ) -> None:
        self.spec = spec
        self.folders = [os.path.abspath(f) for f in folders]
        self.view = view
        self.env = agent_environment({**(os.environ if env is None else env), **spec.env})
        self.start_timeout = start_timeout
        self.gate = ReviewGate(editor, spec.name, reviews)  # the window's Reviews, shared with other chats
        limit = read_limit_bytes or READ_LIMIT_BYTES  # the `chat_read_file_limit_kb` setting
        self.files = AgentFiles(PathPolicy(self.folders), editor, limit)
        self.subreaper = subreaper  # True only in a process of our own (process.start)
        self.agent: process.AgentProcess | None = None
        self.session_id = ""
        self.can_load = False  # the agent's `loadSession` capability (after initialize)
        self.offered = past_sessions.Offered()  # what it offers for past sessions (after initialize)
        self.embeds_resources = False  # its `promptCapabilities.embeddedContext`
        self.always_allowed = False  # the user allowed this agent's edits for the session
        self.unchecked = UncheckedEdits()  # edits that did not go through the review (`chat` reports them)
        self.writes = TurnWrites()  # what the agent wrote through us this turn, for the change set
        # The bytes each accepted edit must leave on disk when the agent writes the file itself, by
        # (tool call id, real path); None when the accepted text cannot be stored in the file's encoding.
        self._accepted_bytes: dict[tuple[str, str], bytes | None] = {}
        # The agent's own whole text of an accepted edit (UTF-8, as it writes it): a file found holding
        # exactly these bytes after its write gets the accepted bytes (_land_accepted).
        self._agent_bytes: dict[tuple[str, str], bytes] = {}
        self.mode: str | None = None
        self.seen = Seen()  # what the agent did with edits in each mode: names are only hints (modes.py)
        self._conn: ClientSideConnection | None = None
        self._notes: list[str] = []  # told to the agent with the next prompt
        self._calls = updates.ToolCalls()  # by id: updates carry only what changed; content capped
        self._reports = ToolCallReports()  # all the agent said about each running call, to decide on
        self.modes: list[Mode] = []
        self.models: list[Mode] = []
        self.model: str | None = None
        self.config: list[ConfigOption] = []
        self.commands: list[Command] = []
        self.title: str | None = None
        self._asked: set[str] = set()  # tool call ids that went through a permission request
        self._asking: set[asyncio.Task[Any]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self._temp = ""  # the agent's own temporary folder (with_private_temp), removed with the chat
        self._status_shown = False  # the view shows a status from the agent's notifications
        # The user's last answer this turn rejected an edit: a turn then ending `cancelled` is the
        # agent stopping after the rejection (some agents' reject ends the turn), not a failure.
        self.rejected_last = False

    # -- lifecycle --

    async def start(self) -> None:
        """Start the agent, initialize, open a new session in a reviewing mode; ChatFailed on failure."""
        await self._launch()
        assert self._conn is not None
        meta = dict(self.spec.session_meta) or None
        request = NewSessionRequest(cwd=self.folders[0], mcp_servers=[], field_meta=meta)
        session, raw = await self._opening("session/new", request, NewSessionResponse)
        await self._open(session.session_id, session, raw)

    async def load(self, session_id: str, launched: bool = False) -> None:
        """Start the agent and continue the saved session `session_id` (session/load): the agent
        replays its history to the view, then the chat goes on in a reviewing mode. ChatFailed when
        the agent cannot continue sessions (no `loadSession` capability) or does not know this one."""
        if not launched:
            await self._launch()
        if not self.can_load:
            raise ChatFailed(
                f"{self.spec.name} cannot continue a saved session (it does not offer session/load); "
                "start a new chat instead."
            )
        request = LoadSessionRequest(
            cwd=self.folders[0], session_id=session_id, mcp_servers=[], field_meta=dict(self.spec.session_meta) or None
        )
        session, raw = await self._opening("session/load", request, LoadSessionResponse)
        await self._open(session_id, session, raw)

    async def connect(self) -> None:
        """Start the agent and initialize, opening no session: to list or delete past sessions."""
        await self._launch()

    async def reopen(self, session_id: str) -> None:
        """Start the agent and open the past session `session_id` again: `session/resume` where the
        agent offers it (the agent keeps the history; it is not replayed), else `session/load`."""
        await self._launch()
        if self.offered.reopen_with != "session/resume":
            await self.load(session_id, launched=True)
            return
        request = ResumeSessionRequest(
            cwd=self.folders[0], session_id=session_id, mcp_servers=[], field_meta=dict(self.spec.session_meta) or None
        )
        session, raw = await self._opening("session/resume", request, ResumeSessionResponse)
        await self._open(session_id, session, raw)
        self.view.notice(
            f"Resumed an earlier session of {self.spec.name}: it remembers the conversation, which it does not "
            "show again here.",
            "info",
        )

    async def sessions(self, limit: int = past_sessions.MAX_SESSIONS) -> past_sessions.Listing:
        """This folder's past sessions, every page of `session/list` (bounded), newest first."""
        if not self.offered.list:
            raise ChatFailed(f"{self.spec.name} does not list its sessions (it does not offer session/list).")
        conn = self._conn
        assert conn is not None

        async def page(cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
            answer = await self._asking_agent("session/list", conn.list_sessions(cwd=self.folders[0], cursor=cursor))
            data = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
            return data.get("sessions", []), data.get("nextCursor")

        return await past_sessions.list_all(page, self.folders[0], limit)

    async def close_session(self, session_id: str) -> None:
        """`session/close`: the agent unloads the session (it stays listed, to resume later)."""
        if self.offered.close and self._conn is not None:
            await self._asking_agent("session/close", self._conn.close_session(session_id))

    async def delete_session(self, session_id: str) -> None:
        """`session/delete`: the agent forgets the session. SDK 0.12.1 has no call for it (acp/meta.py
        names the method; the client connection lacks it): its own connection sends the request."""
        if not self.offered.delete:
            raise ChatFailed(f"{self.spec.name} cannot delete its sessions (it does not offer session/delete).")
        assert self._conn is not None
        params = {"sessionId": session_id}
        await self._asking_agent("session/delete", self._conn._conn.send_request("session/delete", params))

    async def _opening(self, method: str, request: Any, answer: type[Opened]) -> tuple[Opened, dict[str, Any]]:
        """session/new or session/load through the SDK's connection, keeping the raw answer too:
        SDK 0.12.1's response models have no `models` (acp/schema.py NewSessionResponse), which
        Gemini CLI 0.61.0 sends for session/set_model (reference acp.md §2), so pydantic drops it."""
        assert self._conn is not None
        raw = await self._starting(method, self._conn._conn.send_request(method, serialize_params(request)))
        raw = raw if isinstance(raw, dict) else {}
        try:
            return answer.model_validate(raw), raw
        except ValidationError as exc:
            raise ChatFailed(await self._failure(exc, method)) from None

    async def _launch(self) -> None:
        """The agent's process, the connection and `initialize`."""
        try:
            argv = resolve_command(self.spec, self.env)
        except AgentNotFound as exc:
            raise ChatFailed(str(exc)) from None
        self._temp = await asyncio.to_thread(tempfile.mkdtemp, prefix="gemini-companion-agent-")
        try:
            self.agent = await process.start(
                argv, self.folders[0], with_private_temp(self.env, self._temp), subreaper=self.subreaper
            )
        except OSError as exc:
            raise ChatFailed(
                f"{self.spec.name} could not be started ({argv[0]}: {exc.strerror or exc}); "
                "check the command, or give the full path of its program."
            ) from None
        self._conn = ClientSideConnection(cast(Client, self), process.AgentStdio(self.agent))
        self._watcher = asyncio.ensure_future(self._watch_exit())
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
        )
        info = Implementation(name="gemini-companion", title="Gemini Companion", version=__version__)
        answer = await self._starting("initialize", self._conn.initialize(PROTOCOL_VERSION, capabilities, info))
        if answer.protocol_version != PROTOCOL_VERSION:  # the spec: the client disconnects
            raise ChatFailed(
                f"{self.spec.name} speaks ACP version {answer.protocol_version}, and this client speaks "
                f"version {PROTOCOL_VERSION}; use a version of the agent that speaks ACP {PROTOCOL_VERSION}."
            )
        agent = answer.agent_capabilities
        self.can_load = bool(agent and agent.load_session)
        self.offered = past_sessions.Offered.of(agent.model_dump(mode="json", by_alias=True) if agent else {})
        self.embeds_resources = bool(agent and agent.prompt_capabilities and agent.prompt_capabilities.embedded_context)

    async def _open(self, session_id: str, session: Any, raw: dict[str, Any]) -> None:
        self.session_id = session_id
        self._opened(session, raw)
        await self._to_review_mode(session.modes)

    def _opened(self, session: Any, raw: dict[str, Any]) -> None:
        """What session/new (or session/load) tells: modes, models, config options; to the view."""
        data = session.model_dump(mode="json", by_alias=True, exclude_none=True)
        modes = data.get("modes") or {}
        self.modes = [updates.mode(m) for m in modes.get("availableModes", [])]
        self.mode = modes.get("currentModeId")
        found = raw.get("models")
        models: dict[str, Any] = found if isinstance(found, dict) else {}
        self.models = [updates.model(m) for m in models.get("availableModels", [])]
        self.model = models.get("currentModelId")
        self.config = [updates.config_option(o) for o in data.get("configOptions") or []]
        if self.mode is not None:
            self.view.mode(self.mode, self.modes)
        if self.model is not None:
            self.view.models(self.model, self.models)
        if self.config:
            self.view.config_options(self.config)

    async def _to_review_mode(self, offered: Any) -> None:
        """The user's `mode`, else the preset's reviewing mode, else the mode the agent advertises
        that asks before each edit (modes.py). An agent that starts in a mode applying edits without
        review, or writing through fs/* without asking (writes we refuse), is moved to it."""
        wanted = self.spec.mode or self.spec.review_mode
        if offered is None:
            if self.spec.mode:
                raise ChatFailed(
                    f"{self.spec.name} offers no modes, so its mode cannot be set to {self.spec.mode!r}; "
                    'remove "mode" from its entry in the setting "agents" (or --mode).'
                )
            return
        try:
            choice = starting_mode(self.spec.name, self.mode, self.modes, wanted)
        except ValueError as exc:
            raise ChatFailed(f"{exc}.") from None
        if choice.mode_id is not None:
            assert self._conn is not None
            request = self._conn.set_session_mode(self.session_id, choice.mode_id)
            await self._starting("session/set_mode", request)
            previous, self.mode = self.mode, choice.mode_id
            self.view.mode(choice.mode_id, self.modes)
            if previous and not self.spec.review_mode:  # the presets' switch is their documented default
                moved = f"the chat runs in {choice.mode_id!r}: {choice.why}"
                self.view.notice(f"{self.spec.name} started in mode {previous!r}; {moved}.", "info")
        self._warn_if_unreviewed_mode()

    def _warn_if_unreviewed_mode(self) -> None:
        current = next((m for m in self.modes if m.id == self.mode), None)
        if current is not None and mode_kind(current, self.seen) is Kind.WRITES:
            self.view.notice(
                f"{self.spec.name} runs in mode {current.id!r}, which applies edits without review (you set it).",
                "warning",
            )

    def _unreviewed(self, text: str) -> None:
        """A warning about an edit that went through no review: with a one-click switch to the
        agent's asking mode when it runs in another one."""
        asking = asking_mode(self.modes, self.seen)
        if asking is not None and asking.id != self.mode:
            self.view.offer_mode(text, asking)
        elif asking is None and self.modes and asking_mode(self.modes) is None:  # else: said to ask, did not
            hint = 'to review its edits, set its "mode" in the setting "agents" (or --mode) to one that asks'
            self.view.notice(f"{text} None of {self.spec.name}'s modes is known to ask; {hint}.", "warning")
        else:
            self.view.notice(text, "warning")

    async def _starting(self, what: str, request: Any) -> Any:
        try:
            return await asyncio.wait_for(request, self.start_timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise ChatFailed(
                f"{self.spec.name} did not answer {what} within {self.start_timeout:g} s{self._output_note()}; "
                "check that the command starts an ACP agent."
            ) from None
        except _AGENT_ERRORS as exc:
            raise ChatFailed(await self._failure(exc, what)) from None

    async def close(self) -> None:
        """End the chat: close open reviews, the connection, and the agent with all it started."""
        for task in list(self._asking):
            task.cancel()
        await self.gate.close_all()
        if self._conn is not None:
            try:
                await asyncio.wait_for(self._conn.close(), 5)
            except Exception as exc:
                log.debug("closing the connection: %r", exc)
        if self.agent is not None:
            await self.agent.stop()
        if self._watcher is not None:
            self._watcher.cancel()
        if self._temp:
            await asyncio.to_thread(shutil.rmtree, self._temp, True)
            self._temp = ""

    async def _watch_exit(self) -> None:
        """An agent whose process ended while a child still holds its stdout would leave a request
        waiting forever: once the process is gone, its last lines get a moment, then the chat ends."""
        assert self.agent is not None and self._conn is not None
        await self.agent.exited.wait()
        try:
            await asyncio.wait_for(self.agent.stdout_closed.wait(), EXIT_GRACE_SECONDS)
        except (TimeoutError, asyncio.TimeoutError):
            await self._conn.close()

    # -- prompts --

    async def prompt(self, text: str, resources: Sequence[Resource] = ()) -> str:
        """Send one prompt with workspace files attached (embedded when the agent takes embedded
        context, else as links) and wait for the turn to end; returns the stop reason. A file
        outside the workspace raises ResourceRefused and nothing is sent."""
        if self._conn is None:
            raise ChatFailed("the chat has not started")
        attached = [await attach(self.files, r, self.embeds_resources) for r in resources]
        blocks: list[Any] = [text_block(note) for note in self._notes] + [text_block(text)]
        blocks += [block for a in attached for block in _resource_blocks(a)]
        self._notes = []
        self.rejected_last = False
        try:
            with self.agent.turn() if self.agent else contextlib.nullcontext():  # its tree is tracked meanwhile
                response = await self._conn.prompt(self.session_id, blocks)
        except _AGENT_ERRORS as exc:
            raise ChatFailed(await self._failure(exc, "the prompt")) from None
        finally:
            self._clear_status()
            await self._check_reviewed()
        stop_reason = str(response.stop_reason)
        if self.stopped_after_rejection(stop_reason):
            self.view.notice(f"{self.spec.name} stopped its turn after you rejected its edit.", "info")
        self.view.turn_ended(stop_reason)
        return stop_reason

    def stopped_after_rejection(self, stop_reason: str) -> bool:
        """The turn ended `cancelled` right after the user rejected an edit: the agent's answer to
        the rejection (its only reject option ends the turn), not an error."""
        return stop_reason == "cancelled" and self.rejected_last

    async def _check_reviewed(self) -> None:
        """The turn's end: a file counts as reviewed only if its bytes on disk are the bytes the user
        accepted (core/history/turn_writes.py); each other one is named, and no longer reviewed."""
        await self._written_unreported()
        for path in await asyncio.to_thread(self.writes.changed_after_review):
            self.unchecked.changed.add(path)
            self.view.notice(
                f"{path} changed after your review: the file on disk is not what you accepted "
                f"(after {self.spec.name}'s write, it or another program wrote other bytes); check it.",
                "warning",
            )

    async def _written_unreported(self) -> None:
        """An accepted edit neither written through us nor reported done whose file changed since the
        user decided: the agent wrote it itself (or something else did), so it must hold the accepted
        bytes. One whose file did not change still waits for its write."""
        waiting = {(e.tool_call_id, e.path) for e in self.gate.accepted.values()}
        self._accepted_bytes = {k: v for k, v in self._accepted_bytes.items() if k in waiting}
        self._agent_bytes = {k: v for k, v in self._agent_bytes.items() if k in waiting}
        for edit in list(self.gate.accepted.values()):
            now = await asyncio.to_thread(disk_text.read, edit.path)
            if edit.disk is None or not disk_text.changed(edit.disk, now):
                continue
            self.gate.take(edit.path)
            expected = self._accepted_bytes.pop((edit.tool_call_id, edit.path), None)
            if not await self._land_accepted(edit, expected):
                self.writes.record(edit.path, True, *_expected(expected, edit.deleted))

    def _clear_status(self) -> None:
        """A status says what the agent does during a turn; once the turn is over it is stale."""
        if self._status_shown:
            self._status_shown = False
            self.view.status(None)

    # -- modes, models, config options --

    async def set_mode(self, mode_id: str) -> None:
        """session/set_mode; the view is told the new mode. ChatFailed for a mode the agent lacks."""
        if self.modes and mode_id not in [m.id for m in self.modes]:
            raise ChatFailed(f"{self.spec.name} has no mode {mode_id!r}; pick one of {[m.id for m in self.modes]}.")
        await self._asking_agent("session/set_mode", self._connection().set_session_mode(self.session_id, mode_id))
        self.mode = mode_id
        self.view.mode(mode_id, self.modes)

    async def set_model(self, model_id: str) -> None:
        """Gemini lists `models` and takes session/set_model; Claude's model is the config option
        `model` (reference acp.md §2, §3)."""
        if self.models:
            if model_id not in [m.id for m in self.models]:
                raise ChatFailed(
                    f"{self.spec.name} has no model {model_id!r}; pick one of {[m.id for m in self.models]}."
                )
            # SDK 0.12.1 has no call for it (acp/client/connection.py; AGENT_METHODS in acp/meta.py
            # lacks it): its own connection sends the request Gemini CLI 0.61.0 routes to
            # unstable_setSessionModel (bundle/gemini-*.js, `session_set_model`).
            params = {"sessionId": self.session_id, "modelId": model_id}
            await self._asking_agent("session/set_model", self._connection()._conn.send_request(_SET_MODEL, params))
            self.model = model_id
            self.view.models(model_id, self.models)
        elif any(o.id == "model" for o in self.config):
            await self.set_config_option("model", model_id)
        else:
            raise ChatFailed(f"{self.spec.name} offers no choice of model.")

    async def set_config_option(self, config_id: str, value: str | bool) -> None:
        """session/set_config_option; the agent answers with every option, which the view gets."""
        option = next((o for o in self.config if o.id == config_id), None)
        if option is None:
            known = [o.id for o in self.config]
            raise ChatFailed(f"{self.spec.name} has no setting {config_id!r}; pick one of {known}.")
        values = [c.value for c in option.choices]
        if option.kind == "select" and (not isinstance(value, str) or (values and value not in values)):
            raise ChatFailed(f"{value!r} is not a value of {option.name}; pick one of {values}.")
        if option.kind == "boolean" and not isinstance(value, bool):
            raise ChatFailed(f"{option.name} is on or off (true or false), not {value!r}.")
        request = self._connection().set_config_option(config_id=config_id, session_id=self.session_id, value=value)
        answer = await self._asking_agent("session/set_config_option", request)
        data = answer.model_dump(mode="json", by_alias=True, exclude_none=True) if answer is not None else {}
        if "configOptions" in data:
            self._config_changed(data)
        mode = next((o for o in self.config if o.id == "mode" and isinstance(o.current, str)), None)
        if config_id == "mode" and mode is not None:
            self.mode = str(mode.current)

    def _connection(self) -> ClientSideConnection:
        if self._conn is None or not self.session_id:
            raise ChatFailed("the chat has not started")
        return self._conn

    async def _asking_agent(self, what: str, request: Awaitable[T]) -> T:
        try:
            return await request
        except _AGENT_ERRORS as exc:
            raise ChatFailed(await self._failure(exc, what)) from None

    async def cancel(self) -> None:
        """session/cancel; permission requests still open are answered `cancelled` (the protocol
        requires it) and their reviews closed."""
        self.rejected_last = False  # the turn ends `cancelled` because the user cancelled it
        for task in list(self._asking):
            task.cancel()
        if self._conn is not None and self.session_id:
            try:
                await self._conn.cancel(self.session_id)
            except ConnectionError:
                pass

    # -- why it failed, in one line --

    async def _failure(self, exc: BaseException, what: str) -> str:
        """One line (the agent's words in it on one line too) saying why and what to do next."""
        if isinstance(exc, RequestError):
            return self._agent_error(exc, what)
        if isinstance(exc, ValidationError):
            return (
                f"{self.spec.name} answered {what} with something that is not ACP ({_invalid(exc)}); "
                "update the agent, or report it to its authors."
            )
        agent = self.agent
        assert agent is not None
        await agent.wait_exit(EXIT_GRACE_SECONDS)
        if agent.framing_error:
            why = f"stopped: {agent.framing_error}"
        elif agent.process.returncode is not None:
            why = f"exited (exit code {agent.process.returncode}) during {what}"
        else:
            why = f"closed its output during {what}"
        return (
            f"{self.spec.name} {why}{self._output_note()}. Start a new chat; if it happens again, "
            "run the agent in a terminal to see why."
        )

    def _agent_error(self, exc: RequestError, what: str) -> str:
        message = _one_line(str(exc.args[0] if exc.args else exc)) or "no message"
        details = exc.data.get("details") if isinstance(exc.data, dict) else None
        if isinstance(details, str) and details:  # Gemini CLI says why in data.details
            message = f"{message}: {_one_line(details)}"
        if any(word in message.lower() for word in _AUTH_WORDS):
            return f"{self.spec.name} needs a login ({message}): {self.spec.login_hint}."
        if exc.code in _PROTOCOL_ERRORS:
            return f"{self.spec.name} answered {what} with an error ({exc.code}: {message}): a protocol error."
        return (
            f"{self.spec.name} reported an error during {what}: {message} (error {exc.code}); "
            "try again, and if it keeps failing, see the agent's own logs."
        )

    def _output_note(self) -> str:
        agent = self.agent
        if agent is None:
            return ""
        parts = []
        if agent.skipped_lines:
            parts.append(f"it printed {agent.skipped_lines} non-ACP line(s) on stdout, first: {agent.first_skipped!r}")
        tail = agent.stderr_text().splitlines()[-3:]
        if tail:
            parts.append("its stderr ends: " + " / ".join(_one_line(line) for line in tail)[-500:])
        return f" ({'; '.join(parts)})" if parts else ""

    # -- the SDK's Client: requests and notifications from the agent --

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        call = self._reports.add(tool_call.model_dump(mode="json", by_alias=True, exclude_none=True))
        self._asked.add(call["toolCallId"])
        choices = [Choice(o.option_id, o.name, str(o.kind)) for o in options]
        task = asyncio.ensure_future(self._decide(call, choices))
        self._asking.add(task)
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._asking.discard(task)
        option_id = None if task.cancelled() else task.result()
        if option_id is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))

    async def _decide(self, call: dict[str, Any], choices: list[Choice]) -> str | None:
        known = self._calls.get(call["toolCallId"])
        kind = call.get("kind") or (known.kind if known else None)
        if not is_edit(call, kind):
            return await self.view.choose(str(call.get("title") or kind or "a tool"), choices)
        self.seen.asked(self.mode)  # this mode asks before an edit, whatever its name
        reject = _pick(choices, "reject_once", "reject_always")
        try:
            changes = file_changes(call, kind)
        except NotRebuildable as exc:
            what = edit_path(call) or "several files"
            self.view.notice(
                f"Rejected {self.spec.name}'s edit of {what}: {exc}; nothing of it was reviewed.", "warning"
            )
            self.unchecked.refused.add(what)
            return reject
        path = edit_path(call)
        named = [p for c in changes for p in (c.path, c.target)] if changes else [path] if path else []
        unchanged = await self._unchanged_locations(call, named)
        if unchanged:  # reviewing the others would let one review stand for files it does not show
            what = ", ".join(unchanged)
            message = f"it names {what} but carries no change for it; nothing of it was reviewed"
            self.view.notice(f"Rejected {self.spec.name}'s edit of {path or what}: {message}.", "warning")
            self.unchecked.refused.add(what)
            return reject
        if changes:  # several files, a rename or a patch: each file reviewed, all or nothing
            return await self._decide_files(call, changes, choices, reject)
        if path is None:
            message = f"Rejected an edit by {self.spec.name}: it names no file, so it cannot be reviewed."
            self.view.notice(message, "warning")
            self.unchecked.refused.add("a file it did not name")
            return reject
        always = next((c for c in choices if c.kind == "allow_always"), None)
        try:
            target = await self.files.resolve(path)
            disk = await self.files.disk(target)  # what a later write must still find there
            before = await self.files.current(target, disk)
            if before.not_shown is not None:
                raise NotRebuildable(f"the file's current text cannot be shown: {before.not_shown}")
            # Off the loop: rebuilding the text keeps each line's break, a whole-file line diff.
            proposal = await asyncio.to_thread(proposed_text, call, before.text, None if before is disk else disk.text)
            decision = await self.gate.review(target.path, before, proposal, always.name if always else None)
        except (FsRefused, NotRebuildable, ReviewOpen) as exc:
            self.view.notice(f"Rejected {self.spec.name}'s edit of {path}: {exc}.", "warning")
            self.unchecked.refused.add(path)
            return reject
        if decision.outcome is not Outcome.ACCEPTED:
            if decision.outcome is Outcome.REJECTED:
                self._mark_decided(call, "rejected")
            return reject
        allow = always.option_id if decision.always and always else _pick(choices, "allow_once")
        if allow is None:
            message = f"{self.spec.name} offers no one-time allow for {path}; the edit was not allowed."
            self.view.notice(message, "warning")
            return None
        final = decision.content or proposal
        edit = AcceptedEdit(call["toolCallId"], target.path, proposal, final, disk)
        self._accepted_bytes[(edit.tool_call_id, edit.path)] = await self.files.accepted_bytes(target, final)
        sent = agent_text(call, before.text, None if before is disk else disk.text)
        if sent is not None:
            self._agent_bytes[(edit.tool_call_id, edit.path)] = sent.encode("utf-8")
        self.gate.on_accepted(edit)
        self._mark_decided(call, "accepted with your edits" if edit.edited else "accepted")
        if decision.always and always:
            self._allowed_always(always)
        return allow

    async def _unchanged_locations(self, call: dict[str, Any], named: list[str]) -> list[str]:
        """The files the call names anywhere (`named_paths`: locations, rawInput, diff blocks) that are
        none of `named` (the files it changes), compared as real paths; one outside the workspace is
        one of them."""
        found = named_paths(call)
        if all(p in named for p in found):
            return []
        real = set()
        for path in named:
            with contextlib.suppress(FsRefused):
                real.add((await self.files.resolve(path)).path)
        unchanged = []
        for path in found:
            try:
                if (await self.files.resolve(path)).path not in real:
                    unchanged.append(path)
            except FsRefused:
                unchanged.append(path)
        return unchanged

    async def _decide_files(
        self, call: dict[str, Any], changes: list[FileChange], choices: list[Choice], reject: str | None
    ) -> str | None:
        """A call changing several files (or renaming one): every file's proposal is built first
        (one that cannot be refuses the whole call: no subset is ever reviewed), then each is
        reviewed in turn; the call is allowed only when the user accepted every one of them."""
        names = ", ".join(c.describe() for c in changes)
        what = f"edit of {len(changes)} files ({names})" if len(changes) > 1 else f"edit ({names})"
        always = next((c for c in choices if c.kind == "allow_always"), None)
        prepared = []
        try:
            seen: dict[str, str] = {}  # real path -> as the call named it
            for change in changes:
                prepared.append(await self._prepare(change, seen))
        except (FsRefused, NotRebuildable) as exc:
            self.view.notice(f"Rejected {self.spec.name}'s {what}: {exc}; nothing of it was reviewed.", "warning")
            self.unchecked.refused.add(names)
            return reject
        decisions = []
        for n, (change, source, target, before, _, proposal, _) in enumerate(prepared, 1):
            part = (n, len(prepared)) if len(prepared) > 1 else None
            renamed_from = source.path if change.new_path else None
            try:
                offer = always.name if always else None
                decision = await self.gate.review(
                    target.path,
                    before,
                    proposal,
                    offer,
                    part=part,
                    renamed_from=renamed_from,
                    replaces=target.exists and renamed_from is not None,
                    delete=change.delete,
                )
            except ReviewOpen as exc:
                self.view.notice(f"Rejected {self.spec.name}'s {what}: {exc}.", "warning")
                self.unchecked.refused.add(names)
                return reject
            if decision.outcome is not Outcome.ACCEPTED:
                self._partly_rejected(call, changes, n, decision.outcome)
                return reject
            decisions.append(decision)
        allow = always.option_id if always and all(d.always for d in decisions) else _pick(choices, "allow_once")
        if allow is None:
            self.view.notice(
                f"{self.spec.name} offers no one-time allow for its {what}; it was not allowed.", "warning"
            )
            return None
        edited = False
        for (change, source, target, _, disk, proposal, sent), decision in zip(prepared, decisions, strict=False):
            final = decision.content or proposal
            deleted = change.delete and not final  # accepted as a deletion: the file must be gone
            renamed_from = source.path if change.new_path else None
            edit = AcceptedEdit(call["toolCallId"], target.path, proposal, final, disk, renamed_from, deleted)
            # A rename moves the source's bytes: encoded as the source is stored, not as the file it replaces.
            stored_as = source if change.new_path and source.exists else target
            self._accepted_bytes[(edit.tool_call_id, edit.path)] = await self.files.accepted_bytes(stored_as, final)
            if sent is not None:
                self._agent_bytes[(edit.tool_call_id, edit.path)] = sent.encode("utf-8")
            self.gate.on_accepted(edit)
            edited = edited or edit.edited
        self._mark_decided(call, "accepted with your edits" if edited else "accepted")
        if always and allow == always.option_id:
            self._allowed_always(always)
        return allow

    async def _prepare(self, change: FileChange, seen: dict[str, str]) -> _Prepared:
        """One file of an edit of several, ready for its review: (change, its file (a rename's
        source), the file the review shows, its text now, its disk, the proposal, the agent's own
        text). A rename onto a file that exists is reviewed as replacing that file: its current
        text against the new one (never "no changes" while its content is lost). NotRebuildable
        for a file the call changes twice (two half-reviews would each show what never lands)."""
        source = await self.files.resolve(change.path)
        target = await self.files.resolve(change.target) if change.new_path else source
        mine = {source.path: change.path, target.path: change.target}
        for real, named in mine.items():
            if real in seen:
                raise NotRebuildable(
                    f"it changes {named} twice (also as {seen[real]}), so no one review could show what lands; "
                    "ask it for one change per file"
                )
        seen.update(mine)
        disk = await self.files.disk(source)
        before = await self.files.current(source, disk)
        if before.not_shown is not None:
            raise NotRebuildable(f"the current text of {change.path} cannot be shown: {before.not_shown}")
        try:
            proposal = change.proposal(before.text, None if before is disk else disk.text)
        except NotRebuildable as exc:
            raise NotRebuildable(f"{change.path}: {exc}") from None
        sent = change.agent_text(before.text, None if before is disk else disk.text)  # as the agent writes it
        if change.new_path is not None and target.exists:  # what the user loses is the target's text
            disk = await self.files.disk(target)
            before = await self.files.current(target, disk)
            if before.not_shown is not None:
                raise NotRebuildable(
                    f"the text of {change.target}, which it replaces, cannot be shown: {before.not_shown}"
                )
        return change, source, target, before, disk, proposal, sent

    def _partly_rejected(self, call: dict[str, Any], changes: list[FileChange], n: int, outcome: Outcome) -> None:
        """One line: which file of the edit the user rejected (or closed), and that nothing of it
        was allowed, the files accepted before it included."""
        said = "rejected" if outcome is Outcome.REJECTED else "closed the review of"
        line = f"You {said} {changes[n - 1].describe()}"
        if len(changes) > 1:
            accepted = [c.describe() for c in changes[: n - 1]]
            unseen = [c.describe() for c in changes[n:]]
            line += f", so {self.spec.name}'s whole edit of {len(changes)} files was rejected"
            others = [f"accepted: {', '.join(accepted)}"] if accepted else []
            others += [f"not reviewed: {', '.join(unseen)}"] if unseen else []
            line += f" ({'; '.join(others)})" if others else ""
        self.view.notice(line + ".", "info")
        if outcome is Outcome.REJECTED:
            self._mark_decided(call, "rejected")

    def _mark_decided(self, call: dict[str, Any], decision: str) -> None:
        """The call's card says what the user decided, whatever the agent reports about it later."""
        call_id = call["toolCallId"]
        self.rejected_last = decision == "rejected"
        known = self._calls.get(call_id) or updates.merge_tool_call(None, call, True)
        self._calls[call_id] = replace(known, decision=decision, reviewed=True)
        self.view.tool_call(self._calls[call_id])

    def _allowed_always(self, option: Choice) -> None:
        """After "allow for this session" the agent asks no more: say so, since its later edits
        reach the files without a review."""
        self.always_allowed = True
        self.view.notice(
            f"Later edits by {self.spec.name} in this session are applied without review (you chose "
            f"“{option.name}”); start a new chat to review every edit again.",
            "warning",
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        what = data.get("sessionUpdate")
        if what in ("tool_call", "tool_call_update"):
            await self._tool_call(data)
        elif what is not None and what in _ROUTES:
            _ROUTES[what](self, data)
        else:
            log.debug("session/update %r ignored", what)

    def _chunk(self, data: dict[str, Any]) -> None:
        content = data.get("content") or {}
        text = content.get("text") if content.get("type") == "text" else None
        if text is None:
            return
        what = data["sessionUpdate"]
        meta = (data.get("_meta") or {}).get("claudeCode") or {}
        if meta.get("kind") == "informational":  # reference acp.md §3: not the model's text
            self.view.notice(text, "agent")
        elif what == "agent_message_chunk":
            self.view.agent_text(text)
        elif what == "user_message_chunk":
            if not past_sessions.hidden(text):  # Gemini's own context turn, replayed: never typed
                self.view.user_text(text)
        else:
            self.view.thought(text)

    def _plan(self, data: dict[str, Any]) -> None:
        self.view.plan([updates.plan_entry(e) for e in data.get("entries", [])])

    def _usage(self, data: dict[str, Any]) -> None:
        self.view.usage(updates.usage(data))

    def _commands(self, data: dict[str, Any]) -> None:
        self.commands = [updates.command(c) for c in data.get("availableCommands", [])]
        self.view.available_commands(self.commands)

    def _mode_changed(self, data: dict[str, Any]) -> None:
        self.mode = data.get("currentModeId", self.mode)
        self.view.mode(self.mode or "", self.modes)

    def _config_changed(self, data: dict[str, Any]) -> None:
        self.config = [updates.config_option(o) for o in data.get("configOptions", [])]
        self.view.config_options(self.config)

    def _info_changed(self, data: dict[str, Any]) -> None:
        if "title" in data:  # an update of updatedAt alone keeps the title
            self.title = data["title"]
            self.view.session_info(self.title)

    async def _tool_call(self, data: dict[str, Any]) -> None:
        call_id = data["toolCallId"]
        said = self._reports.add(data)
        call = updates.merge_tool_call(self._calls.get(call_id), data, call_id in self._asked)
        self._calls[call_id] = call
        self.view.tool_call(call)
        if data.get("status") == "failed":
            self.gate.take_all_by_tool_call(call_id)
        if data.get("status") != "completed":
            return
        taken = self.gate.take_all_by_tool_call(call_id)  # one per file of an edit of several
        for accepted in taken:
            expected = self._accepted_bytes.pop((accepted.tool_call_id, accepted.path), None)
            if accepted.edited:  # the agent wrote its own proposal (Claude): now the user's version
                await self._write_users_version(accepted, expected)
            elif not await self._land_accepted(accepted, expected):
                # the agent wrote the file itself: the turn's end must find the accepted bytes there
                self.writes.record(accepted.path, True, *_expected(expected, accepted.deleted))
            if accepted.renamed_from is not None:  # the rename's source is gone, as the user accepted
                self.writes.record(accepted.renamed_from, reviewed=True)
        if taken:
            return
        if call.decision == "rejected":
            path = edit_path(said) or "the file"
            self.view.notice(
                f"{self.spec.name} reports its edit of {path} as done, but you rejected it: nothing was written "
                "through the editor; if the file changed anyway, the agent wrote it itself.",
                "warning",
            )
        elif call_id not in self._asked and is_edit(said, call.kind):
            path = edit_path(said) or (call.diffs[0].path if call.diffs else "a file")
            self.seen.wrote(self.mode)  # this mode applies edits without asking, whatever its name
            self._unreviewed(f"{self.spec.name} changed {path} without asking: applied without review.")
            self.unchecked.applied.add(path)
            with contextlib.suppress(FsRefused):  # outside the workspace: no change set holds it
                await self._wrote((await self.files.resolve(path)).path, reviewed=False)

    async def _wrote(self, path: str, reviewed: bool) -> None:
        """Record a write for the change set, with the file's digest now: what the turn's end must
        still find there for the write to count as the agent's (core/history/turn_writes.py)."""
        self.writes.record(path, reviewed, await asyncio.to_thread(written_digest, path))

    async def _land_accepted(self, edit: AcceptedEdit, expected: bytes | None) -> bool:
        """After the agent's own write: a file holding exactly the agent's own text (its bytes, as it
        sent them) where the user accepted other bytes (the review keeps the file's line endings;
        Codex writes its lines with LF) gets the accepted bytes, through the write that refuses a
        file changed since it was read. A file holding anything else is never overwritten: the
        turn's end names it. True when the accepted bytes were written."""
        raw = self._agent_bytes.pop((edit.tool_call_id, edit.path), None)
        if raw is None or expected is None or raw == expected:
            return False
        now = await asyncio.to_thread(disk_text.read, edit.path)
        if now.stamp != disk_text.Stamp(len(raw), digest_of(raw)):
            return False
        try:
            target = await self.files.resolve(edit.path)
            data = await self.files.write_accepted(target, replace(edit, disk=now), data=expected)
        except FsRefused as exc:
            self.view.notice(f"The version of {edit.path} you accepted could not be written: {exc}", "warning")
            return False
        self._wrote_bytes(edit.path, True, data)
        return True

    async def _write_users_version(self, edit: AcceptedEdit, accepted: bytes | None) -> None:
        """`accepted`: the user's version encoded when they decided (the agent's write may have
        changed the file's encoding, BOM or line endings since)."""
        try:
            target = await self.files.resolve(edit.path)
            # check_disk=False: the agent has just written it
            data = await self.files.write_accepted(target, edit, check_disk=False, data=accepted)
        except FsRefused as exc:
            self.view.notice(f"Your edited version of {edit.path} could not be written: {exc}", "warning")
            self.writes.record(edit.path, True, *_expected(None))  # what the agent wrote is not what you accepted
            return
        self._wrote_bytes(edit.path, True, data)
        self._note_edited(edit)

    def _wrote_bytes(self, path: str, reviewed: bool, forms: tuple[bytes, ...]) -> None:
        """Record our write from the bytes we wrote (or the forms the editor's save may store);
        none: no bytes can hold the accepted text, so none is taken for it."""
        if forms:
            self.writes.wrote(path, reviewed, *forms)
        else:
            self.writes.record(path, reviewed, *_expected(None))

    def add_note(self, note: str) -> None:
        """A note from the editor that the next prompt carries before the user's text, once (what
        the user reverted or restored since the agent's last turn: core/history/turns.py take_notes)."""
        self._notes.append(note)

    def _note_edited(self, edit: AcceptedEdit) -> None:
        self._notes.append(
            f"[Note from the editor: the user changed your proposed edit of {edit.path} before accepting it. "
            f"The file's final text is:]\n{edit.final}"
        )

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        try:
            return ReadTextFileResponse(content=await self.files.read(path, line, limit))
        except FsRefused as exc:
            raise RequestError(-32602, str(exc)) from None

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        try:
            target = await self.files.resolve(path)
        except FsRefused as exc:
            self.view.notice(f"Refused {self.spec.name}'s write of {path}: {exc}", "warning")
            self.unchecked.refused.add(path)
            raise RequestError(-32602, str(exc)) from None
        edit = self.gate.take(target.path)
        if edit is None and self.always_allowed:  # the user let it edit without asking (notice shown)
            edit = AcceptedEdit("", target.path, content, content)
        if edit is None:
            message = f"Refused the write of {path}: no review accepted it. Every edit goes through a review."
            self.seen.wrote(self.mode)
            self._unreviewed(message)
            self.unchecked.refused.add(path)
            raise RequestError(-32602, message)
        # The bytes encoded when the user decided: the write refuses a file changed since, so they
        # are what encoding it now would give (once: keeping each line's ending costs a diff).
        accepted = self._accepted_bytes.pop((edit.tool_call_id, edit.path), None)
        final = edit.final
        if not edit.edited and await asyncio.to_thread(lambda: lines(content) == lines(final)):
            # The lines the user accepted, as the agent sent them: its final newline (a diff rebuilt
            # without it must not drop it) and, for a new file, its line breaks.
            edit = replace(edit, proposal=content, final=content)  # still not edited by the user
            accepted = None  # encoded from the agent's text by the write
        try:
            data = await self.files.write_accepted(target, edit, data=accepted)
        except FsRefused as exc:
            self.view.notice(str(exc), "warning")
            raise RequestError(-32603, str(exc)) from None
        self._wrote_bytes(target.path, bool(edit.tool_call_id), data)  # "" when allowed for the session
        if edit.edited:
            self._note_edited(edit)
        return WriteTextFileResponse()

    # terminal/*: we advertise `terminal: false`, yet the SDK answers these with success (`null`,
    # `{}`) when a client lacks the method, so an agent would think it ran a command. Each is
    # refused with the SDK's method-not-found (-32601) instead.

    async def create_terminal(self, **params: Any) -> None:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, **params: Any) -> None:
        raise RequestError.method_not_found("terminal/output")

    async def wait_for_terminal_exit(self, **params: Any) -> None:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, **params: Any) -> None:
        raise RequestError.method_not_found("terminal/kill")

    async def release_terminal(self, **params: Any) -> None:
        raise RequestError.method_not_found("terminal/release")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """`_…` notifications are the agent's own (the SDK strips the underscore): not the model's
        reply, but what it is doing meanwhile (retrying its connection for minutes): the status."""
        self._status_shown = True
        self.view.status(f"{self.spec.name}: {_status_text(method, params)}")


_ROUTES: dict[str, Callable[[ChatSession, dict[str, Any]], None]] = {
    "agent_message_chunk": ChatSession._chunk,
    "agent_thought_chunk": ChatSession._chunk,
    "user_message_chunk": ChatSession._chunk,
    "plan": ChatSession._plan,
    "usage_update": ChatSession._usage,
    "available_commands_update": ChatSession._commands,
    "current_mode_update": ChatSession._mode_changed,
    "config_option_update": ChatSession._config_changed,
    "session_info_update": ChatSession._info_changed,
}


def _resource_blocks(attached: Attachment) -> list[Any]:
    """An embedded resource when the text is there (the agent takes embedded context), else a
    resource_link; a selection's note first, so the agent knows which lines it is."""
    blocks: list[Any] = [text_block(attached.note)] if attached.note else []
    if attached.text is not None:
        blocks.append(resource_block(embedded_text_resource(attached.uri, attached.text)))
    else:
        blocks.append(resource_link_block(attached.name, attached.uri))
    return blocks


def _status_text(method: str, params: dict[str, Any]) -> str:
    """The words of an extension notification: its message when it has one, else its method and
    parameters, on one line and short (a status line, not a log)."""
    words = next((params[key] for key in _STATUS_KEYS if isinstance(params.get(key), str) and params[key]), None)
    if words is None:
        words = f"{method} {json.dumps(params, ensure_ascii=False, default=str)}" if params else method
    return _one_line(words[: 4 * STATUS_CHARS])[:STATUS_CHARS]  # cut first: the words may be megabytes


def _one_line(text: str) -> str:
    """An agent's words inside our one-line reasons: every run of white space (line breaks too) one space."""
    return " ".join(text.split())


def _invalid(exc: ValidationError) -> str:
    """Which fields of an answer were wrong and how, in pydantic's words, without the values (an
    agent's value may be huge): `protocolVersion: Input should be less than or equal to 65535`."""
    wrong = [f"{'.'.join(str(part) for part in e['loc']) or 'the answer'}: {e['msg']}" for e in exc.errors()[:3]]
    more = f"; and {exc.error_count() - 3} more" if exc.error_count() > 3 else ""
    return _one_line("; ".join(wrong) + more)[:500]


def _expected(data: bytes | None, deleted: bool = False) -> tuple[str, int]:
    """`TurnWrites.record`'s digest and size for accepted bytes; for None (no write can hold the
    accepted text) a digest no file has; for an accepted deletion, the file gone (ABSENT)."""
    if deleted:
        return ABSENT, -2  # no size: a file that exists, even empty, is not the deletion accepted
    return (digest_of(data), len(data)) if data is not None else ("", -1)


def _pick(choices: list[Choice], *kinds: str) -> str | None:
    for kind in kinds:
        for choice in choices:
            if choice.kind == kind:
                return choice.option_id
    return None
