"""One chat with an ACP agent, the protocol side: the SDK's ClientSideConnection over the agent's
stdio, on an asyncio loop, and the SDK's Client (the agent's requests and notifications), each
handed to the chat's thread (thread.py: its state and decisions). The only module that imports the
SDK (`acp`), so it loads on the first chat, never at start-up.

The agent's requests: `session/request_permission` for an edit opens a review (review/review_gate.py),
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
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar, cast

from acp import RequestError, embedded_text_resource, image_block, resource_block, resource_link_block, text_block
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    AuthCapabilities,
    BooleanConfigOptionCapabilities,
    CancelElicitationResponse,
    ClientCapabilities,
    ClientSessionCapabilities,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionConfigOptionsCapabilities,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.utils import serialize_params
from pydantic import ValidationError

from .. import __version__
from ..core.editor import Editor
from ..core.files.paths import PathPolicy
from ..core.history.turn_writes import TurnWrites
from ..core.reviews import Reviews
from ..core.server.chat_servers import AgentTransports, ChatServers
from .agents import process
from .agents.agents import AgentNotFound, AgentSpec, agent_environment, resolve_command, with_private_temp
from .asks import auth, elicitation
from .folders import additional_directories, first_folder_only
from .modes import Seen, starting_mode
from .past_sessions import Listing, Offered, PastSessions
from .prompt.images import Image, ImageRefused, no_images
from .prompt.prompt_queue import TurnGate, queues_prompts
from .prompt.resources import Attachment, Resource, attach
from .prompt.rewind import Rewound, seed_note
from .review.files import READ_LIMIT_BYTES, AgentFiles, FsRefused
from .review.review_gate import ReviewGate
from .review.unchecked import UncheckedEdits
from .terminal.permits import TerminalPermits
from .terminal.terminals import Terminal, TerminalRefused, Terminals
from .thread import ChatFailed, ChatThread, ConfigOptions, SessionModels, SessionModes, WriteFailed, WriteRefused
from .updates import OUTPUT_KEPT, tool_terminals
from .view import ChatView, Choice, Command, ConfigOption, Rejection

__all__ = ["ChatFailed", "ChatSession", "NeedsLogin"]

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1  # what every agent we know answers (reference acp.md §1)
START_TIMEOUT_SECONDS = 60.0  # initialize and session/new: an agent's first start may install or index
EXIT_GRACE_SECONDS = 2.0  # after the agent's process ends, its last lines may still be in the pipe
_SET_MODEL = "session/set_model"
_STATUS_KEYS = ("message", "text", "status", "title")  # where an extension notification's words are
STATUS_CHARS = 300  # a status line is one line
# JSON-RPC's own codes for a request the agent could not take as sent: a protocol error. Any other
# code (-32603 internal error, -32000 and up: the agent's own) is the agent's error, in its words.
_PROTOCOL_ERRORS = (-32700, -32600, -32601, -32602)
# What an agent's answer can fail with: a closed pipe, a JSON-RPC error, an answer that is not ACP.
_AGENT_ERRORS = (ConnectionError, RequestError, ValidationError)
T = TypeVar("T")
Opened = TypeVar("Opened", NewSessionResponse, LoadSessionResponse, ResumeSessionResponse)


class NeedsLogin(ChatFailed):
    """session/new, session/load or a prompt failed for want of a login, and the agent offers ways
    to log in; `said`: the agent's own words."""

    def __init__(self, message: str, said: str) -> None:
        super().__init__(message)
        self.said = said


