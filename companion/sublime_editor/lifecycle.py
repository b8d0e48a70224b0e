"""Plugin lifecycle: start the runtime when Sublime loads the package, leave nothing when it goes.

`plugin_loaded` only creates objects and starts the loop thread. That thread checks the libraries,
then (back on the main thread) every window gets its server; the imports of the server stack, the
socket binding and the discovery files all happen on the loop thread, so the editor never waits.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import sublime

from .. import doctor
from ..core.context import DEFAULT_EXCLUDES, SharingPolicy
from ..core.system.processes import editor_pid
from ..runtime import Runtime
from . import context_feed, dependencies, direct_access, settings
from .chat import sessions as chat_sessions
from .connect_views import close_views
from .window_state import WindowState
from .windows import WindowRegistry, running

T = TypeVar("T")

LOGGER_NAME = "gemini_companion"
SETTINGS_LISTENER = "gemini_companion.lifecycle"
PREFERENCES = "Preferences.sublime-settings"  # folder_exclude_patterns / file_exclude_patterns live there
# Folders can change with no event (drag and drop, `subl -a`, set_project_data), and a window can
# close with none (sublimehq/sublime_text#5148): how often to look.
WINDOW_POLL_MS = 1000
# How often to look at the libraries: for missing ones to arrive, or for running ones to change.
LIBRARY_CHECK_MS = 5000

# What the commands read (the runtime, the registry, the libraries' problem) lives in `windows.running`.
_started_with: dict[str, str | None] = {}  # the library versions the servers started with
_installed: frozenset[str] = frozenset()  # the dist-info folders on sys.path when the servers started
_direct_access: tuple[object, ...] | None = None  # the server settings the servers started with (settings_key)


def plugin_loaded() -> None:
    configure_logging()
    settings.settings().add_on_change(SETTINGS_LISTENER, settings_changed)
    sublime.load_settings(PREFERENCES).add_on_change(SETTINGS_LISTENER, preferences_changed)
    runtime = Runtime(editor_pid=lambda: editor_pid(sublime.executable_path()))
    running.runtime = runtime
    runtime.start()
    # Reading the libraries' metadata touches ~20 folders on disk (slow when the disk is cold): the
    # loop thread does it, and the servers start on the main thread once it has said yes.
    _after(runtime, _check_libraries, _libraries_checked)


async def _check_libraries() -> dependencies.Check:
    # ~20 dist-info folders, some milliseconds: no server runs yet (or any more) on this loop.
    return dependencies.check()


def _after(runtime: Runtime, work: Callable[[], Coroutine[Any, Any, T]], then: Callable[[Runtime, T], None]) -> None:
    """Run `work` on the loop thread, then `then(runtime, result)` on the main thread, unless the
    package was unloaded (or reloaded) meanwhile or the work failed."""

    def done(future: concurrent.futures.Future[T]) -> None:
        if runtime is not running.runtime or future.cancelled():
            return
        error = future.exception()
        if error is not None:
            logging.getLogger(LOGGER_NAME).warning("could not read the libraries' versions: %s", error)
            return
        then(runtime, future.result())

    runtime.submit(work).add_done_callback(lambda future: sublime.set_timeout(lambda: done(future)))


def _libraries_checked(runtime: Runtime, found: dependencies.Check) -> None:
    """On the main thread: start a server for every window, or say which libraries are missing and
    look again every few seconds: once Package Control has installed them, the servers start."""
    global _direct_access, _started_with, _installed
    problem = running.library_problem
    if not found.ok:
        if problem is None or (problem.missing, problem.wrong) != (found.missing, found.wrong):
            dependencies.report(found)  # once per distinct problem, not at every look
        running.library_problem = found
        sublime.set_timeout(lambda: _look_again(runtime), LIBRARY_CHECK_MS)
        return
    if problem is not None:
        logging.getLogger(LOGGER_NAME).warning("Gemini Companion: the libraries are installed now; starting.")
    running.library_problem, _started_with = None, found.versions
    _installed = found.installed
    registry = WindowRegistry(runtime, sharing_policy(), on_open=_window_opened, on_close=chat_sessions.window_closed)
    running.registry = registry
    _direct_access = direct_access.settings_key()
    _poll_windows(registry)  # its first look opens every window's server
    sublime.set_timeout(lambda: _watch_libraries(runtime), LIBRARY_CHECK_MS)


def _window_opened(state: WindowState) -> None:
    """A window's server started (maybe on the async worker): seed its context, and close the chat
    views an earlier run or load left in it (on the main thread)."""
    context_feed.seed(state)
    sublime.set_timeout(lambda: chat_sessions.close_leftovers(state.window))


def _poll_windows(registry: WindowRegistry) -> None:
    """Once a second on the main thread, until this registry is replaced (unload, reload): a server
    for each window that exists and none for a closed one, with its current folders."""
    if registry is not running.registry:
        return
    registry.reconcile()
    registry.sync_changed_folders()
    sublime.set_timeout(lambda: _poll_windows(registry), WINDOW_POLL_MS)


def _look_again(runtime: Runtime) -> None:
    if runtime is running.runtime and running.registry is None:
        _after(runtime, _check_libraries, _libraries_checked)


def _watch_libraries(runtime: Runtime) -> None:
    """Package Control may upgrade a library while Sublime Text runs (its automatic upgrades, or
    Satisfy Libraries): the old modules stay imported, and anything imported later would come from
    the new files. When a version changes, stop the servers and ask for a restart."""
    if runtime is running.runtime and running.registry is not None:
        _after(runtime, _library_versions, _libraries_now)


async def _library_versions() -> tuple[frozenset[str], dict[str, str | None] | None]:
    """The distributions the library folders list (a directory listing each, well under a
    millisecond: the servers share this loop) and, only when that changed, our libraries' versions."""
    listing = doctor.installed_distributions()
    return listing, (None if listing == _installed else doctor.library_versions())


