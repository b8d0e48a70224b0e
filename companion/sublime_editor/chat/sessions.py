"""The chats of each window: one ChatSession (companion/acp) per chat, run on the companion's loop
thread; its view is a ChatPanel on the main thread. Every call here is made on the main thread and
returns at once: the session's work is submitted to the loop, its results come back through
`sublime.set_timeout`, re-checking that the view is still there.

The SDK (and with it `companion.acp.session`) is imported on the loop thread when the first chat
starts, never when the package loads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import secrets
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import sublime

from ...acp.agents.agents import AgentSpec
from ...acp.prompt.images import Image, mentioned_images, named_like_image
from ...acp.prompt.resources import Resource
from ...core.context import SharingPolicy
from ...core.files.paths import is_inside
from ...core.history.change_set import FileChange
from ...core.mentions import MentionRules
from ...runtime import RuntimeStopped
from .. import mcp_tools as workspace_tools
from .. import review_ui, status
from .. import terminus as terminal
from ..changes import tab as change_set_view
from ..changes.sources import TurnsSource
from ..window_state import WindowState
from . import mcp as chat_mcp
from .attach import mentions as chat_mentions
from .history import checkpoints as chat_checkpoints
from .prompt_history import History
from .queued import QueuedPrompts
from .view import CHAT_SETTING, DIFF_SETTING, ChatPanel, StreamingChatView

if TYPE_CHECKING:
    from ...acp.session import ChatSession
    from ...core.history.turns import Turns

log = logging.getLogger("gemini_companion")
T = TypeVar("T")
# A chat's id is this run's token and a number: a chat view that hot exit brings back after a restart
# (or that outlives a reload of the package) carries an id no chat of this run has, so it never acts
# on one (the numbers restart at 1 in every plugin host).
RUN = secrets.token_hex(6)
_numbers = itertools.count(1)


class Chat:
    """One chat: its view (main thread) and its session (loop thread)."""

    def __init__(self, state: WindowState, key: str, spec: AgentSpec, folders: list[str]) -> None:
        self.id = f"{RUN}-{next(_numbers)}"
        self.state = state
        self.key = key  # the agent's entry in the `agents` setting
        self.spec = spec
        self.folders = folders
        self.panel = ChatPanel(state.window, self.id, spec.name)
        _by_view[self.panel.view.id()] = self  # found by its own view's id, never by a setting
        self.port = StreamingChatView(self.panel, on_state=self._state_changed)
        self.history = History()
        self.attached: dict[str, Resource] = {}  # mention in the prompt -> the file it sends
        self.images: dict[str, Image] = {}  # mention in the prompt -> the image it sends (chat/images.py)
        self.session: ChatSession | None = None  # loop thread only
        self.session_id = ""  # the agent's session, once started (main thread: Chat History finds it)
        self.reopen = False  # start() opens its session again as Chat History does (resume, else load)
        self.ready = False
        self.busy = False  # a turn runs
        self.running = 0  # prompts the agent is answering (more than 1 only where it queues them)
        self.agent_queues = False  # it advertises prompt queueing: a prompt goes to it during a turn
        self.queued = QueuedPrompts(self.panel)  # else the prompts sent during a turn wait here
        self._cancelled = False  # the user cancelled the turn: the queued prompts go back to the prompt
        self.ended = False  # the agent is gone (failed, stopped)
        self._closing: concurrent.futures.Future[None] | None = None
        self.silent = False  # set at exit: nothing more is shown
        self.checkpoints: chat_checkpoints.ChatCheckpoints | None = None  # loop thread
        self.checkpointing = 0  # checkpoints under way (main thread: the status bar says so)
        self.last_changes: list[FileChange] | None = None  # the last turn's change set (main thread)
        self.prompts_sent = 0  # with checkpoints: each one's "Restore checkpoint" link names its number

    @property
    def turns(self) -> Turns | None:
        """The chat's checkpoints before each prompt (None when off, failed, or not yet taken)."""
        checkpoints = self.checkpoints
        return checkpoints.turns if checkpoints is not None else None

    # -- main thread --

    def start(self, load_session_id: str | None = None) -> None:
        self.panel.notice(f"Starting {self.spec.name} in {self.folders[0]}…", "info")
        read_limit = workspace_tools.read_limit_bytes("chat_read_file_limit_kb")  # on the main thread
        config = chat_checkpoints.read_config(self.state.window)
        mcp = chat_mcp.read_settings()
        self._submit(lambda: self._start(load_session_id, read_limit, config, mcp), self._started)

    def send(self, text: str, resources: Sequence[Resource] = ()) -> bool:
        """Send the prompt (with workspace files attached); False (and the text stays where the
        user typed it) when it cannot go now."""
        if not text.strip() and not resources:
            return False
        if self.ended:
            sublime.status_message(f"{self.spec.name} has stopped in this chat: start a new chat.")
            return False
        if not self.ready:
            sublime.status_message(f"{self.spec.name} is still starting: your prompt stays; send it when it is ready.")
            return False
        attached, self.attached = self.attached, {}  # Send File's mentions go once
        images, self.images = self.images, {}  # and Send Image File's
        self.history.add(text)
        if self.busy and not self.agent_queues:  # never a 2nd prompt during a turn (prompt_queue.py)
            self.queued.add(text, (tuple(resources), attached, images))
            return True
        self._dispatch(text, resources, attached, images, checkpoint=not self.busy)
        return True

    def _dispatch(
        self,
        text: str,
        resources: Sequence[Resource],
        attached: dict[str, Resource],
        named_images: dict[str, Image],
        checkpoint: bool = True,
    ) -> None:
        """The prompt to the agent; `checkpoint` False: one the agent queues behind a running turn
        (its checkpoint would be taken while that turn still edits), so it offers no restore."""
        resources = [*resources, *(r for mention, r in attached.items() if mention in text)]
        images = [image for mention, image in named_images.items() if mention in text]
        # `@path` typed or completed: checked on the loop (disk); none while sharing is paused
        mentioned = None if self.state.handle.context.paused else chat_mentions.rules(self.state.window, self.folders)
        skip = (*attached, *named_images)  # Send File's and Send Image File's mentions go once
        self.running += 1
        self.busy = True
        self._cancelled = False
        self.panel.user_prompt(text)
        if checkpoint:
            self._offer_restore()
        self._show_status()
        self._submit(
            lambda: self._prompt(text, resources, mentioned, skip, images, checkpoint),
            lambda result, error: self._turn_done(text, result, error),
        )

    def edit_queued(self) -> bool:
        """Up in the empty prompt: the last queued prompt back in it, out of the queue."""
        found = self.queued.take_last()
        if found is None:
            return False
        text, (_, attached, images) = found
        self.attached.update(attached)
        self.images.update(images)
        self.panel.set_prompt(text)
        return True

    def cancel_queued(self) -> bool:
        """Cancel Queued Prompt (Escape while one waits): the last one is dropped (Up in the history
        still has it)."""
        found = self.queued.take_last()
        if found is not None:
            sublime.status_message(f"Gemini Companion: queued prompt cancelled (Up brings it back): {found[0][:60]}")
        return found is not None

    def _unqueue_all(self) -> None:
        """The turn failed or the user cancelled it: the queued prompts go back into the prompt,
        before what is typed there, rather than to the agent (nothing typed is lost)."""
        texts = []
        for text, (_, attached, images) in self.queued.take_all():
            texts.append(text)
            self.attached.update(attached)
            self.images.update(images)
        if texts:
            typed = self.panel.prompt_text().strip()
            self.panel.set_prompt("\n\n".join([*texts, *([typed] if typed else [])]))

    def _offer_restore(self) -> None:
        """ "Restore checkpoint" under the prompt just sent: the workspace as it was before it. The
        Nth prompt sent is the chat's Nth checkpoint (`Turns.begin`), which the command restores."""
        if self.checkpoints is None:
            return
        self.prompts_sent += 1
        args = {"chat": self.id, "prompt": self.prompts_sent}
        run = self.state.window.run_command
        restore = lambda: run("gemini_companion_restore_checkpoint", args)  # noqa: E731
        rewind = lambda: run("gemini_companion_restore_checkpoint", {**args, "rewind": True})  # noqa: E731
        link = '<a href="restore">Restore checkpoint</a> · <a href="rewind">Rewind to Here</a>'
        self.panel.card(f"restore-{self.prompts_sent}", link, {"restore": restore, "rewind": rewind})

    def add_note(self, note: str) -> None:
        """A note the next prompt carries before the user's text (Send Comments to Chat); the
        chat must be ready (the caller checks)."""
        self._submit(lambda: self._add_note(note), lambda _result, error: error and self._failed(error))

    async def _add_note(self, note: str) -> None:
        if self.session is None:
            raise RuntimeError("the chat has not started")
        self.session.add_note(note)

    def attach(self, mention: str, resource: Resource) -> None:
        """Send to Agent: the file goes with the next prompt as long as its mention stays in it."""
        self.attached[mention] = resource
        self.panel.add_to_prompt(mention + " ")
        self.panel.focus_prompt()

    def cancel(self) -> None:
        if self.busy:
            self._cancelled = True
            self._submit(self._cancel, lambda _r, _e: None)

    def set_mode(self, mode_id: str) -> None:
        self._submit(lambda: self._call("set_mode", mode_id), self._answered)

    def set_model(self, model_id: str) -> None:
        self._submit(lambda: self._call("set_model", model_id), self._answered)

    def set_option(self, config_id: str, value: str | bool) -> None:
        """session/set_config_option (Chat Options…); the agent's answer updates the panel's options."""
        self._submit(lambda: self._set_option(config_id, value), self._answered)

    def close(self, api_alive: bool = True) -> concurrent.futures.Future[None]:
        """Stop the agent and everything it started (idempotent; from any thread). Without the API
        (at exit) nothing the stopping session still reports reaches Sublime."""
        if not api_alive:
            self.silent = True
            self.port.silence()
        if self._closing is None:
            self.ended = True
            try:
                self._closing = self.state.handle.runtime.submit(self._close)
            except RuntimeStopped:
                self._closing = concurrent.futures.Future()
                self._closing.set_result(None)
        return self._closing

    def mode_label(self) -> str:
        panel = self.panel
        mode = next((m.name for m in panel.modes if m.id == panel.mode_id), panel.mode_id)
        return f"{self.spec.name} ({mode})" if mode else self.spec.name

    def _submit(
        self, make: Callable[[], Coroutine[Any, Any, T]], then: Callable[[T | None, BaseException | None], None]
    ) -> None:
        try:
            future = self.state.handle.runtime.submit(make)
        except RuntimeStopped as exc:
            then(None, exc)
            return

        def done(f: concurrent.futures.Future[T]) -> None:  # on the loop thread
            if self.silent:  # Sublime has exited: its API is gone
                return
            error = f.exception()
            result = None if error is not None else f.result()
            sublime.set_timeout(lambda: then(result, error) if self.panel.is_valid() else None)

        future.add_done_callback(done)

    def _started(self, session_id: Any, error: BaseException | None) -> None:
        if error is not None:
            self._failed(error)
            return
        self.ready = True
        self.agent_queues = self.session is not None and self.session.queues_prompts
        self.session_id = str(session_id or "")
        remember_session(self, self.session_id)
        self.panel.notice(f"{self.spec.name} is ready. Type below and press Enter; Escape cancels a turn.", "info")
        self._show_status()

    def _turn_done(self, text: str, _reason: Any, error: BaseException | None) -> None:
        self.running = max(0, self.running - 1)
        self.busy = self.running > 0
        if error is not None:
            self._failed(error)
            if not self.panel.prompt_text().strip():  # what the user sent stays theirs to send again
                self.panel.set_prompt(text)
            self._unqueue_all()
        elif self._cancelled and not self.busy:
            self._unqueue_all()
        elif not self.busy:
            found = self.queued.next()  # the turn has ended: the oldest queued prompt goes now
            if found is not None:
                queued, (resources, attached, images) = found
                self._dispatch(queued, resources, attached, images)
        self._show_status()

    def _answered(self, _result: Any, error: BaseException | None) -> None:
        if error is not None:
            self.panel.notice(_reason(error), "warning")

    def _failed(self, error: BaseException) -> None:
        self.ended = True
        review_ui.attention_answered(self.id, None)  # its agent is gone: nothing waits for an answer
        self.ready = False
        self.panel.notice(_reason(error), "warning")
        self.close()
        self._show_status()

    def _state_changed(self) -> None:
        self._show_status()

    def _checkpoint_busy(self, busy: bool) -> None:  # loop thread
        def show() -> None:
            self.checkpointing = max(0, self.checkpointing + (1 if busy else -1))
            if self.state.window.is_valid():
                self._show_status()

        if not self.silent:
            sublime.set_timeout(show)

    def _turn_changed(self, changes: list[FileChange]) -> None:
        """The turn's change set (main thread); the change-set tab shows it when files changed."""
        self.last_changes = changes
        if changes:
            count = f"{len(changes)} file{'s' * (len(changes) != 1)}"
            self.panel.notice(f"This turn changed {count}: they are listed in the Changes tab.", "info")
            self.review_changes(focus=False)

    def review_changes(self, focus: bool = True) -> bool:
        """Open the window's change-set tab on this chat's last turn; False without checkpoints."""
        turns = self.turns
        if turns is None or not self.state.window.is_valid():
            return False
        source = TurnsSource(turns, self.folders, f"{self.spec.name}'s last turn")
        change_set_view.show(self.state.window, self.state.reviews, source, focus)
        return True

    def _show_status(self) -> None:
        self.state.chat_status = status_label(self.state.window)
        status.show(self.state)

    # -- loop thread --

    async def _start(
        self,
        load_session_id: str | None,
        read_limit: int | None,
        config: chat_checkpoints.CheckpointConfig | None,
        mcp: chat_mcp.ChatMcpSettings,
    ) -> str:
        from ...acp.session import ChatFailed, ChatSession  # the SDK loads here, on the first chat

        if mcp.problem:  # nothing starts, nothing is sent
            raise ChatFailed(mcp.problem)

        if config is not None:  # its first checkpoint overlaps the agent's start
            self.checkpoints = chat_checkpoints.ChatCheckpoints(
                config, self.folders, self._checkpoint_busy, lambda text: self.port.notice(text, "warning")
            )
            self.checkpoints.open()

        server = self.state.handle.server  # read on the loop, its thread
        reviews = server.reviews if server is not None else None  # one file, one review, whoever asks
        self.session = ChatSession(
            self.spec,
            self.folders,
            self.state.handle.editor,
            self.port,
            reviews=reviews,
            read_limit_bytes=read_limit,
            servers=chat_mcp.chat_servers(mcp, self.state.handle),  # the window's tools, the user's servers
        )
        if load_session_id:
            await (self.session.reopen if self.reopen else self.session.load)(load_session_id)
        else:
            await self.session.start()
        return self.session.session_id

    async def _prompt(
        self,
        text: str,
        resources: Sequence[Resource],
        mentioned: MentionRules | None = None,
        skip: Sequence[str] = (),
        images: Sequence[Image] = (),
        checkpoint: bool = True,
    ) -> str:
        if self.session is None:
            raise RuntimeError("the chat has not started")
        warn = lambda reason: self.port.notice(reason, "warning")  # noqa: E731
        files = [f for f in await chat_mentions.attached(mentioned, text, skip, warn) if not named_like_image(f.path)]
        if mentioned is not None:  # a typed `@shot.png` goes as an image; a refused one is a warning
            typed, refused = await mentioned_images(self.session, text, mentioned.sharing.exclude, skip)
            images = [*images, *typed]
            for reason in refused:
                warn(f"{reason} The prompt went without it.")
        session, checkpoints = self.session, self.checkpoints
        if checkpoints is None or not checkpoint:
            return await chat_mentions.prompt(session, text, resources, files, warn, images)
        for note in await checkpoints.begin():  # what the user reverted since the last turn
            session.add_note(note)
        session.writes.take()  # what was written between turns belongs to no turn's agent
        try:
            return await chat_mentions.prompt(session, text, resources, files, warn, images)
        finally:
            changes = await checkpoints.end(self.spec.name, *session.writes.take_turn())
            if changes is not None and not self.silent:
                sublime.set_timeout(lambda: self._turn_changed(changes) if self.panel.is_valid() else None)

    async def _cancel(self) -> None:
        if self.session is not None:
            await self.session.cancel()

    async def _call(self, method: str, value: str) -> None:
        if self.session is None:
            raise RuntimeError("the chat has not started")
        await (self.session.set_mode(value) if method == "set_mode" else self.session.set_model(value))

    async def _set_option(self, config_id: str, value: str | bool) -> None:
        if self.session is None:
            raise RuntimeError("the chat has not started")
        await self.session.set_config_option(config_id, value)

    async def _close(self) -> None:
        try:
            if self.session is not None:
                await self.session.close()
        finally:
            if self.checkpoints is not None:
                self.checkpoints.close()


