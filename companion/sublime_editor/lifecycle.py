"""Plugin lifecycle: start the runtime when Sublime loads the package, leave nothing when it goes.

`plugin_loaded` only creates objects and starts the loop thread. That thread checks the libraries,
then (back on the main thread) every window gets its server; the imports of the server stack, the
socket binding and the discovery files all happen on the loop thread, so the editor never waits.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sys

import sublime

from ..context import DEFAULT_EXCLUDES, SharingPolicy
from ..processes import editor_pid
from ..runtime import Runtime
from . import dependencies, direct_access, settings
from .windows import WindowRegistry

LOGGER_NAME = "gemini_companion"
SETTINGS_LISTENER = "gemini_companion.lifecycle"
PREFERENCES = "Preferences.sublime-settings"  # folder_exclude_patterns / file_exclude_patterns live there
# Folders can change with no event (drag and drop, `subl -a`, set_project_data): how often to look.
FOLDER_POLL_MS = 1000

_runtime: Runtime | None = None
_registry: WindowRegistry | None = None
_direct_access: tuple[object, object] | None = None  # server_port and auth_token the servers started with


def registry() -> WindowRegistry | None:
    return _registry


def runtime() -> Runtime | None:
    """The running loop thread; None before `plugin_loaded`, after unloading, or when libraries are missing."""
    return _runtime


def plugin_loaded() -> None:
    global _runtime
    configure_logging()
    settings.settings().add_on_change(SETTINGS_LISTENER, settings_changed)
    sublime.load_settings(PREFERENCES).add_on_change(SETTINGS_LISTENER, preferences_changed)
    runtime = Runtime(editor_pid=lambda: editor_pid(sublime.executable_path()))
    _runtime = runtime
    runtime.start()
    # Reading the libraries' metadata touches ~20 folders on disk (slow when the disk is cold): the
    # loop thread does it, and the servers start on the main thread once it has said yes.
    checked = runtime.submit(_check_libraries)
    checked.add_done_callback(lambda future: sublime.set_timeout(lambda: _libraries_checked(runtime, future)))


async def _check_libraries() -> tuple[list[str], list[str]]:
    return dependencies.check()


def _libraries_checked(runtime: Runtime, checked: concurrent.futures.Future[tuple[list[str], list[str]]]) -> None:
    """On the main thread: start a server for every window, or say which libraries are missing."""
    global _runtime, _registry, _direct_access
    if runtime is not _runtime or checked.cancelled():
        return  # unloaded (or reloaded) meanwhile
    error = checked.exception()
    if error is not None:  # unreadable metadata: start anyway; a library that cannot load fails the start
        logging.getLogger(LOGGER_NAME).warning("could not check the libraries' versions: %s", error)
    missing, wrong = checked.result() if error is None else ([], [])
    if missing or wrong:
        dependencies.report(missing, wrong)
        _runtime = None
        runtime.stop()
        return
    _registry = WindowRegistry(runtime, sharing_policy())
    _direct_access = direct_access.settings_key()
    for window in sublime.windows():
        _registry.open(window)
    _poll_folders(_registry)


def _poll_folders(registry: WindowRegistry) -> None:
    """Once a second on the main thread, until this registry is replaced (unload, reload)."""
    if registry is not _registry:
        return
    registry.sync_changed_folders()
    sublime.set_timeout(lambda: _poll_folders(registry), FOLDER_POLL_MS)


def plugin_unloaded() -> None:
    shutdown()


def shutdown(api_alive: bool = True) -> None:
    """Close our reviews, stop every server and delete every discovery file (idempotent).

    From `on_exit` (`api_alive=False`) the API has already shut down: nothing may touch it, so only
    the servers and their files go (the editor is closing its views itself).
    """
    global _runtime, _registry
    registry, runtime = _registry, _runtime
    _registry, _runtime = None, None
    if api_alive:
        settings.settings().clear_on_change(SETTINGS_LISTENER)
        sublime.load_settings(PREFERENCES).clear_on_change(SETTINGS_LISTENER)
    if registry is not None:
        if api_alive:
            from .connect_command import close_views  # it imports this module

            registry.close_all()
            close_views()
        else:
            registry.forget_all()
    if runtime is not None:
        runtime.stop()
    remove_logging()


def sharing_policy() -> SharingPolicy:
    exclude = settings.get("context_exclude", list(DEFAULT_EXCLUDES))
    return SharingPolicy(exclude=tuple(str(p) for p in exclude), share_selection=settings.get("share_selection", True))


def settings_changed() -> None:
    """Apply edited settings at once: sharing policy, log level, status bars, workspace tools;
    a new server_port or auth_token restarts the servers (that is the only way to take them)."""
    global _direct_access
    from . import status

    configure_logging()
    if _registry is not None:
        _registry.set_policy(sharing_policy())
        _registry.refresh_all_tools()
        key = direct_access.settings_key()
        if key != _direct_access:
            _direct_access = key
            sublime.status_message("Gemini Companion: server_port or auth_token changed; restarting the servers")
            _registry.restart_all()
        for state in _registry.all():
            status.show(state)


def preferences_changed() -> None:
    """Sublime's own exclude patterns may have changed: the workspace tools take them at once."""
    if _registry is not None:
        _registry.refresh_all_tools()


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
