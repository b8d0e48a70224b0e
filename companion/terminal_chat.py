"""`python -m companion chat`: a chat with an ACP agent in a terminal, every edit through the
headless review (unified diff, y/n, or `--diff-policy accept|reject` for every permission).

With `--prompt`, one turn: exit 0 when it ends with `end_turn`, else 1 with a one-line reason on
stderr. Without it, prompts are read from stdin, one a line, until EOF. A turn with an edit that
did not go through the review ends with a `warning:` summary line and exit status 3 (applied without
review) or 4 (refused before review), whatever else happened: scripts can tell (`EXIT_HELP`). Ctrl-C during a turn
cancels it (`session/cancel`); a second Ctrl-C, or one between turns, ends the chat. The agent and
everything it started are stopped in every case.
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from .acp.agents import PRESETS, AgentSpec, custom_agent, demo_agent
from .acp.unchecked import UncheckedEdits
from .acp.view import Choice, Command, ConfigOption, Mode, NoticeKind, PlanEntry, ToolCall, Usage
from .console import Console
from .core.processes import STOP_SIGNALS
from .headless import HeadlessEditor, one_line, visible
from .terminal_restore import print_changes, run_command

if TYPE_CHECKING:
    from .acp.session import ChatSession
    from .core.turns import Turns

T = TypeVar("T")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_UNREVIEWED, EXIT_REFUSED = 3, 4  # an edit was applied without review / refused before review
_SEVERITY = (EXIT_OK, EXIT_USAGE, EXIT_FAILED, EXIT_REFUSED, EXIT_UNREVIEWED)  # the last one wins
EXIT_HELP = """exit status:
  0  the chat ended normally (--prompt: with end_turn); every edit went through the review or policy
  1  the chat failed: one `error:` line on stderr says why
  2  the command line is wrong
  3  an edit was applied without review (the agent wrote without asking)
  4  an edit was refused before review (it could not be reviewed; the notices say why)
  3 and 4 win over 1, and 3 over 4; a `warning:` line on stderr names the edits."""


class TerminalView:
    """The ChatView on a terminal: the reply on stdout, notices and tool calls marked apart. Its
    Console is shared with the review's questions, so the agent's output never lands under one."""

    def __init__(
        self, policy: str, out: TextIO | None = None, console: Console | None = None, interactive: bool = False
    ) -> None:
        self.policy = policy
        self.console = console or Console(out or sys.stdout)
        self.interactive = interactive  # prompts are read from stdin, where `/mode ID` switches
        self._statuses: dict[str, str] = {}

    def user_text(self, text: str) -> None:
        self._say(f"\n> {visible(text)}")  # a continued session's history, replayed

    def agent_text(self, text: str) -> None:
        self._say(visible(text))

    def thought(self, text: str) -> None:
        pass  # the reply is what a script reads; thoughts stay out of it

    def tool_call(self, call: ToolCall) -> None:
        if call.status and self._statuses.get(call.tool_call_id) != call.status:
            self._statuses[call.tool_call_id] = call.status
            where = f" ({', '.join(visible(x.path) for x in call.locations)})" if call.locations else ""
            self._say(f"\n[tool {visible(call.kind)}: {visible(call.title)}{where} — {visible(call.status)}]\n")

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
        pass  # the terminal chat has no settings menu

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
        self.console.status(one_line(text) if text else None)

    async def choose(self, title: str, choices: list[Choice]) -> str | None:
        if self.policy != "prompt":
            wanted = ("allow_once",) if self.policy == "accept" else ("reject_once", "reject_always")
            found = [c.option_id for kind in wanted for c in choices if c.kind == kind]
            return found[0] if found else None
        menu = "\n".join(f"  {n}) {visible(c.name)}" for n, c in enumerate(choices, 1))
        context, question = f"\nThe agent asks: {visible(title)}\n{menu}\n", f"Choose 1-{len(choices)}: "
        withdrawn = threading.Event()  # a question cancelled before its turn is never asked
        while True:
            try:
                answer = await asyncio.to_thread(self.console.ask, context, question, withdrawn)
            except EOFError:
                return None
            except asyncio.CancelledError:  # the turn was cancelled: the agent no longer asks
                withdrawn.set()
                self.console.withdraw(f"\nThe agent no longer asks: {visible(title)}; no answer is needed.\n", question)
                raise
            if answer.strip().isdigit() and 1 <= int(answer) <= len(choices):
                return choices[int(answer) - 1].option_id

    def _say(self, text: str) -> None:
        self.console.say(text)


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
    _log_without_the_sdk()
    console = Console(sys.stdout)  # the review's questions and the agent's output, one terminal
    editor = HeadlessEditor(policy, console=console)
    try:
        view = TerminalView(policy, console=console, interactive=prompt is None)
        code = asyncio.run(_chat(spec, folder, editor, view, prompt, checkpoints))
    except KeyboardInterrupt:
        code = EXIT_FAILED
    if editor.prompting:
        # The review's prompt thread may be blocked reading stdin: a normal exit would wait for
        # stdin's lock at shutdown (as `serve` explains). Everything is stopped and flushed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


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
    spec: AgentSpec, folder: str, editor: HeadlessEditor, view: TerminalView, prompt: str | None, checkpoints: bool
) -> int:
    from .acp.session import ChatFailed, ChatSession  # the SDK loads here, on the first chat

    # This command is a process of its own: it may adopt the agent's orphans (process_tree.py).
    session = ChatSession(spec, [folder], editor, view, subreaper=True)
    interrupts = _Interrupts(session)
    changes = TurnChanges(folder, spec.name, checkpoints, view.console)
    try:
        await interrupts.run(session.start())
        if prompt is not None:
            return await _one_turn(session, interrupts, changes, prompt)
        return await _repl(session, interrupts, changes)
    except ChatFailed as exc:
        _tell(f"\nerror: {one_line(str(exc))}")
        return _checked(session, EXIT_FAILED)
    except asyncio.CancelledError:
        _tell("\nStopped.")
        return _checked(session, EXIT_FAILED)
    finally:
        # The handlers stay through the close (up to a few seconds): a second stop signal meanwhile
        # would otherwise kill us and leave the agent and its temporary folder.
        interrupts.closing = True
        try:
            await session.close()
        finally:
            interrupts.remove()
            if changes.turns is not None:
                changes.turns.close()


def _tell(text: str) -> None:
    """A line on stderr, if it is still there: after SIGHUP the terminal is gone (EIO)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass


