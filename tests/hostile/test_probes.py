"""Security probes against a running window server: DNS rebinding Hosts, Origins, token tricks, discovery
modes at the moment of creation, the token in logs and the doctor report, and the workspace tools' path
policy against traversal, symlink and case tricks."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import threading
from collections.abc import Iterator

import pytest

from companion import doctor
from companion.gemini_ide import discovery
from companion.mcp_tools.factory import tool_factory
from companion.mcp_tools.settings import WorkspaceToolSettings
from companion.runtime import Runtime, WindowHandle
from tests.hostile.conftest import ACCEPT, RESET, RawHttp, Reply, Target, initialize_body, snapshot
from tests.mcp_client import connect, text_of
from tests.scripted_editor import ScriptedEditor


def init(target: Target, headers: list[tuple[str, str]], path: str = "/mcp") -> Reply:
    http = RawHttp(target.port)
    try:
        return http.request("POST", path, headers, initialize_body())
    finally:
        http.close()


def refused(reply: Reply, target: Target, statuses: tuple[int, ...]) -> None:
    assert reply.status in (*statuses, RESET), reply
    assert reply.header("mcp-session-id") is None, "a session was created"
    assert target.token.encode() not in reply.body


def standard(target: Target) -> dict[str, str]:
    return {
        "Host": f"127.0.0.1:{target.port}",
        "Authorization": f"Bearer {target.token}",
        "Accept": ACCEPT,
        "Content-Type": "application/json",
    }


def test_the_probe_request_itself_is_served(target: Target) -> None:
    reply = init(target, list(standard(target).items()))
    assert reply.status == 200 and reply.header("mcp-session-id")
    reply = init(target, list({**standard(target), "Host": f"localhost:{target.port}"}.items()))
    assert reply.status == 200


# -- DNS rebinding: a web page reaches 127.0.0.1 under another name, so the Host names the attacker --

REBINDING_HOSTS = [
    "evil.example:{port}",
    "evil.example",
    "127.0.0.1",
    "localhost",
    "127.0.0.1:{other}",
    "localhost:{other}",
    "127.0.0.1:80",
    "localhost:443",
    "127.0.0.1.:{port}",
    "localhost.:{port}",
    "localhost..:{port}",
    "[::1]:{port}",
    "[::1]",
    "[::ffff:127.0.0.1]:{port}",
    "[0:0:0:0:0:0:0:1]:{port}",
    "LOCALHOST:{port}",
    "LocalHost:{port}",
    "localhosT:{port}",
    "127.0.0.1.nip.io:{port}",
    "127-0-0-1.nip.io:{port}",
    "localtest.me:{port}",
    "localhost.evil.example:{port}",
    "evil.localhost:{port}",
    "0x7f000001:{port}",
    "0x7f.0.0.1:{port}",
    "2130706433:{port}",
    "0177.0.0.1:{port}",
    "017700000001:{port}",
    "127.1:{port}",
    "127.0.1:{port}",
    "127.0.0.01:{port}",
    "127.000.000.001:{port}",
    "0.0.0.0:{port}",
    "0:{port}",
    "127.0.0.2:{port}",
    "127.255.255.254:{port}",
    "user@127.0.0.1:{port}",
    "user:pass@localhost:{port}",
    "evil.example@127.0.0.1:{port}",
    "127.0.0.1:{port}@evil.example",
    "127.0.0.1:{port}.evil.example",
    "127.0.0.1:{port}/",
    "127.0.0.1:{port}/evil",
    "127.0.0.1:{port}#",
    "127.0.0.1:{port}?",
    "127.0.0.1:0{port}",
    "127.0.0.1:+{port}",
    "127.0.0.1:{port}:{port}",
    "127.0.0.1:{port},evil.example",
    "evil.example,127.0.0.1:{port}",
    "127.0.0.1 :{port}",
    "127.0.0.1: {port}",
    "%31%32%37.0.0.1:{port}",
    "127%2e0.0.1:{port}",
    "xn--localhost-:{port}",
    "lоcalhost:{port}",  # Cyrillic o (sent as its UTF-8 bytes)
    "",
]


@pytest.mark.parametrize("host", REBINDING_HOSTS)
def test_dns_rebinding_hosts_are_refused(target: Target, host: str) -> None:
    value = host.format(port=target.port, other=target.port + 1 if target.port < 65535 else target.port - 1)
    headers = list({**standard(target), "Host": value.encode("utf-8").decode("latin-1")}.items())
    refused(init(target, headers), target, (400, 403))


@pytest.mark.parametrize("order", ["evil-first", "evil-last"])
def test_two_host_headers_are_refused(target: Target, order: str) -> None:
    base = [(k, v) for k, v in standard(target).items() if k != "Host"]
    hosts = [("Host", f"127.0.0.1:{target.port}"), ("Host", f"evil.example:{target.port}")]
    if order == "evil-first":
        hosts.reverse()
    refused(init(target, hosts + base), target, (400, 403))


def test_a_missing_host_is_refused(target: Target) -> None:
    headers = [(k, v) for k, v in standard(target).items() if k != "Host"]
    refused(init(target, headers), target, (400, 403))


# -- Origin: only browsers send one, and a browser is never a legitimate client --

ORIGINS = [
    "null",
    "",
    "http://localhost:{port}",
    "http://127.0.0.1:{port}",
    "http://localhost",
    "http://127.0.0.1",
    "https://localhost:{port}",
    "http://[::1]:{port}",
    "http://evil.example",
    "https://evil.example:{port}",
    "file://",
    "chrome-extension://abcdefghijklmnop",
    "moz-extension://1234",
    "vscode-webview://abc",
    "vscode-file://vscode-app",
    "app://obsidian.md",
    "http://localhost:{port}/mcp",
    "*",
]


@pytest.mark.parametrize("origin", ORIGINS)
def test_every_origin_is_refused(target: Target, origin: str) -> None:
    headers = list({**standard(target), "Origin": origin.format(port=target.port)}.items())
    refused(init(target, headers), target, (403,))


def test_two_origin_headers_and_an_origin_on_a_stream_request_are_refused(target: Target) -> None:
    headers = [*standard(target).items(), ("Origin", "null"), ("Origin", f"http://127.0.0.1:{target.port}")]
    refused(init(target, headers), target, (403,))
    http = RawHttp(target.port)
    try:
        get_headers = [*standard(target).items(), ("Origin", "null")]
        reply = http.request("GET", "/mcp", get_headers)
    finally:
        http.close()
    refused(reply, target, (403,))


# -- the bearer token --


def token_variants(token: str) -> list[tuple[str, list[tuple[str, str]]]]:
    wrong = "A" * len(token)
    return [
        ("missing", []),
        ("empty header", [("Authorization", "")]),
        ("scheme only", [("Authorization", "Bearer")]),
        ("scheme and space", [("Authorization", "Bearer ")]),
        ("wrong, same length", [("Authorization", f"Bearer {wrong}")]),
        ("prefix", [("Authorization", f"Bearer {token[:-1]}")]),
        ("first half", [("Authorization", f"Bearer {token[: len(token) // 2]}")]),
        ("suffix added", [("Authorization", f"Bearer {token}x")]),
        ("first char dropped", [("Authorization", f"Bearer {token[1:]}")]),
        ("case changed", [("Authorization", f"Bearer {token.swapcase()}")]),
        ("upper case", [("Authorization", f"Bearer {token.upper()}")]),
        ("scheme lower case", [("Authorization", f"bearer {token}")]),
        ("scheme upper case", [("Authorization", f"BEARER {token}")]),
        ("two spaces", [("Authorization", f"Bearer  {token}")]),
        ("tab", [("Authorization", f"Bearer\t{token}")]),
        ("basic scheme", [("Authorization", f"Basic {token}")]),
        ("token scheme", [("Authorization", f"Token {token}")]),
        ("bare token", [("Authorization", token)]),
        ("token twice in one header", [("Authorization", f"Bearer {token}, Bearer {token}")]),
        ("token then junk", [("Authorization", f"Bearer {token} junk")]),
        ("quoted", [("Authorization", f'Bearer "{token}"')]),
        ("percent-encoded", [("Authorization", "Bearer " + "".join(f"%{b:02X}" for b in token.encode()))]),
        ("duplicated, both right", [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")]),
        ("duplicated, wrong first", [("Authorization", f"Bearer {wrong}"), ("Authorization", f"Bearer {token}")]),
        ("duplicated, right first", [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {wrong}")]),
        ("other header", [("X-Auth-Token", token)]),
        ("proxy header", [("Proxy-Authorization", f"Bearer {token}")]),
        ("cookie", [("Cookie", f"authToken={token}; token={token}")]),
    ]


@pytest.mark.parametrize("name", [name for name, _ in token_variants("x" * 43)])
def test_token_tricks_are_refused(target: Target, name: str) -> None:
    auth = dict(token_variants(target.token))[name]
    base = [(k, v) for k, v in standard(target).items() if k != "Authorization"]
    reply = init(target, base + auth)
    refused(reply, target, (400, 401))
    if reply.status == 401:
        assert (reply.header("www-authenticate") or "").startswith("Bearer")


@pytest.mark.parametrize("query", ["token={t}", "authToken={t}", "access_token={t}", "auth=Bearer%20{t}", "{t}"])
def test_a_token_in_the_query_string_only_is_refused(target: Target, query: str) -> None:
    base = [(k, v) for k, v in standard(target).items() if k != "Authorization"]
    refused(init(target, base, path="/mcp?" + query.format(t=target.token)), target, (401, 404))


# -- discovery file and folder modes at the moment of creation --


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """umask 0: any mode that is not set explicitly at creation shows up as world-accessible."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_discovery_folders_and_file_are_private_from_the_first_instant(
    tmp_path: str, monkeypatch: pytest.MonkeyPatch, permissive_umask: None
) -> None:
    directory = os.path.join(str(tmp_path), "tmp", "gemini", "ide")
    seen: list[tuple[str, str, int]] = []  # (event, path, mode) observed right at creation
    real_mkdir, real_open, real_replace = os.mkdir, os.open, os.replace

    def mode_of(path: str) -> int:
        return stat.S_IMODE(os.lstat(path).st_mode)

    def mkdir(path: str, mode: int = 0o777, *args: object, **kwargs: object) -> None:
        real_mkdir(path, mode, *args, **kwargs)  # type: ignore[arg-type]
        seen.append(("mkdir", str(path), mode_of(path)))

    def open_(path: str, flags: int, mode: int = 0o777, *args: object, **kwargs: object) -> int:
        fd = real_open(path, flags, mode, *args, **kwargs)  # type: ignore[arg-type]
        if flags & os.O_CREAT:
            seen.append(("open", str(path), stat.S_IMODE(os.fstat(fd).st_mode)))
            seen.append(("folder at open", os.path.dirname(str(path)), mode_of(os.path.dirname(str(path)))))
        return fd

    def replace(src: str, dst: str, *args: object, **kwargs: object) -> None:
        seen.append(("before rename", str(src), mode_of(src)))
        real_replace(src, dst, *args, **kwargs)  # type: ignore[arg-type]

    # A watcher stats everything under the tree in a tight loop while the writer runs.
    watched: list[tuple[str, int]] = []
    stop = threading.Event()
    root = os.path.join(str(tmp_path), "tmp")

    def watch() -> None:
        while not stop.is_set():
            for base, dirs, files in os.walk(root):
                for name in dirs + files:
                    try:
                        watched.append((os.path.join(base, name), mode_of(os.path.join(base, name))))
                    except FileNotFoundError:
                        pass

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "replace", replace)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        path = discovery.write(4242, 51234, ["/w"], "secret-token", directory)
        discovery.write(4242, 51234, ["/w", "/v"], "secret-token", directory)  # the atomic rewrite
        final_mode = stat.S_IMODE(os.stat(path).st_mode)
        runtime = Runtime(discovery_directory=directory)
        handle = runtime.open_window(ScriptedEditor(), ["/w"])
        handle.ready.result(30)
        runtime.stop()
    finally:
        stop.set()
        watcher.join()
        monkeypatch.undo()
    made = [p for e, p, _ in seen if e == "mkdir"]
    assert os.path.join(str(tmp_path), "tmp") in made and directory in made  # every missing level
    assert all(mode == 0o700 for e, _, mode in seen if e in ("mkdir", "folder at open")), seen
    assert all(mode == 0o600 for e, _, mode in seen if e in ("open", "before rename")), seen
    assert len([e for e, _, _ in seen if e == "before rename"]) >= 3
    lax = [(p, oct(m)) for p, m in watched if (m & 0o077) and p.startswith(os.path.join(root, "gemini"))]
    assert not lax, lax
    assert final_mode == 0o600


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_an_existing_open_discovery_folder_is_narrowed_before_the_file_is_written(
    tmp_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = os.path.join(str(tmp_path), "ide")
    os.mkdir(directory)
    os.chmod(directory, 0o777)
    folder_modes: list[int] = []
    real_open = os.open

    def open_(path: str, flags: int, mode: int = 0o777, *args: object, **kwargs: object) -> int:
        if flags & os.O_CREAT:
            folder_modes.append(stat.S_IMODE(os.stat(os.path.dirname(str(path))).st_mode))
        return real_open(path, flags, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", open_)
    discovery.write(1, 2, [], "t", directory)
    monkeypatch.undo()
    assert folder_modes == [0o700]


# -- the token never appears in logs or in the doctor report --


def test_the_token_is_never_logged_during_a_full_session_with_errors(tmp_path: str, workspace_for_tools: str) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    loggers = ["gemini_companion", "uvicorn", "uvicorn.error", "uvicorn.access", "mcp", "httpx2", "httpcore"]
    old_levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        runtime = Runtime(discovery_directory=os.path.join(str(tmp_path), "ide"))
        handle = runtime.open_window(
            ScriptedEditor(), [workspace_for_tools], tool_factory=tool_factory(WorkspaceToolSettings())
        )
        handle.ready.result(30)
        token = handle.token
        _full_session(handle, workspace_for_tools)
        # A failing window start (unwritable discovery folder) logs and reports without the token.
        blocked = os.path.join(str(tmp_path), "file")
        with open(blocked, "w") as f:
            f.write("x")
        runtime2 = Runtime(discovery_directory=os.path.join(blocked, "ide"))
        failing = runtime2.open_window(ScriptedEditor(), [workspace_for_tools], token=token)
        with pytest.raises(OSError) as failure:
            failing.ready.result(30)
        assert token not in str(failure.value)
        runtime2.stop()
        runtime.stop()
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for name, level in old_levels.items():
            logging.getLogger(name).setLevel(level)
    text = stream.getvalue()
    assert "uvicorn" in text or "mcp" in text or "gemini_companion" in text  # something was captured at DEBUG
    assert token not in text
    assert token[:16] not in text and token[-16:] not in text


def _full_session(handle: WindowHandle, workspace: str) -> None:
    import anyio

    async def session() -> None:
        async with connect(handle.url, handle.token, "log-probe") as client:
            await client.wait_for("ide/contextUpdate")
            target = os.path.join(workspace, "a.txt")
            await client.open_diff(target, "new\n")
            await client.close_diff(target)
            assert (await client.session.call_tool("no_such_tool", {})).is_error
            assert (await client.session.call_tool("openDiff", {"filePath": 1})).is_error
            assert (await client.session.call_tool("read_file", {"path": "../../etc/passwd"})).is_error
            assert not (await client.session.call_tool("read_file", {"path": "a.txt"})).is_error
        # refused requests: a wrong token that contains the right one, a token in the query string
        http = RawHttp(handle.port)
        base = [("Host", f"127.0.0.1:{handle.port}"), ("Accept", ACCEPT), ("Content-Type", "application/json")]
        http.request("POST", "/mcp", [*base, ("Authorization", f"Bearer {handle.token}x")], initialize_body())
        http.request("POST", f"/mcp?token={handle.token}", base, initialize_body())
        http.request("POST", "/mcp", [*base, ("Authorization", f"Bearer {handle.token}")], b"{not json")
        http.close()

    anyio.run(session)


@pytest.fixture
def workspace_for_tools(tmp_path: str) -> str:
    path = os.path.join(str(tmp_path), "ws")
    os.makedirs(path)
    with open(os.path.join(path, "a.txt"), "w") as f:
        f.write("hello\n")
    return path


def test_the_doctor_report_never_contains_the_token(target: Target) -> None:
    handle = target.handle
    with open(handle.discovery_path) as f:
        assert json.load(f)["authToken"] == target.token  # the facts point at a file that holds it
    for state in ("listening", "starting", "failed: Cannot write the discovery file"):
        facts = doctor.Facts(
            build="4213",
            platform="linux x64",
            python="3.14.0",
            server_state=state,
            url=handle.url,
            discovery=doctor.DiscoveryCheck.of(handle.discovery_path),
            workspace_path=discovery.workspace_path(handle.folders),
            clients=list(handle.connected_clients),
            paused=handle.context.paused,
            last_context=list(handle.last_context_paths),
            libraries=doctor.library_versions(),
            terminus_installed=False,
        )
        text = doctor.report(facts)
        assert handle.discovery_path in text and str(target.port) in text
        assert target.token not in text and target.token[:12] not in text


# -- the workspace tools' path policy --


@pytest.fixture(scope="module")
def tool_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WindowHandle, ScriptedEditor, str]]:
    root = str(tmp_path_factory.mktemp("policy"))
    ws = os.path.join(root, "ws")
    outside = os.path.join(root, "outside")
    os.makedirs(os.path.join(ws, "sub"))
    os.makedirs(outside)
    os.makedirs(ws + "-evil")
    for path in (os.path.join(outside, "secret.txt"), os.path.join(ws + "-evil", "secret.txt")):
        with open(path, "w") as f:
            f.write("SECRET\n")
    with open(os.path.join(ws, "inside.txt"), "w") as f:
        f.write("inside\n")
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(ws, "link_out"))
    os.symlink(outside, os.path.join(ws, "dir_link"))
    os.symlink("../../outside", os.path.join(ws, "sub", "rel_link"))
    os.symlink(os.path.join(outside, "new.txt"), os.path.join(ws, "dangling_out"))
    if hasattr(os, "mkfifo"):
        os.mkfifo(os.path.join(ws, "fifo"))
    editor = ScriptedEditor()
    runtime = Runtime(discovery_directory=os.path.join(root, "ide"))
    handle = runtime.open_window(editor, [ws], tool_factory=tool_factory(WorkspaceToolSettings()))
    handle.ready.result(30)
    try:
        yield handle, editor, root
    finally:
        runtime.stop()