class ChatSession:
    """A chat with one agent in one workspace, the SDK's Client (its callbacks below); what the chat
    holds and decides is its `thread`, whose state the properties below show as before."""

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
        servers: ChatServers | None = None,
    ) -> None:
        self.spec = spec
        self.servers = servers or ChatServers()  # the window's tools (a token of the chat's own) and the user's
        self.folders = [os.path.abspath(f) for f in folders]
        self.view = view
        self.env = agent_environment({**(os.environ if env is None else env), **spec.env})
        self.start_timeout = start_timeout
        gate = ReviewGate(editor, spec.name, reviews)  # the window's Reviews, shared with other chats
        limit = read_limit_bytes or READ_LIMIT_BYTES  # the `chat_read_file_limit_kb` setting
        files = AgentFiles(PathPolicy(self.folders), editor, limit)
        self.thread = ChatThread(spec.name, view, gate, files, _Requests(self))
        self.terminals = Terminals(self.folders, self.env, self._terminal_shown)
        self.permits = TerminalPermits()  # the user's execute permissions, spent by terminal/create
        self.subreaper = subreaper  # True only in a process of our own (process.start)
        self.agent: process.AgentProcess | None = None
        self.session_id = ""
        self.can_load = False  # the agent's `loadSession` capability (after initialize)
        self.past = PastSessions(spec.name, self.folders[0], Offered(), _History(self))  # after initialize
        self.embeds_resources = False  # its `promptCapabilities.embeddedContext`
        self._queued: set[asyncio.Task[Any]] = set()  # prompts sent during a turn, run after it
        self.takes_images = False  # its `promptCapabilities.image` (images.py)
        self.takes_folders = False  # its `sessionCapabilities.additionalDirectories` (folders.py)
        self.auth_methods: list[auth.AuthMethod] = []  # its `authMethods` (acp/asks/auth.py)
        self.transports = AgentTransports()  # its `mcpCapabilities`: which MCP servers it can be given
        self._conn: ClientSideConnection | None = None
        self._asking: set[asyncio.Task[Any]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self._temp = ""  # the agent's own temporary folder (with_private_temp), removed with the chat
        self._status_shown = False  # the view shows a status from the agent's notifications
        self.rewinds: list[Rewound] = []  # the sessions rewinds left, newest last (undo_rewind)
        self.turn_gate = TurnGate()  # one prompt at a time, unless the agent queues them (prompt_queue.py)

    # -- the thread's state, for the chat's callers --

    @property
    def gate(self) -> ReviewGate:
        return self.thread.gate

    @property
    def files(self) -> AgentFiles:
        return self.thread.files

    @files.setter
    def files(self, files: AgentFiles) -> None:  # a test counts the agent's reads
        self.thread.files = files

    @property
    def writes(self) -> TurnWrites:
        return self.thread.writes

    @property
    def unchecked(self) -> UncheckedEdits:
        return self.thread.unchecked

    @property
    def seen(self) -> Seen:
        return self.thread.seen

    @property
    def always_allowed(self) -> bool:
        return self.thread.always_allowed

    @property
    def title(self) -> str | None:
        return self.thread.title

    @property
    def commands(self) -> list[Command]:
        return self.thread.commands

    @property
    def modes(self) -> SessionModes | None:
        """The agent's modes (iterating gives the ones it offers); None when it offers none."""
        return self.thread.modes

    @property
    def mode(self) -> str | None:
        return self.thread.mode

    @property
    def models(self) -> SessionModels | None:
        """Gemini's models (iterating gives them); None when the agent lists none."""
        return self.thread.models

    @property
    def model(self) -> str | None:
        return self.thread.models.current if self.thread.models else None

    @property
    def config_options(self) -> ConfigOptions | None:
        return self.thread.config_options

    @property
    def config(self) -> list[ConfigOption]:
        return self.thread.config_options.options if self.thread.config_options else []

    def add_note(self, note: str) -> None:
        self.thread.add_note(note)

    def stopped_after_rejection(self, stop_reason: str) -> bool:
        return self.thread.stopped_after_rejection(stop_reason)

    # -- lifecycle --

    async def start(self, login: bool = False) -> None:
        """Start the agent, initialize, open a new session in a reviewing mode; ChatFailed on failure.
        An agent that needs a login has its `authMethods` offered first (`login`: before asking)."""
        await self._launch()
        assert self._conn is not None
        meta = dict(self.spec.session_meta) or None
        more = additional_directories(self.folders, self.takes_folders)
        request = NewSessionRequest(
            cwd=self.folders[0], additional_directories=more, mcp_servers=self._mcp_servers(), field_meta=meta
        )
        session, raw = await self._logged_in("session/new", request, NewSessionResponse, login)
        await self._open(session.session_id, session, raw)

    async def load(self, session_id: str, login: bool = False, launched: bool = False) -> None:
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
            cwd=self.folders[0],
            additional_directories=additional_directories(self.folders, self.takes_folders),
            session_id=session_id,
            mcp_servers=self._mcp_servers(),
            field_meta=dict(self.spec.session_meta) or None,
        )
        session, raw = await self._logged_in("session/load", request, LoadSessionResponse, login)
        await self._open(session_id, session, raw)

    async def connect(self) -> None:
        """Start the agent and initialize, opening no session: to list or delete past sessions."""
        await self._launch()

    async def reopen(self, session_id: str, login: bool = False) -> None:
        """Start the agent and open the past session `session_id` again: `session/resume` where the
        agent offers it (the agent keeps the history; it is not replayed), else `session/load`."""
        await self._launch()
        if self.past.offered.reopen_with != "session/resume":
            await self.load(session_id, login, launched=True)
            return
        request = ResumeSessionRequest(
            cwd=self.folders[0], session_id=session_id, mcp_servers=[], field_meta=dict(self.spec.session_meta) or None
        )
        session, raw = await self._logged_in("session/resume", request, ResumeSessionResponse, login)
        await self._open(session_id, session, raw)
        self.view.notice(
            f"Resumed an earlier session of {self.spec.name}: it remembers the conversation, which it does not "
            "show again here.",
            "info",
        )

    async def rewind(self, number: int) -> str:
        """A new session of the same agent, on the same connection, whose first prompt carries the
        turns before prompt `number` (acp/prompt/rewind.py); returns prompt `number`'s text, to edit and
        send again. ValueError when there is no such prompt. (`session/fork` would copy the whole
        conversation, not the turns before prompt N, so it is not used.)"""
        if self._conn is None:
            raise ChatFailed("the chat has not started")
        text = self.thread.transcript.prompt_text(number)
        old, whole = self.session_id, self.thread.transcript.cut_before(number)
        request = NewSessionRequest(
            cwd=self.folders[0],
            additional_directories=additional_directories(self.folders, self.takes_folders),
            mcp_servers=self._mcp_servers(),
            field_meta=dict(self.spec.session_meta) or None,
        )
        try:
            session, raw = await self._logged_in("session/new", request, NewSessionResponse, False)
        except BaseException:
            self.thread.transcript.turns = whole  # still the old session: nothing was rewound
            raise
        await self._open(session.session_id, session, raw)
        self.rewinds.append(Rewound(old, whole))
        self.thread.take_notes()  # the old session's notes went with it
        note = seed_note(self.thread.transcript.turns)
        if note:
            self.thread.add_note(note)
        return text

    async def undo_rewind(self) -> bool:
        """Back to the session the last rewind left (`session/load`, which replays it to the view);
        False, with a notice saying so, when the agent cannot load a session. ValueError: no rewind."""
        if not self.rewinds:
            raise ValueError("this chat has no rewind to undo")
        if not self.can_load:
            self.rewinds.pop()
            self.view.notice(
                f"{self.spec.name} cannot open its earlier session again (it does not offer session/load); "
                "the chat goes on in the new session.",
                "info",
            )
            return False
        rewound = self.rewinds.pop()
        await self.load(rewound.session_id, launched=True)
        self.thread.take_notes()  # the transcript note was for the new session
        self.thread.transcript.turns = rewound.turns  # after the replay, which told the view
        return True

    @property
    def offered(self) -> Offered:
        return self.past.offered

    async def sessions(self, limit: int | None = None) -> Listing:
        return await self.past.listing(limit)

    async def close_session(self, session_id: str) -> None:
        await self.past.close(session_id)

    async def delete_session(self, session_id: str) -> None:
        await self.past.delete(session_id)

    async def _logged_in(
        self, method: str, request: Any, answer: type[Opened], login: bool
    ) -> tuple[Opened, dict[str, Any]]:
        """`_opening`, after a login whenever the agent says it needs one (acp/asks/auth.py)."""
        if login:
            await self._log_in(None)
        for _ in range(auth.MAX_LOGINS):
            try:
                return await self._opening(method, request, answer)
            except NeedsLogin as exc:
                await self._log_in(exc)
        return await self._opening(method, request, answer)

    async def _log_in(self, failed: NeedsLogin | None) -> None:
        """Offer the agent's login methods and run the one chosen (`failed`: why, else `--login`);
        ChatFailed when the user picks none, or the method leaves the user to do it (env_var)."""
        name = self.spec.name
        if not self.auth_methods:  # only with `--login`: NeedsLogin needs methods
            self.view.notice(f"{name} offers no login methods (authMethods); the chat starts without one.", "info")
            return
        # Questions the chat's close withdraws (`_ask_user`): a closed chat logs in to nothing.
        method = await self._ask_user(auth.choose(self.view, name, self.auth_methods, failed.said if failed else ""))
        if method is None:
            raise ChatFailed(str(failed) if failed else f"You did not log in to {name}; the chat did not start.")
        if method.kind == "env_var":
            raise ChatFailed(auth.env_var_text(name, method))
        if method.kind == "agent":
            self.view.notice(f"Logging in to {name} with {method.name}…", "info")
            await self._asking_agent("authenticate", self._connection(True).authenticate(method_id=method.id))
            return
        argv = resolve_command(self.spec, self.env)
        command = auth.terminal_command(f"Log in to {name}", argv, method, self.folders[0], self.spec.env)
        if not await self._ask_user(self.view.run_login(command)):
            raise ChatFailed(f"The login to {name} was not finished; start a new chat to try again.")

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
        # The unstable protocol: elicitation/create is routed only then (acp/client/router.py).
        stdio = process.AgentStdio(self.agent)
        self._conn = ClientSideConnection(cast(Client, self), stdio, use_unstable_protocol=True)
        self._watcher = asyncio.ensure_future(self._watch_exit())
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,  # the client terminal (terminals.py)
            auth=AuthCapabilities(terminal=True),  # the chat runs a terminal login (acp/asks/auth.py)
            elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities(), url=ElicitationUrlCapabilities()),
            session=ClientSessionCapabilities(
                config_options=SessionConfigOptionsCapabilities(boolean=BooleanConfigOptionCapabilities())
            ),
        )
        info = Implementation(name="gemini-companion", title="Gemini Companion", version=__version__)
        answer = await self._starting("initialize", self._conn.initialize(PROTOCOL_VERSION, capabilities, info))
        if answer.protocol_version != PROTOCOL_VERSION:  # the spec: the client disconnects
            raise ChatFailed(
                f"{self.spec.name} speaks ACP version {answer.protocol_version}, and this client speaks "
                f"version {PROTOCOL_VERSION}; use a version of the agent that speaks ACP {PROTOCOL_VERSION}."
            )
        methods = answer.auth_methods or []
        self.auth_methods = auth.auth_methods([m.model_dump(mode="json", by_alias=True) for m in methods])
        agent = answer.agent_capabilities
        self.can_load = bool(agent and agent.load_session)
        self.past.offered = Offered.of(agent.model_dump(mode="json", by_alias=True) if agent else {})
        self.embeds_resources = bool(agent and agent.prompt_capabilities and agent.prompt_capabilities.embedded_context)
        self.turn_gate.queues = queues_prompts(agent.model_dump(by_alias=True) if agent else None)
        mcp = agent.mcp_capabilities if agent else None
        self.transports = AgentTransports(http=bool(mcp and mcp.http), sse=bool(mcp and mcp.sse))
        self.takes_images = bool(agent and agent.prompt_capabilities and agent.prompt_capabilities.image)
        sessions = agent.session_capabilities if agent else None
        self.takes_folders = bool(sessions and sessions.additional_directories is not None)
        notice = first_folder_only(self.spec.name, self.folders, self.takes_folders)
        if notice:
            self.view.notice(notice, "info")

    @property
    def queues_prompts(self) -> bool:
        """The agent takes a prompt during a turn and answers it after (prompt_queue.py)."""
        return self.turn_gate.queues

    def _mcp_servers(self) -> list[Any]:
        """`mcpServers` for session/new or session/load (core/server/chat_servers.py); what was skipped, told once."""
        entries, notices = self.servers.entries(self.transports)
        for notice in notices:
            self.view.notice(notice, "info")
        return entries

    async def _open(self, session_id: str, session: Any, raw: dict[str, Any]) -> None:
        self.session_id = session_id
        self.thread.opened(session.model_dump(mode="json", by_alias=True, exclude_none=True), raw)
        await self._to_review_mode(self.thread.modes)

    async def _to_review_mode(self, offered: SessionModes | None) -> None:
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
            choice = starting_mode(self.spec.name, offered.current, offered.available, wanted)
        except ValueError as exc:
            raise ChatFailed(f"{exc}.") from None
        if choice.mode_id is not None:
            assert self._conn is not None
            request = self._conn.set_session_mode(self.session_id, choice.mode_id)
            await self._starting("session/set_mode", request)  # the start's timeout, unlike set_mode
            previous = offered.current
            offered.changed(choice.mode_id)
            if previous and not self.spec.review_mode:  # the presets' switch is their documented default
                moved = f"the chat runs in {choice.mode_id!r}: {choice.why}"
                self.view.notice(f"{self.spec.name} started in mode {previous!r}; {moved}.", "info")
        self.thread.warn_if_unreviewed_mode()

    async def _starting(self, what: str, request: Any) -> Any:
        try:
            return await asyncio.wait_for(request, self.start_timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise ChatFailed(
                f"{self.spec.name} did not answer {what} within {self.start_timeout:g} s{self._output_note()}; "
                "check that the command starts an ACP agent."
            ) from None
        except _AGENT_ERRORS as exc:
            if isinstance(exc, RequestError) and self._needs_login(exc, what):
                raise NeedsLogin(await self._failure(exc, what), _said(exc)[:300]) from None
            raise ChatFailed(await self._failure(exc, what)) from None

    def _needs_login(self, exc: RequestError, what: str) -> bool:
        """session/new, load or a prompt failed for want of a login, and the agent offers logins."""
        if what not in ("session/new", "session/load", "the prompt"):
            return False
        return bool(self.auth_methods) and auth.needs_login(exc.code, _said(exc))

    async def close(self) -> None:
        """End the chat: close open reviews, the connection, and the agent with all it started."""
        self.servers.end()  # its token for the window's tools answers 401 from now on
        for task in [*self._asking, *self._queued]:
            task.cancel()
        await self.terminals.close()  # every command's tree, before the agent's own
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

    async def prompt(self, text: str, resources: Sequence[Resource] = (), images: Sequence[Image] = ()) -> str:
        """Send one prompt with workspace files attached (embedded when the agent takes embedded
        context, else as links) and images (read and checked by images.py) and wait for the turn to
        end; returns the stop reason. A file outside the workspace raises ResourceRefused, an image
        for an agent that takes none ImageRefused; nothing is sent then."""
        if self._conn is None:
            raise ChatFailed("the chat has not started")
        if images and not self.takes_images:
            raise ImageRefused(no_images(self.spec.name))
        async with self.turn_gate.turn():  # never a 2nd prompt during a turn unless the agent queues
            return await self._prompt(text, resources, images)

    async def _prompt(self, text: str, resources: Sequence[Resource], images: Sequence[Image]) -> str:
        attached = [await attach(self.files, r, self.embeds_resources) for r in resources]
        self.thread.transcript.prompted(text)
        blocks: list[Any] = [text_block(note) for note in self.thread.take_notes()] + [text_block(text)]
        blocks += [block for a in attached for block in _resource_blocks(a)]
        blocks += [image_block(i.data, i.mime_type, uri=i.uri) for i in images]
        self.permits.turn_started()
        try:
            try:
                response = await self._prompt_turn(blocks)
            except NeedsLogin as exc:  # an agent may ask for its login at the first prompt (Claude)
                await self._log_in(exc)
                response = await self._prompt_turn(blocks)  # the same prompt, once logged in
        finally:
            self._clear_status()
            await self.thread.check_reviewed()
        stop_reason = str(response.stop_reason)
        if self.thread.stopped_after_rejection(stop_reason):
            self.view.notice(f"{self.spec.name} stopped its turn after you rejected its edit.", "info")
        self.view.turn_ended(stop_reason)
        return stop_reason

    def queue_prompt(self, text: str) -> bool:
        """A prompt sent now, during the turn (the agent runs it after): only to an agent that
        queues prompts. The current `prompt` returns when it is answered too."""
        if not self.queues_prompts or self._conn is None or not self.session_id:
            return False
        task = asyncio.ensure_future(self._conn.prompt(self.session_id, [text_block(text)]))
        self._queued.add(task)
        return True

    async def _queued_turns(self) -> None:
        """Wait for the prompts queued during the turn; one the agent failed is said, not raised
        (the user's own prompt was answered)."""
        while self._queued:
            task = self._queued.pop()
            try:
                await task
            except _AGENT_ERRORS as exc:
                self.view.notice(f"{self.spec.name} did not take the queued message: {_one_line(str(exc))}", "warning")

    async def _prompt_turn(self, blocks: list[Any]) -> Any:
        assert self._conn is not None
        try:
            with self.agent.turn() if self.agent else contextlib.nullcontext():  # its tree is tracked meanwhile
                response = await self._conn.prompt(self.session_id, blocks)
                await self._queued_turns()  # the turn is over for the user when those are too
                return response
        except _AGENT_ERRORS as exc:
            if isinstance(exc, RequestError) and self._needs_login(exc, "the prompt"):
                raise NeedsLogin(await self._failure(exc, "the prompt"), _said(exc)[:300]) from None
            raise ChatFailed(await self._failure(exc, "the prompt")) from None

    def _clear_status(self) -> None:
        """A status says what the agent does during a turn; once the turn is over it is stale."""
        if self._status_shown:
            self._status_shown = False
            self.view.status(None)

    # -- modes, models, config options --

    async def set_mode(self, mode_id: str) -> None:
        """session/set_mode (SessionModes.set); an agent that listed no modes is asked all the same."""
        modes = self.thread.offered_modes()
        await modes.set(mode_id)
        self.thread.modes = modes

    async def set_model(self, model_id: str) -> None:
        await self.thread.set_model(model_id)

    async def set_config_option(self, config_id: str, value: str | bool) -> None:
        await self.thread.offered_config().set(config_id, value)

    def _connection(self, starting: bool = False) -> ClientSideConnection:
        if self._conn is None or not (self.session_id or starting):
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
        self.thread.rejected_last = False  # the turn ends `cancelled` because the user cancelled it
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
        message = _said(exc)
        if auth.needs_login(exc.code, message):
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

    # -- the SDK's Client: requests and notifications from the agent, each handed to the thread --

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        call = self.thread.asked(tool_call.model_dump(mode="json", by_alias=True, exclude_none=True))
        choices = [Choice(o.option_id, o.name, str(o.kind)) for o in options]
        task = asyncio.ensure_future(self.thread.decide(call, choices))
        self._asking.add(task)  # cancel() answers it `cancelled`, as the protocol requires
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._asking.discard(task)
        option_id = None if task.cancelled() else task.result()
        self.permits.answered(call, call.get("kind"), choices, option_id)
        if option_id is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        await self.thread.update(data)
        for terminal_id in tool_terminals(data.get("content") if isinstance(data.get("content"), list) else []):
            self.terminals.show(terminal_id)  # a card embedding a terminal shows its output so far

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        try:
            return ReadTextFileResponse(content=await self.files.read(path, line, limit))
        except FsRefused as exc:
            raise _invalid_params(str(exc)) from None

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        try:
            await self.thread.write_text_file(path, content)
        except WriteRefused as exc:
            raise _invalid_params(str(exc)) from None
        except WriteFailed as exc:
            raise RequestError(RequestError.internal_error().code, str(exc)) from None
        return WriteTextFileResponse()

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        """elicitation/create: a form asked field by field, or a URL opened once the user confirms
        (acp/asks/elicitation.py); `cancel` when the chat closes (or the turn is cancelled) meanwhile."""
        data = mode.model_dump(mode="json", by_alias=True, exclude_none=True)
        if "url" in data:
            asking = elicitation.ask_url(self.view, self.spec.name, message, str(data["url"]))
            action, content = await self._ask_user(asking), None
        else:
            schema = data.get("requestedSchema") or {}
            answer = await self._ask_user(elicitation.ask_form(self.view, self.spec.name, message, schema))
            action, content = answer if answer is not None else (None, None)
        if action == "accept":
            return AcceptElicitationResponse(action="accept", content=content)
        if action == "decline":
            return DeclineElicitationResponse(action="decline")
        return CancelElicitationResponse(action="cancel")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        """The agent says a URL elicitation is over: nothing waits on it here."""

    async def _ask_user(self, asking: Awaitable[T]) -> T | None:
        """The user's answer to a question of the agent's; None when the chat closes or the turn is
        cancelled first (the question is a task `close` and `cancel` cancel)."""
        task = asyncio.ensure_future(asking)
        self._asking.add(task)
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._asking.discard(task)
        return None if task.cancelled() else task.result()

    # terminal/*: the commands the agent runs through the client (terminals.py), only once the user
    # allowed them (terminal_permits.py: its permission this turn, or asked here); a request
    # refused is the SDK's invalid-params error with our reason.

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        variables = {v.name: v.value for v in env or []}
        try:
            await self.permits.check(command, args, cwd or self.folders[0], self._choose_option)
            terminal = await self.terminals.create(command, args, cwd, variables, output_byte_limit)
        except TerminalRefused as exc:
            raise _invalid_params(str(exc)) from None
        return CreateTerminalResponse(terminal_id=terminal.id)

    async def _choose_option(self, title: str, choices: list[Choice]) -> str | None:
        """The user's choice on the chat's own question, as an option id (a reason given with a
        rejection does not make it less of one)."""
        chosen = await self._ask_user(self.view.choose(title, choices))
        return chosen.option_id if isinstance(chosen, Rejection) else chosen

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        status = terminal.status()
        exit_status = TerminalExitStatus(exit_code=status.exit_code, signal=status.signal) if status else None
        return TerminalOutputResponse(output=terminal.text(), truncated=terminal.truncated, exit_status=exit_status)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self._terminal(terminal_id)
        status = await self.terminals.wait_for_exit(terminal_id)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        self._terminal(terminal_id)
        await self.terminals.kill(terminal_id)
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        self._terminal(terminal_id)
        await self.terminals.release(terminal_id)
        return ReleaseTerminalResponse()

    def _terminal(self, terminal_id: str) -> Terminal:
        try:
            return self.terminals.get(terminal_id)
        except TerminalRefused as exc:
            raise _invalid_params(str(exc)) from None

    def _terminal_shown(self, terminal: Terminal) -> None:
        """A terminal's output changed: the cards of the calls embedding it show its end."""
        self.thread.terminal_output(terminal.id, terminal.text(OUTPUT_KEPT))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """`_…` notifications are the agent's own (the SDK strips the underscore): not the model's
        reply, but what it is doing meanwhile (retrying its connection for minutes): the status."""
        self._status_shown = True
        self.view.status(f"{self.spec.name}: {_status_text(method, params)}")


class _Requests:
    """The capabilities' requests (thread.AgentRequests) over the session's SDK connection; an
    agent's failure is a ChatFailed saying why."""

    def __init__(self, session: ChatSession) -> None:
        self._session = session

    async def set_mode(self, mode_id: str) -> None:
        chat = self._session
        await chat._asking_agent("session/set_mode", chat._connection().set_session_mode(chat.session_id, mode_id))

    async def set_model(self, model_id: str) -> None:
        # SDK 0.12.1 has no call for it (acp/client/connection.py; AGENT_METHODS in acp/meta.py
        # lacks it): its own connection sends the request Gemini CLI 0.61.0 routes to
        # unstable_setSessionModel (bundle/gemini-*.js, `session_set_model`).
        chat = self._session
        params = {"sessionId": chat.session_id, "modelId": model_id}
        await chat._asking_agent("session/set_model", chat._connection()._conn.send_request(_SET_MODEL, params))

    def queue_prompt(self, text: str) -> bool:
        return self._session.queue_prompt(text)

    async def set_config_option(self, config_id: str, value: str | bool) -> list[dict[str, Any]] | None:
        chat = self._session
        request = chat._connection().set_config_option(config_id=config_id, session_id=chat.session_id, value=value)
        answer = await chat._asking_agent("session/set_config_option", request)
        data = answer.model_dump(mode="json", by_alias=True, exclude_none=True) if answer is not None else {}
        return data.get("configOptions")


class _History:
    """The past sessions' requests (past_sessions.HistoryRequests) over the session's SDK
    connection, with or without an open session."""

    def __init__(self, session: ChatSession) -> None:
        self._session = session

    def _conn(self) -> ClientSideConnection:
        conn = self._session._conn
        if conn is None:
            raise ChatFailed("the agent has not started")
        return conn

    async def list_sessions(self, cwd: str, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        chat = self._session
        answer = await chat._asking_agent("session/list", self._conn().list_sessions(cwd=cwd, cursor=cursor))
        data = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data.get("sessions", []), data.get("nextCursor")

    async def close_session(self, session_id: str) -> None:
        await self._session._asking_agent("session/close", self._conn().close_session(session_id))

    async def delete_session(self, session_id: str) -> None:
        # SDK 0.12.1 has no call for it (acp/meta.py names the method; the client connection lacks
        # it): its own connection sends the request.
        request = self._conn()._conn.send_request("session/delete", {"sessionId": session_id})
        await self._session._asking_agent("session/delete", request)


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


def _said(exc: RequestError) -> str:
    """The agent's words in its error, on one line (Gemini CLI says why in data.details)."""
    message = _one_line(str(exc.args[0] if exc.args else exc)) or "no message"
    details = exc.data.get("details") if isinstance(exc.data, dict) else None
    if isinstance(details, str) and details:
        message = f"{message}: {_one_line(details)}"
    return message


def _one_line(text: str) -> str:
    """An agent's words inside our one-line reasons: every run of white space (line breaks too) one space."""
    return " ".join(text.split())


def _invalid(exc: ValidationError) -> str:
    """Which fields of an answer were wrong and how, in pydantic's words, without the values (an
    agent's value may be huge): `protocolVersion: Input should be less than or equal to 65535`."""
    wrong = [f"{'.'.join(str(part) for part in e['loc']) or 'the answer'}: {e['msg']}" for e in exc.errors()[:3]]
    more = f"; and {exc.error_count() - 3} more" if exc.error_count() > 3 else ""
    return _one_line("; ".join(wrong) + more)[:500]


def _invalid_params(message: str) -> RequestError:
    """The SDK's invalid-params error, its message our reason (the agent shows it to its model)."""
    return RequestError(RequestError.invalid_params().code, message)