def _reason(error: BaseException) -> str:
    """The one-line reason ChatFailed carries; anything else is ours, with what to do."""
    if type(error).__name__ in ("ChatFailed", "ResourceRefused", "ImageRefused"):  # companion.acp's one-line reasons
        return str(error)
    if isinstance(error, RuntimeStopped):
        return "Gemini Companion has stopped (the package was disabled or reloaded): start a new chat."
    if isinstance(error, asyncio.CancelledError):
        return "The chat was stopped."
    log.warning("chat error: %r", error)
    return f"The chat stopped on an unexpected error ({error!r}); start a new chat, and see the console."


# -- the chats of every window (main thread) --

_chats: dict[int, list[Chat]] = {}  # the window each chat started in -> its chats
_by_view: dict[int, Chat] = {}  # each chat's own view id -> the chat


def open_chat(state: WindowState, key: str, spec: AgentSpec, load: str | None = None, reopen: bool = False) -> Chat:
    chat = Chat(state, key, spec, list(state.window.folders()))
    chat.reopen = reopen
    _chats.setdefault(state.window.id(), []).append(chat)
    state.last_agent = f"chat:{chat.id}"  # Send to Agent goes to the chat opened last, until another is used
    chat.panel.focus_prompt()
    chat.start(load)
    return chat