ESCAPES = [
    "../outside/secret.txt",
    "./../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "sub/./../.././outside/secret.txt",
    "{ws}/../outside/secret.txt",
    "{ws}//../outside/secret.txt",
    "{root}/outside/secret.txt",
    "/{root}/outside/secret.txt",
    "{ws}-evil/secret.txt",
    "{ws}/../ws-evil/secret.txt",
    "../ws-evil/secret.txt",
    "link_out",
    "{ws}/link_out",
    "dir_link/secret.txt",
    "dir_link/new.txt",
    "sub/rel_link/secret.txt",
    "dangling_out",
    "file://{root}/outside/secret.txt",
    "file://localhost{root}/outside/secret.txt",
    "file://{ws}/%2e%2e/outside/secret.txt",
    "file://{ws}/..%2foutside/secret.txt",
    "file://evil.example{ws}/inside.txt",
    "FILE://{root}/outside/secret.txt",
    "/etc/passwd",
    "/etc/hostname",
    "~/../../etc/passwd",
    "inside.txt\x00/../../outside/secret.txt",
    "fifo",
    "{ws_upper_tail}/../outside/secret.txt",
    "{root}/OUTSIDE/secret.txt",
    "{root}/Outside/../outside/secret.txt",
    "..",
    "../outside",
    "dir_link",
    "sub/rel_link",
    "{root}",
    "/",
    "",
    " ",
]


