"""`python -m companion serve`: the companion without Sublime, on the current folder.
`python -m companion bridge`: the stdio bridge to a window's workspace tools (for Claude Desktop).
`python -m companion chat`: a chat with an ACP agent in the terminal (companion/headless/chat.py).
`python -m companion changes`: the last chat turn's changes in a folder: list, revert, restore.
`python -m companion doctor`: what is set up and what is wrong, without Sublime (headless/doctor.py)."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from . import __version__
from .core.system import pywin32_path
from .core.system.processes import STOP_SIGNALS
from .gemini_ide.discovery import discovery_dir
from .headless.editor import POLICIES, HeadlessEditor
from .mcp_tools.factory import tool_factory
from .mcp_tools.settings import TOOL_NAMES, WorkspaceToolSettings
from .runtime import Runtime

AGENTS = ("gemini", "claude")  # the IDE agents a window can serve: Gemini CLI, Claude Code's /ide


def agent_names(text: str) -> frozenset[str]:
    """An argparse type: a comma-separated list of the agents to serve (`gemini,claude`)."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in AGENTS]
    if unknown or not names:
        wrong = f"{', '.join(unknown)} is not an agent" if unknown else "no agent named"
        raise argparse.ArgumentTypeError(f"{wrong}; give one or both of {','.join(AGENTS)} (e.g. --agents claude)")
    return frozenset(names)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, or 0 for any free one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; give a port from 1 to 65535 (0: any free port)"
        ) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port; give one from 1 to 65535 (0: any free port)")
    return port


INSTALL_HINT = (
    "install the companion with its pinned libraries into this Python (`python -m pip install .` in a clone "
    "of the repository), or run `python3 dev.py serve` in the clone, which installs them itself"
)


def missing_library(exc: ModuleNotFoundError) -> str:
    return f"the library {exc.name or exc} is missing from this Python ({sys.executable}); {INSTALL_HINT}."


def start_failure(exc: BaseException, port: int) -> str:
    """One line saying why the server did not start and what to do."""
    if isinstance(exc, ModuleNotFoundError):
        return missing_library(exc)
    if isinstance(exc, OSError) and exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
        return f"port {port} is already in use; pass another --port, or --port 0 for any free port."
    return str(exc) or type(exc).__name__


# The token files' messages are shared with Sublime, whose fix ends in a reload of the package; in
# `serve` the same fix ends in starting it again.
_SUBLIME_WORDS = (
    ("start Sublime Text (or `serve`) and", "start `serve` and"),
    ("before starting Sublime Text", "before starting `serve`"),
    ("then reload the package", "then start `serve` again"),
)


def headless_words(text: str) -> str:
    """A message shared with Sublime, in the words of `serve` (no package to reload)."""
    for sublime, headless in _SUBLIME_WORDS:
        text = text.replace(sublime, headless)
    return text


def _said_by_serve(record: logging.LogRecord) -> bool:
    """False for the runtime's warning about a token file: `serve` says it in its own line."""
    from .core.system.token_files import TokenFileError

    return not (record.args and isinstance(record.args, tuple) and isinstance(record.args[0], TokenFileError))


