"""The workspace tools on an in-process window server whose editor (buffers, reviews) the test plays."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import psutil
import pytest
from mcp_types import CallToolResult

from companion.core.reviews import Review
from companion.mcp_tools.ask import GeminiFailed, ask_gemini
from companion.mcp_tools.factory import tool_factory
from companion.mcp_tools.settings import WorkspaceToolSettings
from companion.runtime import Runtime, WindowHandle
from tests.mcp_client import connect, text_of
from tests.mcp_tools.standin import install
from tests.scripted_editor import ScriptedEditor

pytestmark = pytest.mark.anyio


@pytest.fixture
def editor() -> ScriptedEditor:
    return ScriptedEditor()


@pytest.fixture
def tool_settings() -> list[WorkspaceToolSettings]:
    """The current settings (replace the item to change them while the window is open)."""
    return [WorkspaceToolSettings(read_limit_bytes=1000, write_timeout_seconds=30)]


@pytest.fixture
def window(
    tmp_path: str, editor: ScriptedEditor, workspace: str, tool_settings: list[WorkspaceToolSettings]
) -> Iterator[WindowHandle]:
    runtime = Runtime(discovery_directory=os.path.join(str(tmp_path), "discovery"))
    handle = runtime.open_window(editor, [workspace], tool_factory=tool_factory(lambda: tool_settings[0]))
    handle.ready.result(30)
    yield handle
    runtime.stop()


def write_bytes(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


async def next_review(editor: ScriptedEditor, count: int = 1) -> Review:
    with anyio.fail_after(20):
        while len(editor.shown) < count:
            await anyio.sleep(0.01)
    return editor.shown[count - 1][0]


async def write_and_decide(
    window: WindowHandle,
    editor: ScriptedEditor,
    arguments: dict[str, str],
    decide: Callable[[Review], None],
    name: str = "test-client",
    review_number: int = 1,
) -> CallToolResult:
    """Call write_file and, once the editor shows the review (the `review_number`-th of the test),
    play the user with `decide`."""
    results: list[CallToolResult] = []
    async with connect(window.url, window.token, name=name) as client, anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await client.session.call_tool("write_file", arguments))

        group.start_soon(call)
        decide(await next_review(editor, review_number))
    return results[0]


async def test_read_returns_the_unsaved_buffer_and_says_so(window: WindowHandle, editor: ScriptedEditor) -> None:
    target = os.path.join(window.folders[0], "a.py")
    write_bytes(target, b"on disk\n")
    editor.buffers[target] = "typed but not saved\n"
    async with connect(window.url, window.token) as client:
        result = await client.session.call_tool("read_file", {"path": "a.py"})
        del editor.buffers[target]
        saved = await client.session.call_tool("read_file", {"path": "a.py"})
    assert "unsaved" in result.content[0].text  # type: ignore[union-attr]
    assert result.content[1].text == "typed but not saved\n"  # type: ignore[union-attr]
    assert text_of(saved) == "on disk\n" and len(saved.content) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="/dev and its character devices are POSIX")
async def test_device_files_are_neither_read_nor_offered_for_writing(tmp_path: str, editor: ScriptedEditor) -> None:
    runtime = Runtime(discovery_directory=os.path.join(str(tmp_path), "discovery"))
    try:
        handle = runtime.open_window(editor, ["/dev"], tool_factory=tool_factory(WorkspaceToolSettings()))
        handle.ready.result(30)
        async with connect(handle.url, handle.token) as client:
            for device in ("null", "zero", "/dev/urandom"):
                read = await client.session.call_tool("read_file", {"path": device})
                write = await client.session.call_tool("write_file", {"path": device, "content": "x"})
                for result in (read, write):
                    assert result.is_error and "character device" in text_of(result), text_of(result)
        assert editor.shown == []
    finally:
        runtime.stop()


async def test_read_limit_is_a_clear_error(window: WindowHandle) -> None:
    write_bytes(os.path.join(window.folders[0], "big.txt"), b"x" * 1001)
    write_bytes(os.path.join(window.folders[0], "fits.txt"), b"x" * 1000)
    async with connect(window.url, window.token) as client:
        big = await client.session.call_tool("read_file", {"path": "big.txt"})
        fits = await client.session.call_tool("read_file", {"path": "fits.txt"})
    assert big.is_error and "over the read limit of 1000 bytes" in text_of(big)
    assert text_of(fits) == "x" * 1000


async def test_the_users_edits_are_what_gets_written(window: WindowHandle, editor: ScriptedEditor) -> None:
    target = os.path.join(window.folders[0], "a.txt")
    write_bytes(target, b"old\n")

    def user(review: Review) -> None:
        assert review.file_path == target and review.proposal == "new\n"
        assert review.requested_by == "Claude Desktop"  # the banner says which client asks
        assert read_bytes(target) == b"old\n"  # nothing before the decision
        review.accept("new\nand the user's line\n")

    result = await write_and_decide(window, editor, {"path": target, "content": "new\n"}, user, "Claude Desktop")
    assert "edited your proposal" in text_of(result)
    assert read_bytes(target) == b"new\nand the user's line\n"


async def test_an_accepted_text_the_disk_refuses_goes_back_to_the_editor(
    window: WindowHandle, editor: ScriptedEditor, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = os.path.join(window.folders[0], "full.txt")
    write_bytes(target, b"old\n")

    def full_disk(*args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def user(review: Review) -> None:
        monkeypatch.setattr(os, "fsync", full_disk)
        review.accept("new\nand the user's line\n")

    result = await write_and_decide(window, editor, {"path": target, "content": "new\n"}, user)
    monkeypatch.undo()
    assert result.is_error and os.strerror(errno.ENOSPC) in text_of(result), text_of(result)
    assert read_bytes(target) == b"old\n"
    ((path, text, reason),) = editor.kept
    assert path == target and text == "new\nand the user's line\n" and os.strerror(errno.ENOSPC) in reason


@pytest.mark.parametrize(
    ("before", "meanwhile"),
    [(b"old\n", b"old\nsaved by a formatter meanwhile\n"), (b"old\n", None), (None, b"created meanwhile\n")],
    ids=["edited", "deleted", "created"],
)
async def test_a_file_changed_during_its_review_is_not_overwritten(
    window: WindowHandle, editor: ScriptedEditor, before: bytes | None, meanwhile: bytes | None
) -> None:
    """The user approved a diff against text that no longer exists: the change saved meanwhile stays,
    the user's accepted text goes back to the editor, and the client hears why."""
    target = os.path.join(window.folders[0], "raced.txt")
    if before is not None:
        write_bytes(target, before)

    def user(review: Review) -> None:
        if meanwhile is None:
            os.remove(target)
        else:
            write_bytes(target, meanwhile)
        review.accept("new\nand the user's line\n")

    result = await write_and_decide(window, editor, {"path": target, "content": "new\n"}, user)
    assert result.is_error and "changed on disk while its review was open" in text_of(result), text_of(result)
    assert "Read the file again" in text_of(result)
    assert (read_bytes(target) if os.path.exists(target) else None) == meanwhile
    ((path, text, reason),) = editor.kept
    assert path == target and text == "new\nand the user's line\n" and "changed on disk" in reason


