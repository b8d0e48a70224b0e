"""`python -m companion chat`: a chat with an ACP agent in a terminal, every edit through the
headless review (unified diff, y/n, or `--diff-policy accept|reject` for every permission).

With `--prompt`, one turn: exit 0 when it ends with `end_turn`, else 1 with a one-line reason on
stderr. Without it, prompts are read from stdin, one a line, until EOF. A turn with an edit that
did not go through the review (or a reviewed file whose bytes are not the accepted ones when the
turn ends) ends with a `warning:` summary line and exit status 3 (applied without
review) or 4 (refused before review), whatever else happened: scripts can tell (`EXIT_HELP`).

Ctrl-C during a turn cancels it (`session/cancel`), a review's question with it, and `>` comes back
when the agent has ended the turn; a second Ctrl-C ends the chat. At the idle `>` prompt, as in
Claude Code and Gemini CLI, the first Ctrl-C clears the line and the second ends the chat (exit 130);
Ctrl-D ends it too (exit as the turns left it). SIGTERM, SIGHUP and SIGQUIT end it at once (exit 128 +
the signal's number). The agent and everything it started are stopped in every case.

Stdin has one reader (console.StdinLines), so a question withdrawn meanwhile never takes the next line.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from ..acp.agents.agents import PRESETS, AgentSpec, custom_agent, demo_agent
from ..acp.prompt.images import ImageRefused, named_like_image
from ..acp.review.unchecked import UncheckedEdits
from ..acp.shown_output import tail
from ..acp.view import Choice, Command, ConfigOption, Location, Mode, NoticeKind, PlanEntry, Rejection, ToolCall, Usage
from ..core.server.chat_servers import ChatServers, McpConfigError, UserServer, read_config
from ..core.system.processes import STOP_SIGNALS
from . import comments, images, mentions
from .changes import print_changes, run_command
from .chat_tools import ChatWindow
from .console import Console, StdinLines, off_the_loop
from .editor import HeadlessEditor, one_line, visible
from .questions import ConsoleQuestions
from .queued import COMMANDS as QUEUE_COMMANDS
from .queued import QueuedLines
from .rewind import rewind

OUTPUT_LINES = 20  # of a tool call's output, printed under its line when it ends

if TYPE_CHECKING:
    from ..acp.session import ChatSession
    from ..core.history.turns import Turns

T = TypeVar("T")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_UNREVIEWED, EXIT_REFUSED = 3, 4  # an edit was applied without review / refused before review
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130, the shell's convention; other stop signals: 128 + their number
_SEVERITY = (EXIT_OK, EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_REFUSED, EXIT_UNREVIEWED)  # the last wins
LOCAL_HELP = """The chat's own commands (not sent to the agent):
  /help          this list
  /mode [ID]     switch the agent to mode ID; without ID, list its modes
  /config [ID VALUE]  set the agent's option ID to VALUE (on/off for a switch); without, list them
  /changes       what the last turn changed (a chat started with --checkpoints)
  /restore [N]   the files as they were before prompt N; /restore lists the points, /restore undo undoes
  /rewind N      the files and the conversation as they were before prompt N; /rewind undo undoes
  /queue         the prompts typed during the turn, sent when it ends; /unqueue drops the last
  //COMMAND      sends /COMMAND to the agent (its own slash commands, such as //help)