def program_name() -> str:
    """How the user ran us: `gemini-companion` (the installed script) or `python -m companion`."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m companion" if name in ("", "__main__.py", "-c") else name


SERVE_EXIT = """exit status:
  0  stopped by Ctrl-C or a stop signal (SIGTERM, SIGHUP, SIGQUIT); the discovery and lock files removed
  1  the companion could not start: one `error:` line on stderr says why
  2  the command line is wrong (a missing folder, an unknown value)"""
BRIDGE_EXIT = """exit status:
  0  the client closed stdin, or Ctrl-C (without a window, each tool call answers with an error meanwhile)
  1  the bridge cannot start (a library is missing): one `error:` line on stderr says why
  2  the command line is wrong (a missing folder, a bad port)"""
CHANGES_EXIT = """exit status:
  0  done: the change set listed, or the files reverted or restored (one line each)
  1  refused, nothing written (no turn recorded, or a file changed since the turn): one `error:` line
  2  the command line is wrong, or --workspace is not a folder"""
DOCTOR_EXIT = """exit status:
  0  no problem found
  1  a problem was found: each is listed with its fix
  2  the command line is wrong, or --workspace is not a folder"""


def _command(commands: Any, name: str, help_text: str, exit_help: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its exit statuses."""
    return commands.add_parser(
        name, help=help_text, epilog=exit_help, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=program_name(), description="Gemini Companion without Sublime.")
    parser.add_argument("--version", action="version", version=f"Gemini Companion {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = _command(commands, "serve", "serve one workspace folder to Gemini CLI until Ctrl-C", SERVE_EXIT)
    serve.add_argument("--workspace", default=os.getcwd(), help="folder to serve (default: the current folder)")
    serve.add_argument("--diff-policy", choices=POLICIES, default="prompt", help="how diffs are answered")
    serve.add_argument("--port", type=port_number, default=0, help="port to listen on (default: any free port)")
    serve.add_argument("--debug", action="store_true", help="verbose logging")
    serve.add_argument("--gemini-command", help="the Gemini CLI program ask_gemini runs (default: gemini on PATH)")
    serve.add_argument("--ask-model", default="", help="model for ask_gemini (-m); default: the CLI's own")
    serve.add_argument("--ask-timeout", type=float, help="seconds before ask_gemini stops the CLI (default 300)")
    serve.add_argument("--write-timeout", type=float, help="seconds write_file waits for a decision (default 600)")
    serve.add_argument("--disable-tool", action="append", choices=TOOL_NAMES, default=[], help="turn a tool off")
    serve.add_argument(
        "--agents",
        type=agent_names,
        default=frozenset(AGENTS),
        help="the agents to serve, comma-separated (default: gemini,claude); without gemini Gemini CLI finds no "
        "discovery file, without claude no lock file is written",
    )
    serve.add_argument("--no-claude", action="store_true", help="the same as leaving claude out of --agents")
    bridge = _command(commands, "bridge", "MCP stdio server forwarding to a window's workspace tools", BRIDGE_EXIT)
    where = bridge.add_mutually_exclusive_group()
    where.add_argument("--workspace", help="the window whose folders contain this folder (default: current folder)")
    where.add_argument(
        "--port", type=port_number, help="the window server on this port (token from its discovery file)"
    )
    bridge.add_argument("--debug", action="store_true", help="verbose logging on stderr")
    add_changes_command(commands)
    doctor = _command(commands, "doctor", "what is set up and what is wrong, without Sublime", DOCTOR_EXIT)
    doctor.add_argument("--workspace", default=os.getcwd(), help="the folder to check (default: the current folder)")
    doctor.add_argument("--json", action="store_true", help="print the report as one JSON object")
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] != ["serve"]:
        # Not for `serve`: the chat's modules would delay the discovery file (a Gemini CLI starting
        # at the same moment reads it once), and serve's arguments never need them.
        from .headless.chat import add_chat_command

        add_chat_command(commands, POLICIES)
    args = parser.parse_args(arguments)
    if args.command == "chat":
        from .headless.chat import run_chat_command

        pywin32_path.make_importable()
        return run_chat_command(args)
    if args.command == "doctor":
        from .headless.doctor import run_doctor

        return run_doctor(args.workspace, args.json)
    if args.command == "changes" and args.comment:
        from .headless.comments import run_comment

        return run_comment(args.workspace, *args.comment)
    if args.command == "changes":
        return run_changes(args.workspace, args.json, args.revert, args.restore)
    if args.command == "bridge":
        pywin32_path.make_importable()  # the bridge imports mcp, which imports pywin32 on Windows
        try:
            from .bridge import run
        except ModuleNotFoundError as exc:
            print(f"error: the bridge cannot start: {missing_library(exc)}", file=sys.stderr)
            return 1
        return run(args.workspace, args.port, args.debug)
    tools = WorkspaceToolSettings.from_mapping(
        {
            "disabled_tools": args.disable_tool,
            "ask_model": args.ask_model,
            "gemini_command": args.gemini_command,
            "ask_timeout_seconds": args.ask_timeout,
            "write_timeout_seconds": args.write_timeout,
        }
    )
    agents: frozenset[str] = args.agents - ({"claude"} if args.no_claude else set())
    if not agents:
        parser.error("--no-claude leaves no agent to serve; give --agents gemini (or drop --no-claude)")
    return run_serve(
        args.workspace,
        args.diff_policy,
        args.port,
        args.debug,
        tools,
        claude="claude" in agents,
        gemini="gemini" in agents,
    )


def add_changes_command(commands: Any) -> None:
    """`changes --workspace DIR [--json | --revert PATH | --restore]`: the last chat turn in DIR."""
    changes = _command(
        commands, "changes", "the last chat turn's changes in a folder: list, revert, restore", CHANGES_EXIT
    )
    changes.add_argument("--workspace", required=True, help="the folder the chat ran in")
    action = changes.add_mutually_exclusive_group()
    action.add_argument("--json", action="store_true", help="print the change set as one JSON object")
    action.add_argument(
        "--revert",
        metavar="PATH",
        help="revert this file (relative to the workspace) to the checkpoint before the turn",
    )
    action.add_argument("--restore", action="store_true", help="restore every file the turn changed")
    action.add_argument(
        "--comment",
        nargs=2,
        metavar=("PATH:LINE", "TEXT"),
        help="a comment on a line (or PATH:FIRST-LAST) that the next chat prompt here carries to the agent",
    )