def chats(window: sublime.Window | None) -> list[Chat]:
    """The chats whose tab is in `window` now (a tab dragged into another window takes its chat along)."""
    if window is None:
        return []
    return [c for c in _by_view.values() if c.panel.is_valid() and c.panel.window.id() == window.id()]


def for_view(view: sublime.View | None) -> Chat | None:
    """The chat whose own view this is (not a clone of it, nor a view restored from an earlier run)."""
    return _by_view.get(view.id()) if view is not None else None


def for_buffer(view: sublime.View | None) -> Chat | None:
    """The chat whose view shares this view's buffer: its own view or a clone of it."""
    if view is None:
        return None
    found = for_view(view)
    if found is not None:
        return found
    buffer_id = view.buffer_id()
    return next((c for c in _by_view.values() if c.panel.buffer_id == buffer_id and c.panel.is_valid()), None)


def of_this_run(value: object) -> bool:
    return isinstance(value, str) and value.startswith(f"{RUN}-")


def close_leftovers(window: sublime.Window) -> None:
    """Close the chat views, and the views of edits applied without review, that an earlier run left
    (hot exit brings scratch views back with their text and settings) or that an earlier load of the
    package left (a reload): their agent is gone. Closed rather than kept as ended transcripts: the
    transcript holds the user's prompts (pasted secrets included) and would stay in the session file
    at every exit; Continue Last Chat brings the conversation back from the agent. Main thread."""
    if not window.is_valid():
        return
    closed = 0
    for view in window.views():
        view_settings = view.settings()
        chat_id, diff_of = view_settings.get(CHAT_SETTING), view_settings.get(DIFF_SETTING)
        leftover = change_set_view.is_leftover(view)  # its change set is gone with the run that showed it
        if (
            leftover
            or (chat_id is not None and not of_this_run(chat_id))
            or (diff_of is not None and not of_this_run(diff_of))
        ):
            closed += chat_id is not None
            view.close()
    if closed:
        sublime.status_message(
            f"Gemini Companion: closed {closed} chat tab(s) of an earlier session, whose agent had stopped; "
            "Gemini Companion: Continue Last Chat brings the last one back."
        )


