"""`ask_gemini`: run the user's Gemini CLI headless (`gemini --prompt=PROMPT -o json [-m MODEL]`) in a folder.

The CLI prints one JSON object, `{"response": ..., "stats": ..., "error": {"type", "message"}}`
(`JsonFormatter` in @google/gemini-cli-core); errors may come on stderr instead. A timeout or a
cancelled call kills the CLI and everything it started (psutil walks the process tree; without
psutil only the CLI itself is killed).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

from ..core.files.paths import WorkspaceError
from ..core.system.processes import descendants, kill_and_wait, kill_one, new_group
from ..core.system.user_paths import expand_program
from ..core.troubleshooting import troubleshooting
from .gemini_trust import TRUST_FIX, UNTRUSTED_EXIT_CODE
from .windows_shim import NotResolved, direct_argv

_TAIL = 2000
TROUBLESHOOTING_ENTRY = "ask_gemini-says-the-folder-is-not-trusted"  # the README's entry


class GeminiFailed(WorkspaceError):
    pass


def command_line(gemini_command: Sequence[str], prompt: str, model: str, platform: str = sys.platform) -> list[str]:
    if not gemini_command:
        raise GeminiFailed('The gemini_command setting is empty; set it to the Gemini CLI program (e.g. "gemini").')
    program = expand_program(gemini_command)[0]
    found = shutil.which(program)
    if found is None:
        raise GeminiFailed(
            f"The Gemini CLI ({program!r}) was not found on PATH. Install it (`npm install -g @google/gemini-cli`) "
            "or set the `gemini_command` setting to its full path."
        )
    # One argument, `--prompt=<text>`: as the element after `-p`, a prompt starting with `-` is
    # parsed as options (`--version`, `--yolo`). yargs-parser gives an `=` value to the option whole
    # (newlines, quotes and `=` included) and never reads it as a flag; proven with the real CLI.
    argv = [*_launcher(found, platform), *gemini_command[1:], f"--prompt={prompt}", "-o", "json"]
    if model:
        argv += ["-m", model]
    return argv


def _launcher(program: str, platform: str) -> list[str]:
    """`program`, or on Windows what its npm batch shim runs: cmd.exe must never read the prompt."""
    try:
        return direct_argv(program, platform)
    except NotResolved as exc:
        raise GeminiFailed(
            f"ask_gemini will not pass a prompt to {program}: Windows runs a batch file through cmd.exe, which "
            f"could read the prompt as commands, and {exc}. Set the `gemini_command` setting to "
            '["node", "<folder `npm root -g` prints>/@google/gemini-cli/bundle/gemini.js"] or to a gemini.exe.'
        ) from None


async def ask_gemini(gemini_command: Sequence[str], prompt: str, model: str, cwd: str, timeout: float) -> str:
    """The model's response text; raises GeminiFailed with the CLI's own message on failure."""
    if not prompt.strip():
        raise GeminiFailed("The prompt is empty.")
    argv = command_line(gemini_command, prompt, model)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMINI_CLI_IDE_")}
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            **new_group(),
        )
    except FileNotFoundError:
        raise GeminiFailed(f"The Gemini CLI could not be started: {argv[0]} does not exist.") from None
    except OSError as exc:
        raise GeminiFailed(f"The Gemini CLI could not be started: {exc.strerror or exc}.") from None
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    except (TimeoutError, asyncio.TimeoutError):
        await kill_tree(process)
        raise GeminiFailed(
            f"The Gemini CLI did not answer within {timeout:g} s "
            "(setting `ask_gemini_timeout_seconds`); it was stopped."
        ) from None
    except BaseException:
        await kill_tree(process)  # cancelled by the client, or the server is stopping
        raise
    if process.returncode == UNTRUSTED_EXIT_CODE:
        raise GeminiFailed(untrusted_message(cwd))
    return parse_output(process.returncode or 0, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


def untrusted_message(folder: str) -> str:
    """One line instead of the CLI's own, which offers to bypass the user's trust decision."""
    return (
        f"Gemini CLI does not trust {folder}, so it will not answer there: {TRUST_FIX}, then ask again. "
        f"More: {troubleshooting(TROUBLESHOOTING_ENTRY)}"
    )


def parse_output(returncode: int, stdout: str, stderr: str) -> str:
    payload = _json_object(stdout) or _json_object(stderr)
    error = payload.get("error") if payload else None
    if returncode != 0 or isinstance(error, dict):
        message = error.get("message") if isinstance(error, dict) else None
        detail = _head(str(message)) if message else (_tail(stderr) or _tail(stdout) or "no output")
        raise GeminiFailed(f"The Gemini CLI failed (exit code {returncode}): {detail}")
    if payload is None or not isinstance(payload.get("response"), str):
        raise GeminiFailed(
            "The Gemini CLI answered without a JSON response (is it too old for `-o json`?): "
            + (_tail(stdout) or _tail(stderr) or "no output")
        )
    return payload["response"]


def _json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text:
        return None
    candidates = [text]
    start = text.find("\n{")
    while start >= 0:  # JSON after other lines (warnings on stderr)
        candidates.append(text[start + 1 :])
        start = text.find("\n{", start + 1)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _head(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _TAIL else text[:_TAIL] + "…"


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _TAIL else "…" + text[-_TAIL:]


async def kill_tree(process: asyncio.subprocess.Process) -> None:
    """Kill `process` and every process it started; wait for it to be reaped."""
    if process.returncode is None:
        await asyncio.get_running_loop().run_in_executor(None, _kill_tree_sync, process.pid)
    try:
        await asyncio.wait_for(process.wait(), 5)
    except (TimeoutError, asyncio.TimeoutError):
        pass


def _kill_tree_sync(pid: int) -> None:
    children = descendants(pid)  # before the parent goes: its orphans are no longer its children
    kill_one(pid)
    kill_and_wait(children)
