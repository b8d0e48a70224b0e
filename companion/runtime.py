"""The loop thread: one background thread, one asyncio loop, every window's server on it.

Callers on any thread (Sublime's main thread, its async worker, tests) get a `WindowHandle` at
once and never wait for the loop: requests made before the thread is up are queued. The heavy
imports (mcp, uvicorn, pydantic) happen on the loop thread, so creating a runtime costs the
caller nothing but starting a thread.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import socket
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .claude_ide import lockfile
from .core.context import ContextTracker
from .core.server import loopback
from .core.server.chat_tokens import ChatTokens
from .core.server.rate_limited import RateLimitedWarning
from .core.system import pywin32_path, token_files
from .gemini_ide import discovery

if TYPE_CHECKING:
    import asyncio

    from .claude_ide.server import ClaudeSide
    from .core.editor import Editor
    from .core.server.window import Window
    from .core.server.window_server import WindowServer
    from .core.tool_calls import ToolSpec
    from .gemini_ide.server import GeminiSide

    ToolFactory = Callable[[Window], list[ToolSpec]]

log = logging.getLogger("gemini_companion")

T = TypeVar("T")
THREAD_NAME = "gemini-companion-loop"
# How long a new loop thread waits for the previous one (a reload) to finish stopping its servers
# before it starts its own: they may want the same `server_port`, and its files must go first.
PREVIOUS_LOOP_WAIT = 10.0


class LoopThread(threading.Thread):
    """The loop's thread; `stopping` is read by the next runtime's thread, which may come from a
    reloaded copy of this module (so it is looked up by name, never by class)."""

    stopping = False


class RuntimeStopped(RuntimeError):
    """The runtime was stopped; start a new one to serve again."""


class WindowHandle:
    """A window's server as seen from any thread."""

    def __init__(
        self,
        runtime: Runtime,
        editor: Editor,
        folders: Sequence[str],
        port: int,
        token: str | None,
        tool_factory: ToolFactory | None = None,
        claude: bool = False,
        gemini: bool = True,
        discoverable: bool = True,
    ) -> None:
        self.runtime = runtime
        self.discoverable = discoverable  # False: no discovery file (a headless chat's own window)
        self.serves_claude = claude  # Claude Code's /ide side (a WebSocket and a lock file) is on
        self.serves_gemini = gemini  # Gemini CLI's side is on and its discovery file is one Gemini CLI reads
        self.tool_factory = tool_factory
        self.editor = editor
        self.folders: list[str] = list(folders)
        self.context = ContextTracker()
        self.chat_tokens = ChatTokens()  # each chat's own token for the MCP tools at /mcp (never `token`)
        self.requested_port = port
        self.requested_token = token
        self.ready: concurrent.futures.Future[WindowHandle] = concurrent.futures.Future()
        self.server: WindowServer | None = None  # loop-side object; read its fields only on the loop
        self.gemini: GeminiSide | None = None  # loop-side: the MCP room at /mcp (Gemini CLI's, the workspace tools)
        self.claude: ClaudeSide | None = None  # loop-side: Claude Code's /ide room on the server's port
        self.port = 0
        self.token = ""
        self.discovery_path = ""
        self.claude_token = ""
        self.lock_path = ""  # Claude Code's lock file, when serves_claude
        self.lock_problem = ""  # why the lock file could not be written (the doctor shows it)
        self.lock_refused = False  # ... because its folder is not safe (private_dirs): the status bar says so
        self.discovery_problem = ""  # why the discovery file was not written: its folder is not safe
        self.closed = False
        self.published = False  # its discovery (and lock) files are out, naming its port and tokens
        self.listening: socket.socket | None = None  # bound and listening, until its server takes it
        # Snapshots for the editor's status bar and doctor view (replaced whole, so any thread may read).
        self.connected_clients: list[str] = []
        self.claude_clients: list[str] = []
        self.last_context_paths: list[str] = []
        self.on_clients_changed: Callable[[WindowHandle], None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def serves_mcp(self) -> bool:
        """An MCP endpoint is mounted at /mcp (and a discovery file names it): for Gemini CLI, or for
        the workspace tools that other agents reach through the bridge."""
        return self.serves_gemini or self.tool_factory is not None

    def set_folders(self, folders: Sequence[str]) -> concurrent.futures.Future[None]:
        """The window's folders changed: rewrite the discovery file (atomically)."""
        return self.runtime.submit(lambda: self.runtime._set_folders(self, list(folders)))

    def close(self) -> concurrent.futures.Future[None]:
        return self.runtime.submit(lambda: self.runtime._close_window(self))

    def at_mentioned(self, path: str, line_start: int | None, line_end: int | None) -> concurrent.futures.Future[int]:
        """Put `@path#L…` into the prompt of every connected Claude Code; the Future says how many."""

        async def send() -> int:
            claude = self.claude
            if self.server is None or claude is None:
                return 0
            return claude.at_mentioned(path, line_start, line_end)

        return self.runtime.submit(send)

    def client_names(self) -> list[str]:
        """Names of the connected clients (blocks briefly for the loop)."""

        async def names() -> list[str]:
            gemini = self.gemini if self.server is not None else None
            return [c.client_name for c in gemini.broadcaster.clients()] if gemini else []

        return self.runtime.submit(names).result(2)


class Runtime:
    def __init__(
        self,
        editor_pid: int | Callable[[], int] | None = None,
        discovery_directory: str | None = None,
        lock_directory: str | None = None,
    ) -> None:
        # A callable is resolved on the loop thread (finding Sublime's PID may import psutil).
        self._editor_pid_source = editor_pid
        self.editor_pid = editor_pid if isinstance(editor_pid, int) else os.getpid()
        self.discovery_directory = discovery_directory
        self.lock_directory = lock_directory  # Claude Code's lock folder; None: lockfile.lock_dir()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stopped = False
        self.windows: list[WindowHandle] = []
        self._opening: set[asyncio.Task[Any]] = set()  # servers still starting (loop thread only)
        self._unready: set[WindowHandle] = set()  # windows whose `ready` has no answer yet (under _lock)
        self._ended_because: RuntimeStopped | None = None  # why the loop thread ended on its own
        # Windows asked for before the loop thread took them: it publishes them before it imports
        # asyncio (under _lock; None once taken).
        self._early: list[WindowHandle] | None = []
        self._starting: set[WindowHandle] = set()  # published, not serving yet (loop thread only)

    # -- thread plumbing --

    def start(self) -> None:
        with self._lock:
            if self._stopped:
                raise self._ended_because or RuntimeStopped("this runtime was stopped")
            if self._thread is not None:
                return
            self._thread = LoopThread(target=self._run, name=THREAD_NAME, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._before_the_loop()
            import asyncio  # only now: see _before_the_loop

            asyncio.run(self._main())
        except BaseException as exc:
            log.exception("the companion's loop thread ended with an error")
            self._fail_waiting_windows(RuntimeStopped(f"the companion's loop thread ended with an error: {exc!r}"))
        else:
            self._fail_waiting_windows(
                RuntimeStopped("the companion runtime stopped before this window's server started")
            )

    def _fail_waiting_windows(self, error: RuntimeStopped) -> None:
        """No loop runs any more: windows still waiting for their server hear why, and new ones are refused."""
        with self._lock:
            self._stopped = True
            self._ended_because = error
            waiting, self._unready = self._unready, set()
        for handle in waiting:
            if not handle.ready.done():
                handle.ready.set_exception(error)

    def _before_the_loop(self) -> None:
        """On the loop thread, before asyncio (and long before the server stack) is imported: the
        windows asked for so far listen and publish their files at once. A Gemini CLI that Terminus
        restores starts with Sublime and reads the discovery file once, as it starts."""
        _wait_for_stopping_loops()
        if callable(self._editor_pid_source):
            try:
                self.editor_pid = self._editor_pid_source()
            except Exception as exc:
                log.warning("could not determine the editor's PID, using our own: %s", exc)
        with self._lock:
            early, self._early = self._early or [], None
        for handle in early:
            self._listen_and_publish(handle)
        # After publishing: our own files name ports that already listen, so they are never stale.
        for path in discovery.sweep_stale(self.editor_pid, self.discovery_directory):
            log.info("removed a stale discovery file: %s", path)
        for path in lockfile.sweep_stale(self.editor_pid, self.lock_directory):
            log.info("removed a stale Claude Code lock file: %s", path)

    async def _main(self) -> None:
        import asyncio

        asyncio.get_running_loop().set_exception_handler(AcceptErrorLog())
        self._stop_requested = asyncio.Event()
        with self._lock:
            self._loop = asyncio.get_running_loop()
            pending, self._pending = self._pending, []
            stop_asked = self._stopped  # stop() came before there was a loop to tell
        for callback in pending:
            callback()
        if stop_asked:
            self._stop_requested.set()
        await self._stop_requested.wait()
        if self._opening:  # let servers that are binding finish, so they stop cleanly instead of being cancelled
            await asyncio.wait(self._opening, timeout=1.0)
        closing = [*self.windows, *self._starting]  # a window still loading its server has files out too
        await asyncio.gather(*(self._close_window(w) for w in closing), return_exceptions=True)

    def submit(self, make: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Run the coroutine `make()` on the loop from any thread; the result comes as a Future."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def launch() -> None:
            import asyncio  # on the loop thread, where it is loaded

            task = asyncio.ensure_future(make())
            task.add_done_callback(lambda t: _copy_result(t, future))

        self._post(launch)
        return future

    def _post(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if self._stopped:
                raise self._ended_because or RuntimeStopped(
                    "the companion runtime has stopped; start a new one to serve"
                )
            if self._loop is None:
                self._pending.append(callback)
                return
            loop = self._loop
        loop.call_soon_threadsafe(callback)

    def _ready_answered(self, handle: WindowHandle) -> None:
        with self._lock:
            self._unready.discard(handle)

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    # -- windows --

    def open_window(
        self,
        editor: Editor,
        folders: Sequence[str],
        port: int = 0,
        token: str | None = None,
        tool_factory: ToolFactory | None = None,
        claude: bool = False,
        gemini: bool = True,
        discoverable: bool = True,
    ) -> WindowHandle:
        """Start a server for one window; returns at once, `handle.ready` completes when it listens.

        `tool_factory(server)` (run on the loop) returns the extra tools the server offers. With
        `claude`, the server also serves Claude Code's /ide integration and writes its lock file;
        without `gemini`, Gemini CLI's tools and notifications are off and its discovery file is one
        Gemini CLI does not read (the bridge still does, for the tools); with neither `gemini` nor
        tools there is no discovery file and /mcp is refused like any unknown path. Without
        `discoverable` no discovery file is written either: only who is handed the URL and a token
        (a headless chat's agent) reaches /mcp.
        """
        handle = WindowHandle(self, editor, folders, port, token, tool_factory, claude, gemini, discoverable)
        with self._lock:
            if self._early is not None:  # before the thread starts, which publishes these first
                self._early.append(handle)
        self.start()
        with self._lock:
            self._unready.add(handle)
        handle.ready.add_done_callback(lambda _: self._ready_answered(handle))
        self.submit(lambda: self._open_window(handle)).add_done_callback(
            lambda opening: _answer_if_unanswered(handle, opening)
        )
        return handle

    async def _open_window(self, handle: WindowHandle) -> None:
        """Listen and publish first (done already for a window asked for before the loop), then load
        the server stack and serve.

        Gemini CLI reads the discovery file once, as it starts (a Gemini CLI tab that Terminus
        restores starts with Sublime): the files go out before the MCP SDK is imported, and a client
        that connects meanwhile waits in the socket's backlog until the server takes it over."""
        import asyncio

        if handle.ready.done():
            return  # publishing it before the loop failed, and `ready` says why
        if not handle.published and not self._listen_and_publish(handle):
            return  # `ready` says why
        sock, handle.listening = handle.listening, None
        assert sock is not None
        task = asyncio.current_task()
        assert task is not None  # submit() runs every coroutine as a task
        self._opening.add(task)
        try:
            # Let every other window queued with this one publish its files before the import below
            # holds the loop for most of a second.
            await asyncio.sleep(0)
            server = None if handle.closed else self._new_server(handle, sock)
            if server is not None:
                await self._serve(handle, server)
        except BaseException as exc:
            self._unpublish(handle)
            handle.server = handle.gemini = handle.claude = None
            sock.close()  # the port is free again before anyone waiting hears of the failure
            if not handle.ready.done():
                handle.ready.set_exception(exc)
            return
        finally:
            self._opening.discard(task)
            self._starting.discard(handle)
        if handle.server is None:
            sock.close()  # the window closed while its server was starting: never served, port free
            return
        self.windows.append(handle)
        log.info("window server listening on %s (discovery file %s)", handle.url, handle.discovery_path)
        handle.ready.set_result(handle)

    def _listen_and_publish(self, handle: WindowHandle) -> bool:
        """Bind the window's socket and write its files; False (with `ready` answered) on failure.
        Needs nothing but the standard library and our own light modules."""
        from .core.server.security import new_token

        try:
            sock = loopback.bind_loopback(handle.requested_port)
        except OSError as exc:
            handle.ready.set_exception(exc)
            return False
        handle.listening = sock
        handle.port = sock.getsockname()[1]
        handle.token = handle.requested_token or new_token()
        handle.claude_token = new_token() if handle.serves_claude else ""
        try:
            self._publish(handle)
        except BaseException as exc:
            self._unpublish(handle)
            handle.listening = None
            sock.close()
            handle.ready.set_exception(exc)
            return False
        self._starting.add(handle)
        return True

    def _publish(self, handle: WindowHandle) -> None:
        handle.published = True
        if handle.serves_mcp and handle.discoverable:
            self._claim_discovery(handle)
        if handle.serves_claude:
            self._claim_lock(handle)

    def _unpublish(self, handle: WindowHandle) -> None:
        handle.published = False
        handle.discovery_path = _withdrawn(handle.discovery_path)
        handle.lock_path = _withdrawn(handle.lock_path)

    def _new_server(self, handle: WindowHandle, sock: socket.socket) -> WindowServer:
        """The window's server on `sock`, its rooms mounted; imports the server stack (a missing or
        broken library fails here)."""
        pywin32_path.make_importable()  # mcp imports pywin32 on Windows: its folders must be on sys.path
        from .core.server.window_server import WindowServer

        server = WindowServer(
            handle.editor,
            handle.context,
            handle.token,
            sock,
            folders=lambda: list(handle.folders),
            chat_tokens=handle.chat_tokens,
        )
        gemini = claude = None
        if handle.serves_mcp:
            from .gemini_ide.server import GeminiSide  # the MCP SDK's Streamable HTTP server

            gemini = GeminiSide(server, handle.serves_gemini)
            gemini.broadcaster.on_clients_changed = lambda: self._clients_changed(handle)
            gemini.on_context_sent = lambda params: _remember_paths(handle, params)
            if handle.tool_factory is not None:
                gemini.extra_tools = {spec.tool.name: spec for spec in handle.tool_factory(server)}
        if handle.serves_claude:
            from .claude_ide.server import ClaudeSide  # the WebSocket stack, only when Claude Code is served

            claude = ClaudeSide(server, handle.claude_token)
            claude.on_clients_changed = lambda: self._clients_changed(handle)
        server.http = handle.gemini = gemini
        server.websocket = handle.claude = claude
        return server

    async def _serve(self, handle: WindowHandle, server: WindowServer) -> None:
        try:
            await server.start()
        except BaseException:
            await server.stop()
            raise
        if handle.closed:  # the window closed while its server was starting
            await server.stop()
            return
        handle.server = server

    def _clients_changed(self, handle: WindowHandle) -> None:
        gemini = handle.gemini
        handle.connected_clients = [c.client_name for c in gemini.broadcaster.connected()] if gemini else []
        handle.claude_clients = handle.claude.client_names() if handle.claude is not None else []
        if handle.on_clients_changed is not None:
            handle.on_clients_changed(handle)

    def _write_discovery(self, handle: WindowHandle) -> str:
        return discovery.write(
            self.editor_pid, handle.port, handle.folders, handle.token, self.discovery_directory, handle.serves_gemini
        )

    def _claim_discovery(self, handle: WindowHandle) -> None:
        """Write the discovery file; a refused folder leaves Claude Code served and is reported.
        Any other failure is the window's (raised)."""
        try:
            handle.discovery_path = self._write_discovery(handle)
            handle.discovery_problem = ""
        except token_files.FolderRefused as exc:
            handle.discovery_path = _withdrawn(handle.discovery_path)
            handle.discovery_problem = str(exc)
            log.warning("%s", exc)

    def _claim_lock(self, handle: WindowHandle) -> None:
        """Write Claude Code's lock file; a failure leaves Gemini CLI served and is reported."""
        try:
            handle.lock_path = lockfile.write(
                self.editor_pid, handle.port, handle.folders, handle.claude_token, self.lock_directory
            )
            handle.lock_problem, handle.lock_refused = "", False
        except token_files.TokenFileError as exc:
            handle.lock_problem, handle.lock_refused = str(exc), isinstance(exc, token_files.FolderRefused)
            if handle.lock_refused:
                handle.lock_path = _withdrawn(handle.lock_path)
            log.warning("%s", exc)

    async def _set_folders(self, handle: WindowHandle, folders: list[str]) -> None:
        handle.folders = folders
        if handle.published and not handle.closed:
            if handle.serves_mcp and handle.discoverable:
                self._claim_discovery(handle)
            if handle.serves_claude:
                self._claim_lock(handle)

    async def _close_window(self, handle: WindowHandle) -> None:
        if handle.closed:
            return
        handle.closed = True
        # The file goes first, so no new CLI picks a server that is about to stop.
        if handle.discovery_path:
            discovery.remove(handle.discovery_path)
        if handle.lock_path:
            discovery.remove(handle.lock_path)
        if handle in self.windows:
            self.windows.remove(handle)
        if handle.server is not None:
            await handle.server.stop()
        if not handle.ready.done():
            handle.ready.set_exception(RuntimeStopped("the window was closed before its server started"))

    # -- shutdown --

    def stop(self, timeout: float | None = 3.0) -> None:
        """Stop every window server, delete their discovery and lock files and end the loop thread.

        Waits up to `timeout` seconds for that; with None it only asks and returns at once: Sublime's
        main thread must not wait for a loop that may be busy. The loop thread then finishes on its
        own, and the next runtime's loop thread waits for it before it serves (a reload)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True  # refuse new work; what was already queued still runs
            thread, loop, stop_requested = self._thread, self._loop, self._stop_requested
        if not isinstance(thread, LoopThread):
            return
        thread.stopping = True
        if loop is not None and stop_requested is not None:  # else _main sees _stopped when it has a loop
            try:
                loop.call_soon_threadsafe(stop_requested.set)
            except RuntimeError:
                pass  # the loop thread already ended on its own (an error)
        if timeout is None:
            return
        thread.join(timeout)
        if thread.is_alive():
            log.warning("the companion's loop thread did not stop within %.1f s", timeout)


def _wait_for_stopping_loops() -> None:
    """On a new loop thread: let the loop threads of stopped runtimes (before a reload) finish
    first, so their ports are free and their files gone before this one serves."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread.name == THREAD_NAME and thread is not current and getattr(thread, "stopping", False):
            thread.join(PREVIOUS_LOOP_WAIT)
            if thread.is_alive():
                log.warning("the previous loop thread did not stop within %.0f s; starting anyway", PREVIOUS_LOOP_WAIT)


def _withdrawn(path: str) -> str:
    """Remove our file at `path` (written before its folder turned unsafe); returns "" (no file)."""
    if path:
        discovery.remove(path)
    return ""


def _remember_paths(handle: WindowHandle, params: dict[str, Any]) -> None:
    handle.last_context_paths = [f["path"] for f in params["workspaceState"]["openFiles"]]


class AcceptErrorLog:
    """The loop's exception handler: asyncio reports every failed accept() with a traceback, and at
    the process's file-descriptor limit that is every attempt (550 MB of log in 40 s, measured).
    One warning per connections.REPORT_SECONDS says how many there were; everything else is reported
    as usual."""

    def __init__(self) -> None:
        self.warning = RateLimitedWarning(
            "cannot accept connections: %s. Another program may hold too many connections to the "
            "companion or too many open files; the companion keeps serving the connections it has"
        )

    @property
    def suppressed(self) -> int:
        """Failed accepts since the last report."""
        return self.warning.count

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if not str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            loop.default_exception_handler(context)
            return
        self.warning(context.get("exception"))


def _answer_if_unanswered(handle: WindowHandle, opening: concurrent.futures.Future[None]) -> None:
    """Whatever ended the opening without an answer (a bug, a cancelled task) still answers the
    window: a `ready` that never completes would leave it waiting forever."""
    if handle.ready.done():
        return
    error = None if opening.cancelled() else opening.exception()
    if error is None and not handle.closed:
        error = RuntimeError("the window's server ended its start-up without an answer")
    if error is not None:
        log.error("the window's server could not start: %r", error)
        handle.ready.set_exception(error)


def _copy_result(task: asyncio.Future[T], future: concurrent.futures.Future[T]) -> None:
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif task.exception() is not None:
        future.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        future.set_result(task.result())