Any other line is a prompt for the agent. Ctrl-C cancels a turn (and a review's question with it);
at the `>` prompt it clears the line, and a second one ends the chat; Ctrl-D ends it too.
"""
WAIT_SHOWN_AFTER = 2.0  # seconds of silence before "waiting for the agent… N s" (a terminal only)
EXIT_HELP = """exit status:
  0  the chat ended normally (--prompt: with end_turn, or `cancelled` by the agent right after you
     rejected its edit); every edit went through the review or policy
  1  the chat failed: one `error:` line on stderr says why
  2  the command line is wrong
  3  an edit was applied without review (the agent wrote without asking, or a file you reviewed
     does not hold the bytes you accepted when the turn ends: changed after your review)
  4  an edit was refused before review (it could not be reviewed; the notices say why)
  130  ended by Ctrl-C: twice at the `>` prompt, or again after it cancelled a turn;
       with --prompt, its turn cancelled by Ctrl-C
  129, 131, 143  ended by SIGHUP (the terminal closed), SIGQUIT, SIGTERM (128 + the signal's number)
  3 and 4 win over the others, and 3 over 4; a `warning:` line on stderr names the edits."""


class TerminalView(ConsoleQuestions):
    """The ChatView on a terminal: the reply on stdout, notices and tool calls marked apart. Its
    Console is shared with the review's questions, so the agent's output never lands under one."""

    def __init__(
        self, policy: str, out: TextIO | None = None, console: Console | None = None, interactive: bool = False
    ) -> None:
        self.policy = policy
        self.console = console or Console(out or sys.stdout)
        self.interactive = interactive  # prompts are read from stdin, where `/mode ID` switches
        self._statuses: dict[str, str] = {}
        self._heard = 0  # what came from the agent so far: a "waiting for the agent" line stops

    def heard(self) -> int:
        return self._heard

    def _asked(self) -> None:
        self._heard += 1

    def user_text(self, text: str) -> None:
        self._say(f"\n> {visible(text)}")  # a continued session's history, replayed

    def agent_text(self, text: str) -> None:
        self._say(visible(text))

    def thought(self, text: str) -> None:
        pass  # the reply is what a script reads; thoughts stay out of it

    def tool_call(self, call: ToolCall) -> None:
        if call.status and self._statuses.get(call.tool_call_id) != call.status:
            self._statuses[call.tool_call_id] = call.status
            where = f" ({', '.join(_location(x) for x in call.locations)})" if call.locations else ""
            self._say(f"\n[tool {visible(call.kind)}: {visible(call.title)}{where} — {visible(call.status)}]\n")
            if call.output and call.status in ("completed", "failed"):
                self._say(_output_lines(call.output))

    def plan(self, entries: list[PlanEntry]) -> None:
        lines = "".join(f"\n  [{e.status}] {visible(e.content)}" for e in entries)
        self._say(f"\n[plan]{lines}\n")

    def usage(self, usage: Usage) -> None:
        pass  # a running count on every update would bury the reply

    def available_commands(self, commands: list[Command]) -> None:
        pass  # nothing to complete in a terminal prompt

    def mode(self, current_id: str, modes: list[Mode]) -> None:
        self._say(f"\n[mode: {visible(current_id)}]\n")

    def models(self, current_id: str, models: list[Mode]) -> None:
        pass  # the terminal chat has no model picker

    def config_options(self, options: list[ConfigOption]) -> None:
        pass  # `/config` lists them

    def session_info(self, title: str | None) -> None:
        pass

    def turn_ended(self, stop_reason: str) -> None:
        pass  # the command's exit code, or the REPL's `[reason]`, says it

    def notice(self, text: str, kind: NoticeKind = "info") -> None:
        self._say(f"\n[{'agent' if kind == 'agent' else 'notice'}] {visible(text)}\n")

    def offer_mode(self, text: str, mode: Mode) -> None:
        how = f"type /mode {mode.id}" if self.interactive else f"run the chat with --mode {mode.id}"
        self.notice(f"{text} To review its edits, switch to its mode {mode.id!r}, which asks: {how}.", "warning")

    def status(self, text: str | None) -> None:
        self._heard += 1
        self.console.status(one_line(text) if text else None)

    async def choose(self, title: str, choices: list[Choice]) -> str | Rejection | None:
        if self.policy != "prompt":
            wanted = ("allow_once",) if self.policy == "accept" else ("reject_once", "reject_always")
            found = [c.option_id for kind in wanted for c in choices if c.kind == kind]
            return found[0] if found else None
        self._heard += 1
        menu = "\n".join(f"  {n}) {visible(c.name)}" for n, c in enumerate(choices, 1))
        context, question = f"\nThe agent asks: {visible(title)}\n{menu}\n", f"Choose 1-{len(choices)}: "
        withdrawn = threading.Event()  # a question cancelled before its turn is never asked
        while True:
            try:
                answer = await off_the_loop(self.console.ask, context, question, withdrawn, True)
            except EOFError:
                return None
            except asyncio.CancelledError:  # the turn was cancelled: the agent no longer asks
                withdrawn.set()
                gone = f"\nThe agent no longer asks: {visible(title)}; no answer is needed.\n"
                self.console.withdraw(gone, withdrawn)  # this question, not one that reads alike
                raise
            picked = _picked(answer, choices)
            if picked is not None:
                return picked

    def _say(self, text: str) -> None:
        self._heard += 1
        self.console.say(text)


def _picked(answer: str, choices: list[Choice]) -> str | Rejection | None:
    """The menu's answer: a number, or a reject option's number and the user's reason ("2 not
    now, run the tests first"), which the agent hears (acp/prompt/reasons.py); None for anything else."""
    number, _, reason = answer.strip().partition(" ")
    if not number.isdigit() or not 1 <= int(number) <= len(choices):
        return None
    choice = choices[int(number) - 1]
    if not reason.strip():
        return choice.option_id
    return Rejection(choice.option_id, reason) if choice.kind.startswith("reject") else None


def agent_spec(agent: str | None, command: Sequence[str]) -> AgentSpec:
    """`--agent NAME` or `-- COMMAND ARGS...`, exactly one of them (ValueError says what to give)."""
    if agent and command:
        raise ValueError("give either --agent or a command after `--`, not both")
    if agent == "demo":
        return demo_agent(sys.executable)
    if agent:
        return PRESETS[agent]
    if not command:
        raise ValueError(f"give --agent {'|'.join(PRESETS)}, or the agent's command after `--`")
    return custom_agent(command)


def run_chat(
    workspace: str,
    policy: str,
    prompt: str | None,
    agent: str | None,
    command: Sequence[str],
    mode: str | None = None,
    checkpoints: bool = False,
    login: bool = False,
    mcp_config: str | None = None,
    editor_tools: bool = True,
    resume: str | None = None,
    bell: bool = False,
) -> int:
    folder = os.path.realpath(workspace)
    if not os.path.isdir(folder):
        print(f"error: {workspace} is not a folder; pass --workspace with an existing folder.", file=sys.stderr)
        return EXIT_USAGE
    try:
        spec = agent_spec(agent, command)
    except ValueError as exc:
        print(f"error: {exc}.", file=sys.stderr)
        return EXIT_USAGE
    if mode is not None and not mode.strip():
        print("error: --mode needs the id of one of the agent's modes, such as ask or default.", file=sys.stderr)
        return EXIT_USAGE
    if mode:
        spec = replace(spec, mode=mode.strip())
    try:  # before anything starts: a bad file starts nothing and sends nothing
        user_servers = read_config(mcp_config) if mcp_config is not None else []
    except McpConfigError as exc:
        print(f"error: {exc}; nothing was started.", file=sys.stderr)
        return EXIT_USAGE
    _log_without_the_sdk()
    lines = StdinLines(sys.stdin)  # the one reader of stdin: prompts and every question's answer
    console = Console(sys.stdout, lines=lines)  # the review's questions and the agent's output, one terminal
    console.bell = bell
    # A line typed during a turn is never a later question's answer (see StdinLines): a prompt queued
    # for after the turn (queued.py), or with --prompt, said to go nowhere.
    if prompt is None:
        lines.typed_ahead = QueuedLines(lines, console).typed_ahead
    else:
        lines.typed_ahead = lambda text: console.say(
            f"[typed ahead, not an answer; --prompt takes no more: {visible(text)}]\n"
        )
    editor = HeadlessEditor(policy, console=console)
    editor.closed_by = "the agent withdrew it"
    try:
        view = TerminalView(policy, console=console, interactive=prompt is None)
        servers = _Servers(folder, editor_tools, user_servers)
        code = asyncio.run(_chat(spec, folder, editor, view, prompt, checkpoints, login, servers, resume))
    except KeyboardInterrupt:  # before the chat's own handler was in place, or after it was removed
        _tell("Stopped.")
        code = EXIT_INTERRUPTED
    if lines.started or editor.prompting:
        # The reader of stdin may be blocked in a read: a normal exit would wait for stdin's lock
        # at shutdown (as `serve` explains). Everything is stopped and flushed.
        _flush()
        os._exit(code)
    return code


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # the terminal is gone (SIGHUP)
            pass


class _VisibleFormatter(logging.Formatter):
    """A log line may quote an agent: it must not drive the terminal either."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def _log_without_the_sdk() -> None:
    """Our warnings on stderr, not the SDK's: it logs every agent message it cannot route (such as
    claude-agent-acp's `$/cancel_request` after a cancel) with a traceback on the root logger, and
    the chat already says what went wrong with an agent in one line."""
    spec = importlib.util.find_spec("acp")  # where the SDK lives, without importing it
    folder = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("%(levelname)s %(message)s"))
    if folder:
        handler.addFilter(lambda record: not record.pathname.startswith(folder + os.sep))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


async def _chat(
    spec: AgentSpec,
    folder: str,
    editor: HeadlessEditor,
    view: TerminalView,
    prompt: str | None,
    checkpoints: bool,
    login: bool = False,
    servers: _Servers | None = None,
    resume: str | None = None,
) -> int:
    from ..acp.session import ChatFailed, ChatSession  # the SDK loads here, on the first chat

    servers = servers or _Servers(folder, False, [])
    chat_servers = await servers.open()
    # This command is a process of its own: it may adopt the agent's orphans (process_tree.py).
    session = ChatSession(spec, [folder], editor, view, subreaper=True, servers=chat_servers)
    interrupts = _Interrupts(session, editor, view)
    changes = TurnChanges(folder, spec.name, checkpoints, view.console)
    try:
        # --resume ID: resume, else load; --login: the agent's login methods first
        starting = session.reopen(resume, login=login) if resume else session.start(login=login)
        await interrupts.run(waiting(view.console, starting, "waiting for the agent to start", view.heard))
        if prompt is not None:
            return await _one_turn(session, interrupts, changes, prompt)
        return await _repl(session, interrupts, changes)
    except (ChatFailed, ImageRefused) as exc:
        view.console.end_line()
        _tell(f"error: {one_line(str(exc))}")
        return _checked(session, EXIT_FAILED)
    except asyncio.CancelledError:
        view.console.end_line()
        _tell("Stopped.")
        return _checked(session, 128 + (interrupts.stopped_by or signal.SIGINT))
    finally:
        # The handlers stay through the close (up to a few seconds): a second stop signal meanwhile
        # would otherwise kill us and leave the agent and its temporary folder.
        interrupts.closing = True
        try:
            await session.close()
        finally:
            view.console.abandon()  # a question still on the terminal (a restore's) needs no answer
            interrupts.remove()
            await servers.close()
            if changes.turns is not None:
                changes.turns.close()


class _Servers:
    """The chat's MCP servers: its window's tools (an in-process server, chat_tools.py) and the user's."""

    def __init__(self, folder: str, editor_tools: bool, user: list[UserServer]) -> None:
        self.window = ChatWindow(folder) if editor_tools else None
        self.user = user

    async def open(self) -> ChatServers:
        tools = None
        if self.window is not None:
            try:
                tools = await asyncio.to_thread(self.window.open)
            except Exception as exc:
                _tell(f"warning: the agent gets no editor tools: the window server did not start ({exc!r}).")
        return ChatServers(tools, self.user)

    async def close(self) -> None:
        if self.window is not None:
            await asyncio.to_thread(self.window.close)


def _tell(text: str) -> None:
    """A line on stderr, if it is still there: after SIGHUP the terminal is gone (EIO)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass


class TurnChanges:
    """`chat --checkpoints`: a checkpoint (core/history/turns.py) before each prompt; the turn's change set
    printed after it and left for `changes`. A cache folder that cannot be used costs the chat nothing
    but this: one warning, then no checkpoints. Off unless asked for: the first checkpoint of a large
    folder reads every file in it before the first prompt leaves (bench/README.md, "Checkpoints")."""

    def __init__(self, folder: str, agent: str, enabled: bool, console: Console | None = None) -> None:
        self.turns: Turns | None = None
        self.console = console or Console(sys.stdout)  # asks about a restore's conflicts
        if enabled:  # imported only then: `bridge`, `changes` and a chat without it never load them
            from ..core.history.turns import Turns
            from ..core.system.user_cache import user_cache_folder

            self.turns = Turns(user_cache_folder(), [folder], watch=True)
        self.agent = agent
        self.off = not enabled
        self.texts: list[str] = []  # the prompts that have a checkpoint, in order

    async def turn(self, session: ChatSession, interrupts: _Interrupts, text: str) -> str:
        resources = await mentions.attached(session.folders, text)  # `@path`: the file goes with it
        for note in await comments.take_notes(session.folders):  # `changes --comment`, once
            session.add_note(note)
        resources = [r for r in resources if not named_like_image(r.path)]  # an image goes as one:
        pictures = await images.attached(session, text)  # `@shot.png` (ImageRefused: nothing is sent)
        if self.turns is None:
            return await interrupts.turn(mentions.prompt(session, text, resources, pictures))
        if await waiting(self.console, self._run(self.turns.begin), self._scanned) is not None:
            self.texts.append(text)  # shown beside its restore point
        for note in await self._run(self.turns.take_notes) or []:  # what the user reverted since
            session.add_note(note)
        session.writes.take()  # what was written between turns belongs to no turn's agent
        try:
            return await interrupts.turn(mentions.prompt(session, text, resources, pictures))
        finally:
            found = await self._run(self.turns.end, self.agent, *session.writes.take_turn())
            if found is not None:
                print_changes(found)

    def _scanned(self) -> str:
        """The first checkpoint of a large folder reads every file: say how far it is."""
        count = self.turns.checkpointer.scanned if self.turns is not None else 0
        return f"checkpoint: {count:,} files".replace(",", " ") if count else "checkpoint of the workspace"

    async def command(self, words: list[str]) -> None:
        """`/restore ...` or `/changes` between turns."""
        if self.turns is None or self.off:
            print("error: this chat keeps no checkpoints; start it with --checkpoints to restore or list changes.")
            return
        await run_command(self.turns, words, self.console.ask, sys.stdin.isatty(), self.texts)

    async def rewind(self, session: ChatSession, words: list[str]) -> None:
        """`/rewind N` or `/rewind undo` between turns (headless/rewind.py)."""
        if self.turns is None or self.off:
            print("error: this chat keeps no checkpoints; start it with --checkpoints to rewind.")
            return
        turns = self.turns
        ask, interactive = self.console.ask, sys.stdin.isatty()
        await rewind(session, words[1:], lambda w: run_command(turns, w, ask, interactive, self.texts))

    async def _run(self, call: Callable[..., T], *args: Any) -> T | None:
        if self.off:
            return None
        try:  # a daemon thread: Ctrl-C during a long scan ends the chat at once, not after the scan
            return await off_the_loop(call, *args)
        except (OSError, ValueError) as exc:
            self.off = True
            _tell(f"warning: no checkpoints for this chat ({one_line(str(exc))}); `changes` cannot revert its turns.")
            return None


async def _one_turn(session: ChatSession, interrupts: _Interrupts, changes: TurnChanges, prompt: str) -> int:
    stop = await changes.turn(session, interrupts, prompt)
    print(flush=True)
    if stop == "end_turn" or session.stopped_after_rejection(stop):  # the view said the agent stopped
        return _checked(session, EXIT_OK)
    if interrupts.cancelled_turn:  # your Ctrl-C: the shell's status for an interrupt, no error
        return _checked(session, EXIT_INTERRUPTED)
    print(f"error: the turn ended with {one_line(stop)!r} instead of end_turn.", file=sys.stderr, flush=True)
    return _checked(session, EXIT_FAILED)


async def _repl(session: ChatSession, interrupts: _Interrupts, changes: TurnChanges) -> int:
    mode = visible(session.mode) if session.mode else "the agent’s own"
    console = changes.console
    name = visible(session.spec.name)
    console.say(f"Chat with {name} (mode: {mode}); /help lists the chat's commands, Ctrl-D ends it.\n")
    code = EXIT_OK
    while True:
        try:
            line = await interrupts.prompt(console)
        except EOFError:
            console.end_line()  # Ctrl-D leaves the cursor after `> `
            return code
        if not line.strip():
            continue
        word = line.split()[0]
        if word == "/help":
            console.say(LOCAL_HELP)
            continue
        if word == "/mode":
            await _switch_mode(session, line.split()[1:])
            continue
        if word == "/config":
            await config_command(session, line.split()[1:], console)
            continue
        if word in ("/restore", "/changes"):
            await changes.command(line.split())
            continue
        if word == "/rewind":
            await changes.rewind(session, line.split())
            continue
        if word in QUEUE_COMMANDS:  # at `>`: the lines typed ahead not sent yet
            QueuedLines(interrupts.lines, console).command(word)
            continue
        if word.startswith("//"):  # the agent's own slash command, such as //help
            line = line.lstrip()[1:]
        try:
            stop = await changes.turn(session, interrupts, line)
        except ImageRefused as exc:  # one line; the chat goes on
            console.say(f"[notice] {visible(str(exc))}\n")
            continue
        console.end_line()
        if stop != "end_turn":
            console.say(f"[{one_line(stop)}]\n")
        code = _checked(session, code)


def _checked(session: ChatSession, code: int) -> int:
    """The exit status once the turn's edits that skipped the review are told (a `warning:` line)."""
    unchecked = session.unchecked.take()
    summary = _summary(unchecked)
    if not summary:
        return code
    print(f"warning: {summary}", file=sys.stderr, flush=True)
    found = EXIT_UNREVIEWED if unchecked.applied.count or unchecked.changed.count else EXIT_REFUSED
    return max(code, found, key=_severity)


def _severity(code: int) -> int:
    """3 and 4 win over everything; a stop signal's 128 + N ranks as Ctrl-C's 130."""
    return _SEVERITY.index(code if code in _SEVERITY else EXIT_INTERRUPTED)


async def waiting(
    console: Console, awaitable: Awaitable[T], label: str | Callable[[], str], heard: Callable[[], int] = int
) -> T:
    """`awaitable`, with "LABEL… N s" as the status line after WAIT_SHOWN_AFTER s, rewritten each
    second until `heard()` changes (the agent said something): on a terminal only; a pipe gets
    nothing (a line a second would bury the reply, and the end says what happened anyway)."""
    if not console.rewrites:
        return await awaitable
    shown = threading.Event()

    async def tick() -> None:
        started, before = time.monotonic(), heard()
        await asyncio.sleep(WAIT_SHOWN_AFTER)
        while heard() == before:
            shown.set()
            words = label if isinstance(label, str) else label()
            console.status(f"{words}… {int(time.monotonic() - started)} s")
            await asyncio.sleep(1)

    ticker = asyncio.ensure_future(tick())
    try:
        return await awaitable
    finally:
        ticker.cancel()
        if shown.is_set():
            console.status(None)


def _summary(unchecked: UncheckedEdits) -> str:
    kinds = (
        (unchecked.applied, "applied without review", "run the agent in a mode that asks before editing"),
        (unchecked.changed, "changed after your review", "the file on disk is not what you accepted; check it"),
        (unchecked.refused, "refused before review", "the notices above say why"),
    )
    parts = [f"{_edits(t.count)} {what} ({one_line(t.names())}): {then}" for t, what, then in kinds if t.count]
    return "; ".join(parts) + "." if parts else ""


def _edits(count: int) -> str:
    return "1 edit" if count == 1 else f"{count} edits"


async def _switch_mode(session: ChatSession, words: list[str]) -> None:
    """`/mode ID` in the interactive chat: session/set_mode (a failing agent ends the chat)."""
    ids = [m.id for m in session.modes or []]
    if len(words) != 1 or words[0] not in ids:
        print(f"Modes of {visible(session.spec.name)}: {', '.join(visible(i) for i in ids) or 'none'}; type /mode ID.")
        return
    await session.set_mode(words[0])


async def config_command(session: ChatSession, words: list[str], console: Console) -> None:
    """`/config` lists the agent's config options; `/config ID VALUE` sets one (a bad value: one
    line, nothing sent; the agent's refusal: one line, the chat goes on)."""
    from ..acp.asks import config_options
    from ..acp.session import ChatFailed

    options = session.config
    option = next((o for o in options if words and o.id == words[0]), None)
    if len(words) != 2 or option is None:
        listed = "".join(
            f"  {visible(o.id)} ({visible(o.name)}): {visible(config_options.current_text(o))}"
            f"  [{visible(config_options.values_text(o))}]\n"
            for o in options
        )
        name = visible(session.spec.name)
        said = f"Options of {name}:\n{listed}Type /config ID VALUE.\n" if options else f"{name} offers no options.\n"
        console.say(said)
        return
    try:
        await session.set_config_option(option.id, config_options.parse_value(option, words[1]))
    except (ValueError, ChatFailed) as exc:
        console.say(f"error: {visible(one_line(str(exc)))}\n")
        return
    changed = next((o for o in session.config if o.id == option.id), option)
    console.say(f"[{visible(changed.name)}: {visible(config_options.current_text(changed))}]\n")


class _Interrupts:
    """Ctrl-C: during a turn, the first cancels it (session/cancel); otherwise it stops the chat.
    The other stop signals (kill, a closed terminal, as `serve` handles them) stop the chat at once,
    which still stops the agent with all it started and removes its temporary folder."""

    def __init__(self, session: ChatSession, editor: HeadlessEditor, view: TerminalView) -> None:
        self.session = session
        self.editor = editor
        self.view = view
        self.lines = view.console.lines or StdinLines(sys.stdin)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[Any] | None = None
        self._in_turn = False
        self.cancelled_turn = False  # the user's Ctrl-C cancelled the last turn
        self._at_prompt = False
        self._cleared = False  # a Ctrl-C at `>` cleared the line: the next one ends the chat
        self.stopped_by: int | None = None  # the signal that ended the chat
        self._previous: dict[int, Any] = {}  # Windows: the handlers signal.signal replaced
        self._added: list[int] = []  # elsewhere: the signals the loop handles
        self._cancelling: asyncio.Future[None] | None = None
        self.closing = False  # the chat is stopping: further signals change nothing

    async def run(self, awaitable: Awaitable[T]) -> T:
        self._install()
        return await awaitable

    async def turn(self, awaitable: Awaitable[T]) -> T:
        self._install()
        self._in_turn, self.cancelled_turn = True, False
        self.editor.closed_by = "the agent withdrew it"
        try:
            return await waiting(self.view.console, awaitable, "waiting for the agent", self.view.heard)
        finally:
            self._in_turn = False

    async def prompt(self, console: Console) -> str:
        """The next line typed at `>` (EOFError at the end of input). A first Ctrl-C here clears the
        line (the terminal drops what was typed) and says how to end; a second one ends the chat."""
        self._install()
        console.prompt("> ")
        self._at_prompt = True
        ahead = self.lines.queued() > 0  # typed during the turn: the terminal echoed it back then
        try:
            line = await self.lines.next_line()
        finally:
            self._at_prompt = False
        if ahead:
            console.say(f"{visible(line)}\n")  # what is sent now, after its `>`
        console.line_read()
        self._cleared = False
        return line

    def _install(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        for name in STOP_SIGNALS:
            if hasattr(signal, name):
                number = getattr(signal, name)
                if sys.platform != "win32":
                    # The loop's own handler writes the signal to its wake-up pipe: the kernel may hand a
                    # terminal's SIGINT to the stdin reader's thread, and a plain handler would then run
                    # only when something else woke the loop (a Ctrl-C at `>` went unanswered).
                    self._loop.add_signal_handler(number, self._from_signal, number)
                    self._added.append(number)
                else:  # no add_signal_handler: signal.signal, handing over to the loop's thread
                    self._previous[number] = signal.signal(number, self._from_signal)

    def _from_signal(self, number: int, *_: object) -> None:
        if self._loop is None:
            return
        try:
            self._loop.call_soon_threadsafe(self._on_interrupt if number == signal.SIGINT else self._stop, number)
        except RuntimeError:
            pass  # the loop is closed: the chat is ending anyway

    def _stop(self, number: int) -> None:
        if self._main is not None and not self.closing:
            self.stopped_by = self.stopped_by or number
            self.editor.closed_by = "the chat is ending, so the change is not made"
            self._main.cancel()

    def _on_interrupt(self, number: int) -> None:
        if self.closing:
            return
        console = self.view.console
        if self._in_turn and not self.cancelled_turn:
            self.cancelled_turn = True
            self.editor.closed_by = "you cancelled the turn (Ctrl-C), so the change is not made"
            console.end_line()
            _tell("[cancelling the turn; Ctrl-C again ends the chat]")
            self._cancelling = asyncio.ensure_future(self.session.cancel())
        elif self._at_prompt and not self._cleared:
            self._cleared = True
            console.end_line()  # after the ^C the terminal echoed
            console.say("[Ctrl-C again, or Ctrl-D, ends the chat]\n")
            console.prompt("> ")
        else:
            self._stop(number)

    def remove(self) -> None:
        for number in self._added:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_signal_handler(number)
        for number, previous in self._previous.items():
            signal.signal(number, previous)


def add_chat_command(commands: Any, policies: Sequence[str]) -> None:
    """The `chat` sub-command: `chat --workspace DIR [--diff-policy prompt|accept|reject]
    [--prompt TEXT] [--mode ID] [--checkpoints] [--mcp-config FILE] [--no-editor-tools] -- COMMAND [ARGS...]`,
    or `--agent gemini|claude` instead of the command."""
    chat = commands.add_parser(
        "chat",
        help="chat with an ACP agent in the terminal, every edit through a review",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s --workspace DIR [--diff-policy prompt|accept|reject] [--prompt TEXT] [--mode ID] "
        "[--checkpoints] [--login] [--mcp-config FILE] [--no-editor-tools] [--sessions [--json] | --resume ID] "
        "[--bell] (--agent gemini|claude|demo | -- COMMAND [ARGS...])",
    )
    chat.add_argument("--workspace", required=True, help="the folder the agent works in")
    chat.add_argument("--diff-policy", choices=policies, default="prompt", help="how permissions are answered")
    chat.add_argument("--prompt", help="send this one prompt, print the reply, exit when the turn ends")
    chat.add_argument(
        "--agent",
        choices=[*sorted(PRESETS), "demo"],
        help="a preset agent instead of a command; demo: a built-in offline agent (no account, no network)",
    )
    chat.add_argument("--mode", help="the agent's session mode to run in (default: the one that asks before each edit)")
    chat.add_argument(
        "--checkpoints",
        action="store_true",
        help="a checkpoint of the folder before each prompt: print what each turn changed, and let "
        "`changes` revert a file or restore the folder",
    )
    chat.add_argument(
        "--login",
        action="store_true",
        help="offer the agent's login methods before the session starts (also offered when it says it needs one)",
    )
    chat.add_argument(
        "--mcp-config",
        metavar="FILE",
        help='your own MCP servers for the agent, in the {"mcpServers": {...}} format of Claude and Gemini CLI',
    )
    chat.add_argument(
        "--no-editor-tools",
        action="store_true",
        help="do not give the agent this workspace's tools (list_files, read_file, get_diagnostics) over MCP",
    )
    chat.add_argument("--sessions", action="store_true", help="list the agent's past sessions in the folder, and exit")
    chat.add_argument("--json", action="store_true", help="with --sessions: a JSON list (sessionId, title, updatedAt)")
    chat.add_argument("--resume", metavar="ID", help="open the past session ID again (resume, else load) and go on")
    chat.add_argument(
        "--bell",
        action="store_true",
        help="ring the terminal's bell (BEL) before each question the agent waits on: a permission, a review",
    )
    chat.add_argument("agent_command", nargs="*", metavar="COMMAND", help="the agent's command line, after --")


def run_chat_command(args: Any) -> int:
    command = list(args.agent_command)
    if command[:1] == ["--"]:  # older argparse keeps it for nargs="*"
        command = command[1:]
    if args.sessions or args.json:
        return _sessions(args, command)
    return run_chat(
        args.workspace,
        args.diff_policy,
        args.prompt,
        args.agent,
        command,
        args.mode,
        args.checkpoints,
        args.login,
        args.mcp_config,
        not args.no_editor_tools,
        args.resume,
        args.bell,
    )


def _sessions(args: Any, command: list[str]) -> int:
    """`--sessions [--json]`: the listing (headless/sessions.py) instead of a chat."""
    from .sessions import print_sessions

    folder = os.path.realpath(args.workspace)
    try:
        if not args.sessions or args.resume or args.prompt is not None:
            raise ValueError("--json goes with --sessions, and --sessions with no --resume or --prompt")
        if not os.path.isdir(folder):
            raise ValueError(f"{args.workspace} is not a folder; pass --workspace with an existing folder")
        spec = agent_spec(args.agent, command)
    except ValueError as exc:
        print(f"error: {exc}.", file=sys.stderr)
        return EXIT_USAGE
    _log_without_the_sdk()
    return print_sessions(spec, folder, args.json)


def _location(location: Location) -> str:
    """`path:line` (1-based; the protocol's line is 0-based), as editors and terminals link it."""
    line = location.line
    shown = visible(location.path)
    return f"{shown}:{line + 1}" if isinstance(line, int) and not isinstance(line, bool) and line >= 0 else shown


def _output_lines(output: str) -> str:
    """The last OUTPUT_LINES lines of a call's output, indented under its line, without escapes."""
    lines = tail(output).rstrip("\n").split("\n")[-OUTPUT_LINES:]
    return "".join(f"  │ {visible(line)}\n" for line in lines)