def target(window: sublime.Window | None) -> Chat | None:
    """The chat the palette acts on: the focused one, else the newest of the window."""
    if window is None:
        return None
    found = for_view(window.active_view())
    if found is not None and not found.ended:
        return found
    live = [c for c in chats(window) if not c.ended]
    return live[-1] if live else None


def view_closed(view: sublime.View) -> None:
    """The user closed a chat's own view (not a clone): its agent stops. Found by the view's id: the
    settings of a view already closed are not to be read."""
    chat = _by_view.pop(view.id(), None)
    if chat is not None:
        review_ui.attention_answered(chat.id, None)  # nothing waits in a closed chat
        chat.close()
        group = _chats.get(chat.state.window.id(), [])
        if chat in group:
            group.remove(chat)
        if chat.state.window.is_valid():
            chat._show_status()  # the closed chat leaves the status bar


def window_closed(state: WindowState) -> None:
    """The window's server goes (window closed, reconcile): each chat's agent stops with it."""
    for chat in _chats.pop(state.window.id(), []):
        _forget(chat)
        if chat.panel.is_valid() and not chat.ended:  # its tab was dragged into another window
            chat.panel.notice("The window this chat started in has closed, and its agent with it: start a new chat.")
        chat.close()


def close_all(api_alive: bool = True) -> list[concurrent.futures.Future[None]]:
    """Unload or exit: stop every chat's agent; the futures end when each agent's tree is gone."""
    closing = [chat.close(api_alive) for group in _chats.values() for chat in group]
    _chats.clear()
    _by_view.clear()
    return closing