class TurnChanges:
    """`chat --checkpoints`: a checkpoint (core/turns.py) before each prompt; the turn's change set
    printed after it and left for `changes`. A cache folder that cannot be used costs the chat nothing
    but this: one warning, then no checkpoints. Off unless asked for: the first checkpoint of a large
    folder reads every file in it before the first prompt leaves (bench/README.md, "Checkpoints")."""

    def __init__(self, folder: str, agent: str, enabled: bool, console: Console | None = None) -> None:
        self.turns: Turns | None = None
        self.console = console or Console(sys.stdout)  # asks about a restore's conflicts
        if enabled:  # imported only then: `bridge`, `changes` and a chat without it never load them
            from .core.turns import Turns
            from .core.user_cache import user_cache_folder

            self.turns = Turns(user_cache_folder(), [folder], watch=True)
        self.agent = agent
        self.off = not enabled

    async def turn(self, session: ChatSession, interrupts: _Interrupts, text: str) -> str:
        if self.turns is None:
            return await interrupts.turn(session.prompt(text))
        await self._run(self.turns.begin)
        for note in await self._run(self.turns.take_notes) or []:  # what the user reverted since
            session.add_note(note)
        session.writes.take()  # what was written between turns belongs to no turn's agent
        try:
            return await interrupts.turn(session.prompt(text))
        finally:
            found = await self._run(self.turns.end, self.agent, *session.writes.take_turn())
            if found is not None:
                print_changes(found)

    async def command(self, words: list[str]) -> None:
        """`/restore ...` or `/changes` between turns."""
        if self.turns is None or self.off:
            print("error: this chat keeps no checkpoints; start it with --checkpoints to restore or list changes.")
            return
        await run_command(self.turns, words, self.console.ask, sys.stdin.isatty())

    async def _run(self, call: Callable[..., T], *args: Any) -> T | None:
        if self.off:
            return None
        try:
            return await asyncio.to_thread(call, *args)
        except (OSError, ValueError) as exc:
            self.off = True
            _tell(f"warning: no checkpoints for this chat ({one_line(str(exc))}); `changes` cannot revert its turns.")
            return None


async def _one_turn(session: ChatSession, interrupts: _Interrupts, changes: TurnChanges, prompt: str) -> int:
    stop = await changes.turn(session, interrupts, prompt)
    print(flush=True)
    if stop == "end_turn":
        return _checked(session, EXIT_OK)
    print(f"error: the turn ended with {one_line(stop)!r} instead of end_turn.", file=sys.stderr, flush=True)
    return _checked(session, EXIT_FAILED)