async def test_a_touch_that_changes_only_the_time_does_not_block_the_write(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    target = os.path.join(window.folders[0], "touched.txt")
    write_bytes(target, b"old\n")

    def user(review: Review) -> None:
        os.utime(target, ns=(1, 1))
        review.accept(review.proposal)

    result = await write_and_decide(window, editor, {"path": target, "content": "new\n"}, user)
    assert not result.is_error, text_of(result)
    assert read_bytes(target) == b"new\n"


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
async def test_a_file_uri_with_an_encoded_nul_is_a_tool_error(window: WindowHandle, tool: str) -> None:
    """Not a JSON-RPC error with code 0: the client (a model) reads the reason like any other refusal."""
    uri = f"file://{window.folders[0]}/a%00b.txt"
    async with connect(window.url, window.token) as client:
        result = await client.session.call_tool(tool, {"path": uri, "content": "x"})
    assert result.is_error and "encodes a NUL character (%00)" in text_of(result), text_of(result)
    assert not os.path.exists(os.path.join(window.folders[0], "a"))


async def test_an_open_file_is_written_through_its_buffer(window: WindowHandle, editor: ScriptedEditor) -> None:
    target = os.path.join(window.folders[0], "open.txt")
    write_bytes(target, b"disk\n")
    editor.buffers[target] = "disk\n"
    result = await write_and_decide(window, editor, {"path": "open.txt", "content": "v2\n"}, lambda r: r.accept("v2\n"))
    assert editor.written == {target: "v2\n"}
    assert "saved from the editor" in text_of(result)
    assert read_bytes(target) == b"disk\n"  # the editor saves; the tool did not write behind its back


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("é\r\n".encode("utf-8-sig"), "ü\r\nz\r\n".encode("utf-8-sig")),
        ("é\n".encode("cp1252"), "ü\nz\n".encode("cp1252")),
        ("€ 5\n".encode("cp1252"), "ü\nz\n".encode("cp1252")),
        (b"\x81\xe9\n", "ü\nz\n".encode("latin-1")),  # 0x81 has no Windows-1252 meaning: Latin-1
        ("é\r\n".encode("utf-16"), "ü\r\nz\r\n".encode("utf-16")),
        (b"mac\rline\r", "ü\rz\r".encode()),
    ],
    ids=["utf8-bom-crlf", "windows-1252", "windows-1252-euro", "latin1", "utf16-bom", "cr"],
)
async def test_accepted_writes_keep_encoding_bom_and_line_endings(
    window: WindowHandle, editor: ScriptedEditor, stored: bytes, expected: bytes
) -> None:
    target = os.path.join(window.folders[0], "enc.txt")
    write_bytes(target, stored)
    os.chmod(target, 0o640)
    arguments = {"path": "enc.txt", "content": "ü\nz\n"}
    result = await write_and_decide(window, editor, arguments, lambda r: r.accept(r.proposal))
    assert not result.is_error, text_of(result)
    assert read_bytes(target) == expected
    if sys.platform != "win32":
        assert os.stat(target).st_mode & 0o777 == 0o640
    assert [n for n in os.listdir(window.folders[0]) if n.endswith(".tmp")] == []


