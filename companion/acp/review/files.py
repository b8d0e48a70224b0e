"""`fs/read_text_file` and `fs/write_text_file` for an agent: inside the window's folders only
(the workspace tools' path policy: fd-based, no symlink escapes), reading what the user sees (the
unsaved buffer), writing only what the user accepted in a review."""

from __future__ import annotations

import asyncio

from ...core.editor import Editor
from ...core.files import disk_text
from ...core.files.disk_text import DiskText
from ...core.files.paths import PathPolicy, Resolved, WorkspaceError
from ...core.files.reading import read_text
from ...core.files.writing import buffer_saves, encoded_as_stored, write_bytes
from .review_gate import AcceptedEdit

# A chat's agent reads whole source files (Claude's Read asks for a range, yet the whole file is
# read): its own setting, far above `read_file_limit_kb` (100 KB, the MCP tool's).
READ_LIMIT_SETTING = "chat_read_file_limit_kb"
READ_LIMIT_BYTES = 16 * 1024 * 1024  # that setting's default
EDITOR_TIMEOUT_SECONDS = 30


class FsRefused(Exception):
    """The agent's fs request is refused; the message (sent to the agent) says why."""


class AgentFiles:
    def __init__(self, policy: PathPolicy, editor: Editor, read_limit: int = READ_LIMIT_BYTES) -> None:
        self.policy = policy
        self.editor = editor
        self.read_limit = read_limit  # bytes: the READ_LIMIT_SETTING, which a refusal names

    async def resolve(self, path: str) -> Resolved:
        try:
            return await asyncio.to_thread(self.policy.resolve, path, kind="file", must_exist=False)
        except WorkspaceError as exc:
            raise FsRefused(str(exc)) from None

    async def unsaved_text(self, target: Resolved) -> str | None:
        for path in dict.fromkeys((target.requested, target.path)):
            try:
                text = await asyncio.wait_for(self.editor.unsaved_text(path), EDITOR_TIMEOUT_SECONDS)
            except Exception:
                return None
            if text is not None:
                return text
        return None

    async def current(self, target: Resolved, disk: DiskText) -> DiskText:
        """What the user sees now: the unsaved buffer, else `disk` (the file as just read)."""
        unsaved = await self.unsaved_text(target)
        return disk if unsaved is None else DiskText(unsaved, exists=True)

    async def read(self, path: str, line: int | None, limit: int | None) -> str:
        """The text (from `line`, 1-based, at most `limit` lines); "" for a missing file in the
        workspace: an error there makes Gemini CLI's write tool fail (gemini-cli#9280)."""
        target = await self.resolve(path)
        unsaved = await self.unsaved_text(target)
        if unsaved is None and not target.exists:
            return ""
        try:
            result = await asyncio.to_thread(read_text, target, unsaved, self.read_limit, path, READ_LIMIT_SETTING)
        except WorkspaceError as exc:
            raise FsRefused(str(exc)) from None
        if line is None and limit is None:
            return result.text
        lines = result.text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        return "".join(lines[start : None if limit is None else start + max(limit, 0)])

    async def write_accepted(
        self, target: Resolved, edit: AcceptedEdit, *, check_disk: bool = True, data: bytes | None = None
    ) -> tuple[bytes, ...]:
        """Write the text the user accepted: through the open buffer when there is one, else to disk.
        With `check_disk`, a file changed on disk since the user decided is refused: the user
        approved a diff against what it was, and writing would throw the other change away.
        `data`: the accepted text as encoded when the user decided (`accepted_bytes`), written as
        is: the file may since hold the agent's own bytes, whose encoding is not what was accepted.
        Returns the bytes written to disk (one form); when the editor saved its open buffer, the
        bytes its save stored (the text with the line break it reports; every break's form only for
        an editor that cannot say), encoded as the file was before, never read after: a file
        renamed over it right after the save is not taken for the editor's."""
        if check_disk and edit.disk is not None:
            now = await asyncio.to_thread(disk_text.read, target.path)
            if disk_text.changed(edit.disk, now):
                raise FsRefused(
                    f"{target.requested} changed on disk after the user reviewed the edit, so nothing was written "
                    "and that change is kept; read the file again and propose the edit anew"
                )
        try:
            if target.exists:
                saves = await asyncio.to_thread(buffer_saves, target, edit.final, target.requested)
                saved = await asyncio.wait_for(
                    self.editor.write_through_buffer(target.path, edit.final), EDITOR_TIMEOUT_SECONDS
                )
                if isinstance(saved, str):  # the one break the save stored: only that form is the accepted
                    return (saves[saved],) if saved in saves else ()
                if saved:  # an editor that cannot say which break it saved: the text is checked up to its breaks
                    return tuple(saves.values())
            if data is None:
                data = await asyncio.to_thread(encoded_as_stored, target, edit.final, target.requested)
            await asyncio.to_thread(write_bytes, self.policy, target, data, target.requested)
            return (data,)
        except WorkspaceError as exc:
            raise FsRefused(f"the accepted change could not be written: {exc}") from None
        except Exception as exc:  # the editor failed or timed out saving its buffer
            raise FsRefused(f"the editor could not save {target.requested}: {exc or type(exc).__name__}") from None

    async def accepted_bytes(self, target: Resolved, text: str) -> bytes | None:
        """`text` encoded as a write of it now would store it (the file's encoding, BOM, line
        endings): what the agent writing the file itself must leave there. None when it cannot be
        stored in the file's encoding (or the file cannot be read): no write can match it."""
        try:
            return await asyncio.to_thread(encoded_as_stored, target, text, target.requested)
        except (WorkspaceError, OSError):
            return None

    async def disk(self, target: Resolved) -> DiskText:
        return await asyncio.to_thread(disk_text.read, target.path)