def run_changes(workspace: str, as_json: bool, revert: str | None, restore_all: bool) -> int:
    """Without an action, the change set as the chat lists it. Exit 0 when done; 1 with one `error:`
    line (nothing written) when refused; 2 for a bad folder."""
    from .core.history.turns import NoTurn, RestoreFailed, RestoreRefused, Turns
    from .core.system.user_cache import user_cache_folder
    from .headless.editor import one_line

    folder = os.path.realpath(workspace)
    if not workspace or not os.path.isdir(folder):
        print(
            f"error: {workspace!r} is not a folder; pass --workspace with the folder the chat ran in.", file=sys.stderr
        )
        return 2
    turns = Turns(user_cache_folder(), [folder])
    try:
        if as_json:
            print(json.dumps({"files": [change.as_json() for change in turns.change_set()]}))
            return 0
        if revert is None and not restore_all:
            found = turns.change_set(counted=True)
            print(f"changes: {len(found)} file{'s' * (len(found) != 1)}" if found else "changes: none")
            for change in found:
                print(f"  {one_line(change.line())}")
            return 0
        # --revert is relative to the workspace, as the listing shows paths (an absolute one stays as it is)
        path = os.path.join(folder, revert) if revert is not None else None
        wanted = [path] if path is not None else [change.path for change in turns.change_set()]
        skipped = turns.revert(None if path is None else [path])
    except (NoTurn, RestoreRefused, RestoreFailed, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for skipped_path in skipped:
        print(f"not restored (the checkpoint did not cover it): {skipped_path}", file=sys.stderr)
    for done in wanted:
        if done not in skipped:
            print(f"reverted {one_line(done)} to the checkpoint before the last turn")
    return 0


def _other_servers(folder: str) -> list[str]:
    """ "PID n, port p" of each live companion whose discovery file names `folder` among its folders."""
    from .core.system.token_files import is_stale
    from .gemini_ide.discovery import our_files

    found = []
    for path, pid, port in our_files(discovery_dir()):
        try:
            with open(path, encoding="utf-8") as handle:
                folders = str(json.load(handle).get("workspacePath", "")).split(os.pathsep)
        except (OSError, ValueError, AttributeError):
            continue
        if folder in folders and not is_stale(path, pid, port, os.getpid()):
            found.append(f"PID {pid}, port {port}")
    return found


def run_serve(
    workspace: str,
    policy: str,
    port: int,
    debug: bool,
    tools: WorkspaceToolSettings | None = None,
    claude: bool = True,
    gemini: bool = True,
) -> int:
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_said_by_serve)  # the unsafe folder's warning once, not twice
    if not workspace.strip():
        print(
            "error: --workspace is empty; give the folder to serve, or leave --workspace out to serve the current one.",
            file=sys.stderr,
        )
        return 2
    folder = os.path.realpath(workspace)
    if not os.path.isdir(folder):
        print(f"error: {workspace} is not a folder; pass --workspace with an existing folder.", file=sys.stderr)
        return 2
    # Before anything starts: a Ctrl-C at any moment (even while starting up) stops cleanly and
    # removes the discovery file, instead of a KeyboardInterrupt that leaves it behind.
    # SIGTERM (kill), SIGHUP (terminal closed) and SIGQUIT (Ctrl-\\) end it the same way.
    stop = threading.Event()
    for name in STOP_SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), lambda *_: stop.set())
    runtime = Runtime()
    factory = tool_factory(tools or WorkspaceToolSettings())
    editor = HeadlessEditor(policy, announce=True)
    for other in _other_servers(folder):
        print(
            f"warning: another companion ({other}) already serves {folder}; a `gemini` started there connects to "
            "either one. Stop the other (Ctrl-C in its terminal) unless you mean to run both.",
            file=sys.stderr,
            flush=True,
        )
    handle = runtime.open_window(editor, [folder], port=port, tool_factory=factory, claude=claude, gemini=gemini)
    try:
        handle.ready.result(30)
    except Exception as exc:
        runtime.stop()
        print(f"error: the companion could not start: {start_failure(exc, port)}", file=sys.stderr)
        return 1
    print(f"Gemini Companion listening on {handle.url}", flush=True)
    if handle.discovery_path:
        print(f"Discovery file: {handle.discovery_path}", flush=True)
    print(f"Workspace: {folder}  (diff policy: {policy})", flush=True)
    if handle.discovery_path and not gemini:
        print("Gemini CLI is not served (--agents): only the bridge reads that file.", flush=True)
    elif handle.discovery_path:
        print("Run `gemini` in that folder (once: `/ide enable`).", flush=True)
    else:
        print(
            f"warning: Gemini CLI cannot find this companion: {headless_words(handle.discovery_problem)}",
            file=sys.stderr,
            flush=True,
        )
    if handle.lock_path:
        print(f"Claude Code lock file: {handle.lock_path}", flush=True)
        print(
            f"Run `CLAUDE_CODE_SSE_PORT={handle.port} claude` in that folder, or `/ide` in a running one.", flush=True
        )
    elif handle.lock_problem:
        problem = headless_words(handle.lock_problem)
        print(f"warning: Claude Code cannot find this companion: {problem}", file=sys.stderr, flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        runtime.stop()
        files = [
            f"the {name} file"
            for name, path in (("discovery", handle.discovery_path), ("lock", handle.lock_path))
            if path
        ]
        removed = f"; {' and '.join(files)} {'were' if len(files) > 1 else 'was'} removed" if files else ""
        print(f"Stopped{removed}.", flush=True)
    if editor.prompting:
        # The prompt thread is blocked reading stdin; a normal exit would wait for stdin's lock at
        # shutdown and abort ("Fatal Python error: could not acquire lock ... stdin"). Everything is
        # cleaned up and flushed: leave now.
        sys.stderr.flush()
        os._exit(0)
    return 0