async def test_text_the_encoding_cannot_hold_is_refused_before_asking(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    target = os.path.join(window.folders[0], "legacy.txt")
    write_bytes(target, "é\n".encode("cp1252"))
    async with connect(window.url, window.token) as client:
        result = await client.session.call_tool("write_file", {"path": "legacy.txt", "content": "😀\n"})
        read = await client.session.call_tool("read_file", {"path": "legacy.txt"})
    assert result.is_error and "cp1252" in text_of(result)
    assert editor.shown == [] and read_bytes(target) == "é\n".encode("cp1252")
    assert text_of(read) == "é\n"


async def test_a_windows_1252_file_reads_and_takes_its_own_characters(
    window: WindowHandle, editor: ScriptedEditor
) -> None:
    target = os.path.join(window.folders[0], "prices.txt")
    write_bytes(target, "price: 5 € – “net”\r\n".encode("cp1252"))
    async with connect(window.url, window.token) as client:
        read = await client.session.call_tool("read_file", {"path": "prices.txt"})
    assert text_of(read) == "price: 5 € – “net”\r\n", repr(text_of(read))
    arguments = {"path": "prices.txt", "content": "price: 6 € — “gross”\n"}
    result = await write_and_decide(window, editor, arguments, lambda r: r.accept(r.proposal))
    assert "cp1252" in text_of(result), text_of(result)
    assert read_bytes(target) == "price: 6 € — “gross”\r\n".encode("cp1252")


async def test_no_decision_before_the_timeout_is_a_rejection(
    window: WindowHandle, editor: ScriptedEditor, tool_settings: list[WorkspaceToolSettings]
) -> None:
    tool_settings[0] = replace(tool_settings[0], write_timeout_seconds=1.0)  # read on every call
    target = os.path.join(window.folders[0], "slow.txt")
    write_bytes(target, b"same\n")
    async with connect(window.url, window.token) as client:
        result = await client.session.call_tool("write_file", {"path": "slow.txt", "content": "changed\n"})
    assert "did not decide within 1 s" in text_of(result) and text_of(result).startswith("Rejected")
    assert read_bytes(target) == b"same\n"
    assert editor.closed and not editor.closed[0].is_open  # the review was taken down


async def test_a_tool_turned_off_while_the_window_is_open_refuses(
    window: WindowHandle, tool_settings: list[WorkspaceToolSettings]
) -> None:
    tool_settings[0] = replace(tool_settings[0], enabled_tools=frozenset({"list_files"}))
    async with connect(window.url, window.token) as client:
        result = await client.session.call_tool("read_file", {"path": "x"})
    assert result.is_error and "turned off" in text_of(result)


def test_settings_from_a_mapping_fall_back_on_wrong_types() -> None:
    settings = WorkspaceToolSettings.from_mapping(
        {
            "disabled_tools": ["ask_gemini"],
            "list_limit": "many",
            "read_limit_bytes": 2048,
            "gemini_command": ["npx", "gemini"],
            "file_exclude_patterns": ["*.pyc", 3],
            "ask_model": " gemini-2.5-pro ",
        }
    )
    assert not settings.enabled("ask_gemini") and settings.enabled("write_file")
    assert settings.list_limit == 10_000 and settings.read_limit_bytes == 2048
    assert settings.gemini_command == ("npx", "gemini") and settings.file_exclude_patterns == ("*.pyc",)
    assert settings.ask_model == "gemini-2.5-pro" and settings.write_timeout_seconds == 600.0


async def test_cancelling_ask_gemini_kills_the_cli_and_its_children(tmp_path: str, workspace: str) -> None:
    command = install(os.path.join(str(tmp_path), "bin"))
    pids_file = os.path.join(str(tmp_path), "pids")
    os.environ["STANDIN_PIDS"] = pids_file
    try:
        task = asyncio.ensure_future(ask_gemini(command, "hang", "", workspace, 120))
        with anyio.fail_after(30):
            while not (os.path.exists(pids_file) and read_bytes(pids_file).strip()):
                await anyio.sleep(0.05)
        pids = [int(p) for p in read_bytes(pids_file).split()]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        del os.environ["STANDIN_PIDS"]
    deadline = time.monotonic() + 30
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids):
        assert time.monotonic() < deadline, "the CLI or its child survived the cancellation"
        await anyio.sleep(0.05)