def _probe_path(template: str, root: str) -> str:
    ws = os.path.join(root, "ws")
    return template.format(
        ws=ws, root=root.lstrip("/") if template.startswith("/{root}") else root, ws_upper_tail=os.path.join(root, "WS")
    )


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_files"])
async def test_workspace_tools_refuse_every_escape(
    tool_target: tuple[WindowHandle, ScriptedEditor, str], tool: str
) -> None:
    handle, editor, root = tool_target
    before = snapshot(root)
    async with connect(handle.url, handle.token, "policy-probe") as client:
        for template in ESCAPES:
            if tool == "list_files" and template == "":
                continue  # no path means the whole workspace
            path = _probe_path(template, root)
            arguments: dict[str, object] = {"path": path}
            if tool == "write_file":
                arguments["content"] = "PWNED\n"
            result = await client.session.call_tool(tool, arguments)
            text = text_of(result)
            assert result.is_error, (template, text)
            assert "SECRET" not in text and "root:" not in text, (template, text)
            # Refused by the path policy itself, not merely missing (a case trick on a case-sensitive
            # disk would otherwise "pass" by not existing).
            assert text.startswith(("Refused", "The path must be", "The argument 'path' must be")), (template, text)
    assert editor.shown == []  # nothing was even offered for review
    after = snapshot(root)
    assert {k: v for k, v in after.items() if not k.startswith("ide")} == {
        k: v for k, v in before.items() if not k.startswith("ide")
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