async def _repl(session: ChatSession, interrupts: _Interrupts, changes: TurnChanges) -> int:
    mode = visible(session.mode) if session.mode else "the agent’s own"
    print(f"Chat with {visible(session.spec.name)} (mode: {mode}); Ctrl-D ends it.", flush=True)
    code = EXIT_OK
    while True:
        try:
            line = await interrupts.run(asyncio.to_thread(input, "> "))
        except EOFError:
            return code
        if not line.strip():
            continue
        if line.split()[0] == "/mode":
            await _switch_mode(session, line.split()[1:])
            continue
        if line.split()[0] in ("/restore", "/changes"):
            await changes.command(line.split())
            continue
        stop = await changes.turn(session, interrupts, line)
        print(f"\n[{one_line(stop)}]" if stop != "end_turn" else "", flush=True)
        code = _checked(session, code)


def _checked(session: ChatSession, code: int) -> int:
    """The exit status once the turn's edits that skipped the review are told (a `warning:` line)."""
    unchecked = session.unchecked.take()
    summary = _summary(unchecked)
    if not summary:
        return code
    print(f"warning: {summary}", file=sys.stderr, flush=True)
    found = EXIT_UNREVIEWED if unchecked.applied.count else EXIT_REFUSED
    return max(code, found, key=_SEVERITY.index)


def _summary(unchecked: UncheckedEdits) -> str:
    kinds = (
        (unchecked.applied, "applied without review", "run the agent in a mode that asks before editing"),
        (unchecked.refused, "refused before review", "the notices above say why"),
    )
    parts = [f"{_edits(t.count)} {what} ({one_line(t.names())}): {then}" for t, what, then in kinds if t.count]
    return "; ".join(parts) + "." if parts else ""


def _edits(count: int) -> str:
    return "1 edit" if count == 1 else f"{count} edits"


async def _switch_mode(session: ChatSession, words: list[str]) -> None:
    """`/mode ID` in the interactive chat: session/set_mode (a failing agent ends the chat)."""
    ids = [m.id for m in session.modes]
    if len(words) != 1 or words[0] not in ids:
        print(f"Modes of {visible(session.spec.name)}: {', '.join(visible(i) for i in ids) or 'none'}; type /mode ID.")
        return
    await session.set_mode(words[0])


class _Interrupts:
    """Ctrl-C: during a turn, the first cancels it (session/cancel); otherwise it stops the chat.
    The other stop signals (kill, a closed terminal, as `serve` handles them) stop the chat at once,
    which still stops the agent with all it started and removes its temporary folder."""

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[Any] | None = None
        self._in_turn = False
        self._cancelled_turn = False
        self._previous: dict[int, Any] = {}
        self._cancelling: asyncio.Future[None] | None = None
        self.closing = False  # the chat is stopping: further signals change nothing

    async def run(self, awaitable: Awaitable[T]) -> T:
        self._install()
        return await awaitable

    async def turn(self, awaitable: Awaitable[T]) -> T:
        self._install()
        self._in_turn, self._cancelled_turn = True, False
        try:
            return await awaitable
        finally:
            self._in_turn = False

    def _install(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        # signal.signal works on every platform; the handler hands over to the loop's thread.
        for name in STOP_SIGNALS:
            if hasattr(signal, name):
                number = getattr(signal, name)
                self._previous[number] = signal.signal(number, self._from_signal)

    def _from_signal(self, number: int, *_: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._on_interrupt if number == signal.SIGINT else self._stop)

    def _stop(self) -> None:
        if self._main is not None and not self.closing:
            self._main.cancel()

    def _on_interrupt(self) -> None:
        if self.closing:
            return
        if self._in_turn and not self._cancelled_turn:
            self._cancelled_turn = True
            print("\n[cancelling the turn; Ctrl-C again to stop the chat]", file=sys.stderr, flush=True)
            self._cancelling = asyncio.ensure_future(self.session.cancel())
        else:
            self._stop()

    def remove(self) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)


def add_chat_command(commands: Any, policies: Sequence[str]) -> None:
    """The `chat` sub-command: `chat --workspace DIR [--diff-policy prompt|accept|reject]
    [--prompt TEXT] [--mode ID] [--checkpoints] -- COMMAND [ARGS...]`, or `--agent gemini|claude` instead of
    the command."""
    chat = commands.add_parser(
        "chat",
        help="chat with an ACP agent in the terminal, every edit through a review",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s --workspace DIR [--diff-policy prompt|accept|reject] [--prompt TEXT] [--mode ID] "
        "[--checkpoints] (--agent gemini|claude|demo | -- COMMAND [ARGS...])",
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
    chat.add_argument("agent_command", nargs="*", metavar="COMMAND", help="the agent's command line, after --")


def run_chat_command(args: Any) -> int:
    command = list(args.agent_command)
    if command[:1] == ["--"]:  # older argparse keeps it for nargs="*"
        command = command[1:]
    return run_chat(args.workspace, args.diff_policy, args.prompt, args.agent, command, args.mode, args.checkpoints)