async def test_ask_gemini_with_a_command_and_arguments(tmp_path: str, workspace: str) -> None:
    command = install(os.path.join(str(tmp_path), "bin"))  # [python, script]: runs on every platform
    assert await ask_gemini(command, "hello there", "", workspace, 60) == "echo: hello there"
    with pytest.raises(GeminiFailed, match="Quota exceeded"):
        await ask_gemini(command, "fail", "", workspace, 60)


ROUND_TRIP = {
    "lf": b"a\nb\n",
    "crlf": b"a\r\nb\r\n",
    "cr": b"a\rb\r",
    "mixed": b"a\r\nb\nc\r\n",
    "lone-cr-in-a-crlf-line": b"a\rx\r\nb\r\n",
    "no-final-break": b"a\nb",
    "crlf-no-final-break": b"a\r\nb",
    "empty": b"",
    "utf8-bom-crlf": b"\xef\xbb\xbfa\r\nb\r\n",
    "cp1252": b"a \x80\r\nb\r\n",
    "blank-lines-mixed": b"a\n\r\n\nb\n",
    "trailing-blanks": b"a \t\r\nb  \n",
    "utf16-bom-crlf": "a\r\nb\r\n".encode("utf-16"),
    "cr-no-final-break": b"a\rb",
    "lf-with-one-crlf": b"a\nb\nc\r\nd\n",
    "latin1": b"a \xff\nb\n",
}


@pytest.mark.parametrize("kind", ROUND_TRIP)
async def test_untouched_text_comes_back_byte_for_byte(window: WindowHandle, editor: ScriptedEditor, kind: str) -> None:
    """read_file, then write_file with that text (as a model does), with and without one changed
    line: every untouched line keeps its bytes, its own line ending included."""
    original = ROUND_TRIP[kind]
    target = os.path.join(window.folders[0], f"{kind}.txt")
    write_bytes(target, original)
    async with connect(window.url, window.token) as client:
        text = text_of(await client.session.call_tool("read_file", {"path": target}))

    def accept(review: Review) -> None:
        review.accept(review.proposal)

    await write_and_decide(window, editor, {"path": target, "content": text}, accept)
    assert read_bytes(target) == original
    if not text.startswith("a"):
        return
    await write_and_decide(window, editor, {"path": target, "content": "A" + text[1:]}, accept, review_number=2)
    changed = original.replace("a".encode(_codec(original)), "A".encode(_codec(original)), 1)
    assert read_bytes(target) == changed


