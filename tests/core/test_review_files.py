"""openDiff names a file a client chose: hostile paths are refused before a review opens, and the
current text is read off the editor's thread, bounded, non-blocking, decoded like the workspace tools.
"""

from __future__ import annotations

import os
import stat
import sys
import threading

import anyio
import pytest

from companion.core.files import disk_text
from companion.headless.editor import HeadlessEditor, unified_diff, visible
from companion.runtime import WindowHandle
from tests.mcp_client import connect, text_of
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.anyio
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero are POSIX")


async def refused(window: WindowHandle, editor: ScriptedEditor, path: str, tool: str = "openDiff") -> str:
    """The error text of a call that must fail; nothing may reach the editor."""
    async with connect(window.url, window.token) as client:
        with anyio.fail_after(30):  # a hang here is the defect: the call must come back
            result = await client.session.call_tool(tool, {"filePath": path, "newContent": "x"})
    assert result.is_error, text_of(result)
    assert editor.shown == [] and editor.closed == []
    return text_of(result)


@posix_only
async def test_a_fifo_is_refused_without_blocking(window: WindowHandle, editor: ScriptedEditor, workspace: str) -> None:
    fifo = os.path.join(workspace, "pipe")
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe), not a regular file" in await refused(window, editor, fifo)


@posix_only
async def test_a_device_is_refused(window: WindowHandle, editor: ScriptedEditor) -> None:
    assert "/dev/zero is a character device" in await refused(window, editor, "/dev/zero")


async def test_a_directory_is_refused(window: WindowHandle, editor: ScriptedEditor, workspace: str) -> None:
    assert "is a directory" in await refused(window, editor, workspace)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("relative/a.py", "is not absolute"),
        ("/tmp/a\x00b.py", "contains a NUL character"),
        ("/" + "d/" * 20_000 + "a.py", "longer than this system's limit"),
    ],
    ids=["relative", "nul", "too-long"],
)
@pytest.mark.parametrize("tool", ["openDiff", "closeDiff"])
async def test_malformed_paths_are_refused_by_both_tools(
    window: WindowHandle, editor: ScriptedEditor, path: str, reason: str, tool: str
) -> None:
    message = await refused(window, editor, path, tool)
    assert reason in message and "send" in message, message  # the reason and what to do


async def test_a_file_above_the_cap_still_gets_its_review_without_its_text(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    big = os.path.join(workspace, "big.log")
    with open(big, "wb") as handle:
        handle.truncate(disk_text.MAX_SHOWN_BYTES + 1)  # sparse: no 16 MiB written to the disk
    async with connect(window.url, window.token) as client:
        result = await client.open_diff(big, "short\n")
        assert not result.is_error, text_of(result)
        with anyio.fail_after(20):
            while not editor.shown:
                await anyio.sleep(0.01)
    disk = editor.shown[0][0].disk
    assert disk is not None and disk.text == "" and disk.exists
    assert disk.not_shown == "it is 16 MiB, more than the 16 MiB shown"


async def test_the_current_text_is_decoded_like_the_workspace_tools(
    window: WindowHandle, editor: ScriptedEditor, workspace: str
) -> None:
    legacy = os.path.join(workspace, "legacy.txt")
    with open(legacy, "wb") as handle:
        handle.write(b"price: 5 \x80\r\n")  # Windows-1252 euro sign, CRLF
    async with connect(window.url, window.token) as client:
        await client.open_diff(legacy, "price: 6 €\r\n")
        with anyio.fail_after(20):
            while not editor.shown:
                await anyio.sleep(0.01)
    disk = editor.shown[0][0].disk
    assert disk is not None and disk.text == "price: 5 €\r\n" and disk.not_shown is None
    assert disk.stamp is not None and disk.stamp.size == 12


@posix_only
def test_a_fifo_swapped_in_after_the_check_does_not_block_the_reader(tmp_path: str) -> None:
    fifo = os.path.join(str(tmp_path), "swapped")
    os.mkfifo(fifo)  # as if swapped in between check_review_path and read
    outcome: list[disk_text.DiskText] = []
    reader = threading.Thread(target=lambda: outcome.append(disk_text.read(fifo)), daemon=True)
    reader.start()
    reader.join(10)
    assert outcome, "reading a FIFO blocked"
    assert outcome[0].not_shown == "it is now a FIFO (named pipe), not a regular file"


def test_a_missing_file_is_new_and_an_unreadable_one_says_why(tmp_path: str) -> None:
    assert disk_text.read(os.path.join(str(tmp_path), "nope.py")) == disk_text.DiskText("", exists=False)
    if sys.platform != "win32" and os.geteuid() != 0:
        locked = os.path.join(str(tmp_path), "locked.py")
        open(locked, "w").close()
        os.chmod(locked, 0)
        assert (disk_text.read(locked).not_shown or "").startswith("it cannot be read")
    binary = os.path.join(str(tmp_path), "image.bin")
    with open(binary, "wb") as handle:
        handle.write(b"\x89PNG\x00\x00\x01")
    assert disk_text.read(binary).not_shown == "it is a binary file"


def test_the_headless_prompt_shows_control_characters_instead_of_obeying_them(tmp_path: str) -> None:
    """A proposal (or a path) written by a model cannot clear the screen, hide a line, write the
    clipboard or reorder text on the terminal where the user approves it."""
    target = os.path.join(str(tmp_path), "a.py")
    with open(target, "w", newline="") as handle:
        handle.write("keep\r\n")
    hostile = "keep\r\nsafe()\x1b[2K\x1b[1Aevil()\x1b]52;c;ZXZpbA==\x07\r# \u202eok\n"
    shown = unified_diff(target, hostile)
    assert not any(ch in shown for ch in "\x1b\x07\u202e"), shown
    # A lone carriage return (which would overwrite the line on screen) ends a line of the diff.
    assert "+safe()\\x1b[2K\\x1b[1Aevil()\\x1b]52;c;ZXZpbA==\\x07\r\n+# \\u202eok\n" in shown
    assert "\r" not in shown.replace("\r\n", "")
    assert " keep\r\n" in shown  # a CRLF line break stays a line break
    assert visible("tab\tand\nnewline") == "tab\tand\nnewline"


def test_the_headless_prompt_escapes_the_path_it_asks_about(tmp_path: str) -> None:
    asked: list[str] = []
    out: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            out.append(text)

        def flush(self) -> None:
            pass

    editor = HeadlessEditor("prompt", out=Out(), ask=lambda question: asked.append(question) or "n")  # type: ignore[arg-type]
    from companion.core.reviews import Reviews

    reviews = Reviews(lambda review, outcome, content: None)
    review, _ = reviews.open(os.path.join(str(tmp_path), "x\x1b[8m.py"), "text\n", "test")
    editor._prompt(review)
    assert asked and "\x1b" not in asked[0] and "\\x1b[8m" in asked[0]
    assert "\x1b" not in "".join(out)


def test_paths_are_checked_for_kind_only_when_they_exist(tmp_path: str) -> None:
    disk_text.check_review_path(os.path.join(str(tmp_path), "new", "file.py"))  # a new file: allowed
    regular = os.path.join(str(tmp_path), "a.py")
    open(regular, "w").close()
    disk_text.check_review_path(regular)
    assert stat.S_ISREG(os.stat(regular).st_mode)