def _libraries_now(runtime: Runtime, found: tuple[frozenset[str], dict[str, str | None] | None]) -> None:
    global _installed
    listing, versions = found
    upgraded = doctor.upgraded_while_loaded(_started_with, versions) if versions is not None else []
    if not upgraded:
        _installed = listing  # another package's library changed: none of ours, nothing to do
        sublime.set_timeout(lambda: _watch_libraries(runtime), LIBRARY_CHECK_MS)
        return
    running.upgraded = upgraded
    dependencies.report_upgraded(upgraded)
    shutdown(keep_settings_listeners=True)


def plugin_unloaded() -> None:
    shutdown()


def shutdown(api_alive: bool = True, keep_settings_listeners: bool = False) -> None:
    """Close our reviews, stop every server and delete every discovery file (idempotent).

    From `on_exit` (`api_alive=False`) the API has already shut down: nothing may touch it, so only
    the servers and their files go (the editor is closing its views itself).
    """
    registry, runtime = running.registry, running.runtime
    running.registry, running.runtime, running.library_problem = None, None, None
    if api_alive and not keep_settings_listeners:
        settings.settings().clear_on_change(SETTINGS_LISTENER)
        sublime.load_settings(PREFERENCES).clear_on_change(SETTINGS_LISTENER)
    if registry is not None:
        if api_alive:
            registry.close_all()
            close_views()
        else:
            registry.forget_all()
    chats_closing = chat_sessions.close_all(api_alive)
    if runtime is not None and chats_closing:
        _stop_after(runtime, chats_closing, api_alive)
    elif runtime is not None:
        # The main thread never waits for the loop (it may be busy for seconds: a disable, upgrade or
        # reload would freeze the UI); the loop thread stops the servers and deletes the files on its
        # own, and a reloaded package's loop thread waits for it. At exit the process ends next, so
        # only there is it waited for (the API, and with it the UI, is already gone).
        runtime.stop(timeout=None if api_alive else 3.0)
    remove_logging()


CHAT_STOP_SECONDS = 5.0  # an agent's tree gets this long to go at exit (AgentProcess.stop kills it)


def _stop_after(runtime: Runtime, chats_closing: list[concurrent.futures.Future[None]], api_alive: bool) -> None:
    """Stop the loop only once every chat's agent and its processes are gone (the loop runs their
    stop): stopped first, the loop would end with the agents still running. From the main thread
    nothing is waited for; at exit (no UI any more) it is, like the servers."""
    if not api_alive:
        concurrent.futures.wait(chats_closing, CHAT_STOP_SECONDS)
        runtime.stop(timeout=3.0)
        return
    remaining = [len(chats_closing)]

    def one_done(_future: object) -> None:  # on the loop thread
        remaining[0] -= 1
        if remaining[0] == 0:
            runtime.stop(timeout=None)

    for future in chats_closing:
        future.add_done_callback(one_done)


def sharing_policy() -> SharingPolicy:
    exclude = settings.get("context_exclude", list(DEFAULT_EXCLUDES))
    return SharingPolicy(exclude=tuple(str(p) for p in exclude), share_selection=settings.get("share_selection", True))


def settings_changed() -> None:
    """Apply edited settings at once: sharing policy, log level, status bars, workspace tools;
    a new server_port or auth_token, or an agent turned on or off, restarts the servers (that is
    the only way to take them)."""
    global _direct_access
    from . import status

    configure_logging()
    registry = running.registry
    if registry is not None:
        registry.set_policy(sharing_policy())
        registry.refresh_all_tools()
        key = direct_access.settings_key()
        if key != _direct_access:
            _direct_access = key
            sublime.status_message("Gemini Companion: the server settings changed; restarting the servers")
            registry.restart_all()
        for state in registry.all():
            status.show(state)


def preferences_changed() -> None:
    """Sublime's own exclude patterns may have changed: the workspace tools take them at once."""
    if running.registry is not None:
        running.registry.refresh_all_tools()


def remove_logging() -> None:
    """Take our console handler off the (process-wide) logger, as it was before we loaded."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if getattr(handler, "_gemini_companion", False):
            logger.removeHandler(handler)
    logger.propagate = True
    logger.setLevel(logging.NOTSET)


def configure_logging() -> None:
    logger = logging.getLogger(LOGGER_NAME)
    remove_logging()  # a reload must not double every line
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("Gemini Companion: %(levelname)s: %(message)s"))
    handler._gemini_companion = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG if settings.get("debug", False) else logging.WARNING)