def _forget(chat: Chat) -> None:
    for view_id in [v for v, c in _by_view.items() if c is chat]:
        del _by_view[view_id]


def status_label(window: sublime.Window) -> str:
    """The status bar's words for the window's chats: `Chat: Gemini CLI (Default)`."""
    live = [c for c in chats(window) if not c.ended]
    if not live:
        return ""
    focused = for_view(window.active_view())
    chat = focused if focused in live else live[-1]
    assert chat is not None
    more = f" +{len(live) - 1}" if len(live) > 1 else ""
    checkpoint = " · checkpoint…" if any(c.checkpointing for c in live) else ""
    return f"Chat: {chat.mode_label()}{more}{checkpoint}"


def by_target(window: sublime.Window | None, key: str | None) -> Chat | None:
    """The live chat that `WindowState.last_agent` names (`chat:<id>`), if any."""
    if not key or not key.startswith("chat:"):
        return None
    return next((c for c in chats(window) if f"chat:{c.id}" == key and not c.ended), None)


def send_files(
    state: WindowState, chat: Chat, mentions: list[tuple[str, tuple[int, int] | None]], policy: SharingPolicy
) -> None:
    """Send to Agent, into a chat: each file goes with the next prompt as a resource the agent can
    read (its mention is put in the prompt). Nothing goes while sharing is paused, and no file the
    `context_exclude` setting hides: the chat's agent sees no more than the terminals' agents."""
    if state.handle.context.paused:
        sublime.status_message(
            "Gemini Companion: context sharing is paused; nothing was sent to the chat "
            "(Gemini Companion: Pause/Resume Context Sharing)"
        )
        return
    for path, lines in mentions:
        if policy.excludes(path):
            sublime.status_message(
                f"Gemini Companion: {os.path.basename(path)} matches the setting context_exclude; it was not sent"
            )
            continue
        folder = next((f for f in chat.folders if is_inside(path, f)), chat.folders[0])
        chat.attach(terminal.mention(path, folder, lines), Resource(path, lines=lines))
    state.last_agent = f"chat:{chat.id}"


def remember_session(chat: Chat, session_id: str) -> None:
    """The last session of this folder and agent, for Continue Last Chat (written off the main thread)."""
    if not session_id:
        return
    from .history import memory as chat_memory

    chat_memory.remember_later(chat.folders[0], chat.key, session_id)
