"""The built-in demo agent (`chat --agent demo`): an ACP agent with no account and no network, so a
newcomer sees a review, a change set and a revert in a minute. It is a program of its own, started
by the chat like any agent (`python demo_agent.py`), speaking ACP through the pinned SDK's agent side.

Each prompt it does three things an agent does, in the workspace the chat gave it:
1. proposes an edit to `demo.txt` through a permission request (the chat's review), and writes it
   with fs/write_text_file only once allowed;
2. writes `demo-notes.txt` straight to disk with no tool call (as a shell command of an agent
   would): the change set shows it as written outside the review;
3. runs one command (`python --version`) and reports it as an `execute` tool call.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import subprocess
import sys
from typing import Any

EDITED = "demo.txt"
OUTSIDE = "demo-notes.txt"
ADDED_LINE = "A line the demo agent proposed.\n"
NOTES = "Written by the demo agent without a review, as a shell command would.\n"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class NotInWorkspace(Exception):
    """The demo's file is a link (or not a plain file of its own): written through, it would change
    something outside the workspace."""


def open_in_folder(folder: str, name: str, flags: int) -> int:
    """A descriptor of the plain file `name` directly in `folder`, never reached through a link.

    This script runs on its own (`python demo_agent.py`), so it cannot import the package's
    core/files/fdpath.py; the file is a leaf of the folder, so one open relative to the folder's descriptor
    with O_NOFOLLOW is that whole walk. Without them (Windows) the name is checked for a link or a
    junction before the open and the opened file must still be the one at that name. A hard-linked
    file is refused too: its other name may be outside the workspace."""
    path = os.path.join(folder, name)
    if _NOFOLLOW and os.open in os.supports_dir_fd:
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fd = os.open(name, flags | _NOFOLLOW | _BINARY, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP)) or os.path.islink(path):
                raise NotInWorkspace(_refusal(name)) from None
            raise
        finally:
            os.close(dir_fd)
    else:
        if os.path.islink(path) or getattr(os.path, "isjunction", lambda _path: False)(path):
            raise NotInWorkspace(_refusal(name))
        fd = os.open(path, flags | _BINARY, 0o644)
        if os.path.islink(path) or not os.path.samestat(os.fstat(fd), os.lstat(path)):
            os.close(fd)
            raise NotInWorkspace(_refusal(name))
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode) or opened.st_nlink > 1:
        os.close(fd)
        raise NotInWorkspace(_refusal(name))
    return fd


def _refusal(name: str) -> str:
    return (
        f"{name} is a link (or not a plain file of its own): writing it could change a file outside "
        f"the workspace, so the demo agent left it alone. Remove {name} and prompt again.\n"
    )


def main() -> None:
    asyncio.run(serve())


async def serve() -> None:
    from acp import RequestError, run_agent, text_block, update_agent_message
    from acp.schema import (
        AgentCapabilities,
        InitializeResponse,
        NewSessionResponse,
        PermissionOption,
        PromptResponse,
        SessionNotification,
        ToolCallUpdate,
    )

    class DemoAgent:
        conn: Any = None
        cwd = ""
        calls = 0

        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            return InitializeResponse(protocol_version=1, agent_capabilities=AgentCapabilities())

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            self.cwd = cwd
            return NewSessionResponse(session_id="demo")

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
            await self._say(
                session_id,
                "Demo agent (offline): an edit through your review, a file written without one, and one command.\n",
            )
            try:
                await self._propose(session_id, os.path.join(self.cwd, EDITED))
            except NotInWorkspace as refused:
                await self._say(session_id, str(refused))
            try:
                self._append_notes()
            except NotInWorkspace as refused:
                await self._say(session_id, str(refused))
            await self._run(session_id, [sys.executable, "--version"])
            await self._say(
                session_id,
                f"Done. `changes --workspace DIR` lists what changed; revert {OUTSIDE} with `--revert {OUTSIDE}`.\n",
            )
            return PromptResponse(stop_reason="end_turn")

        def _append_notes(self) -> None:
            fd = open_in_folder(self.cwd, OUTSIDE, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with open(fd, "a", encoding="utf-8") as handle:
                handle.write(NOTES)

        async def _propose(self, session_id: str, path: str) -> None:
            try:
                fd = open_in_folder(self.cwd, EDITED, os.O_RDONLY)
            except FileNotFoundError:
                before = ""
            else:
                with open(fd, encoding="utf-8") as handle:
                    before = handle.read()
            after = before + ADDED_LINE
            call_id = self._next_call()
            diff = {"type": "diff", "path": path, "oldText": before or None, "newText": after}
            call = {"toolCallId": call_id, "title": f"Edit {EDITED}", "kind": "edit", "content": [diff]}
            await self._update(session_id, {"sessionUpdate": "tool_call", "status": "pending", **call})
            answer = await self.conn.request_permission(
                options=[
                    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
                ],
                session_id=session_id,
                tool_call=ToolCallUpdate.model_validate(call),
            )
            status = "failed"
            if getattr(answer.outcome, "option_id", None) == "allow":
                try:
                    await self.conn.write_text_file(content=after, path=path, session_id=session_id)
                    status = "completed"
                except RequestError:
                    pass
            await self._update(
                session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}
            )

        async def _run(self, session_id: str, argv: list[str]) -> None:
            call_id = self._next_call()
            title = "Run python --version"
            await self._update(
                session_id,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": title,
                    "kind": "execute",
                    "status": "in_progress",
                },
            )
            done = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, cwd=self.cwd)
            output = {"type": "content", "content": {"type": "text", "text": (done.stdout or done.stderr).strip()}}
            status = "completed" if done.returncode == 0 else "failed"
            update = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status, "content": [output]}
            await self._update(session_id, update)

        def _next_call(self) -> str:
            self.calls += 1
            return f"demo-{self.calls}"

        async def _say(self, session_id: str, text: str) -> None:
            await self.conn.session_update(session_id, update_agent_message(text_block(text)))

        async def _update(self, session_id: str, update: dict[str, Any]) -> None:
            notification = SessionNotification.model_validate({"sessionId": session_id, "update": update})
            await self.conn.session_update(session_id, notification.update)

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            pass

    await run_agent(DemoAgent())  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