def _codec(data: bytes) -> str:
    return "utf-16-le" if data.startswith(b"\xff\xfe") else "latin-1"


@pytest.mark.skipif(not hasattr(os, "link"), reason="no hard links")
async def test_a_file_with_hard_links_is_written_in_place(window: WindowHandle, editor: ScriptedEditor) -> None:
    target = os.path.join(window.folders[0], "linked.txt")
    other_name = os.path.join(window.folders[0], "other-name.txt")
    write_bytes(target, b"old\n")
    os.link(target, other_name)
    os.chmod(target, 0o640)
    inode = os.stat(target).st_ino

    def accept(review: Review) -> None:
        review.accept(review.proposal)

    result = await write_and_decide(window, editor, {"path": target, "content": "new\n"}, accept)
    assert not result.is_error, text_of(result)
    assert read_bytes(target) == read_bytes(other_name) == b"new\n"  # the other name sees the change
    assert os.stat(target).st_ino == inode and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(os.listdir(window.folders[0])) == ["linked.txt", "other-name.txt"]  # no temp file left


async def test_get_diagnostics_gives_the_editors_diagnostics_of_workspace_files_only(
    window: WindowHandle, editor: ScriptedEditor, workspace: str, outside: str
) -> None:
    inside = os.path.join(workspace, "a.py")
    write_bytes(inside, b"x = \n")
    problem = {
        "message": "invalid syntax",
        "severity": 1,
        "source": "build",
        "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 4}},
    }
    editor.problems = {inside: [problem], os.path.join(outside, "secret.txt"): [dict(problem, message="secret")]}
    async with connect(window.url, window.token) as client:
        every = json.loads(text_of(await client.session.call_tool("get_diagnostics", {})))
        one = json.loads(text_of(await client.session.call_tool("get_diagnostics", {"path": "a.py"})))
        escape = await client.session.call_tool("get_diagnostics", {"path": os.path.join(outside, "secret.txt")})
    assert every == one == [{"uri": Path(inside).as_uri(), "diagnostics": [problem]}]  # nothing from outside
    assert escape.is_error and "secret" not in text_of(escape).replace("secret.txt", "")


async def test_json_results_that_are_not_objects_also_come_as_an_object_for_strict_clients(
    window: WindowHandle, workspace: str
) -> None:
    """Gemini CLI takes a first text block that parses as JSON for the structured result, which MCP
    says is an object: a list (get_diagnostics' answer, a file holding `[1, 2]` or `42`) was a tool
    error there (tests/acp/test_real_window_tools.py runs the real agent)."""
    write_bytes(os.path.join(workspace, "list.json"), b"[1, 2]\n")
    write_bytes(os.path.join(workspace, "answer.txt"), b"42")
    write_bytes(os.path.join(workspace, "object.json"), b'{"a": 1}')
    write_bytes(os.path.join(workspace, "nan.txt"), b"NaN")  # JSON to Python only: not to a JavaScript client
    async with connect(window.url, window.token) as client:
        diagnostics = await client.session.call_tool("get_diagnostics", {})
        listed = await client.session.call_tool("read_file", {"path": "list.json"})
        answer = await client.session.call_tool("read_file", {"path": "answer.txt"})
        plain = [await client.session.call_tool("read_file", {"path": p}) for p in ("object.json", "nan.txt")]
    assert (text_of(diagnostics), diagnostics.structured_content) == ("[]", {"result": []})
    assert (text_of(listed), listed.structured_content) == ("[1, 2]\n", {"result": "[1, 2]\n"})  # the text exactly
    assert (text_of(answer), answer.structured_content) == ("42", {"result": "42"})
    assert [(text_of(r), r.structured_content) for r in plain] == [('{"a": 1}', None), ("NaN", None)]
