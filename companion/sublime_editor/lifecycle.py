"""Plugin lifecycle: start the runtime when Sublime loads the package, leave nothing when it goes.

`plugin_loaded` only creates objects and starts the loop thread; the imports of the server stack,
the socket binding and the discovery files all happen on that thread, so the editor never waits.
"""

from __future__ import annotations

import logging
import sys

import sublime

from ..context import DEFAULT_EXCLUDES, SharingPolicy
from ..processes import editor_pid
from ..runtime import Runtime
from . import settings
from .windows import WindowRegistry

MIN_BUILD = 4205
LOGGER_NAME = "gemini_companion"
SETTINGS_LISTENER = "gemini_companion.lifecycle"

_runtime: Runtime | None = None
_registry: WindowRegistry | None = None


def registry() -> WindowRegistry | None:
    return _registry


def plugin_loaded() -> None:
    global _runtime, _registry
    if not build_supported():
        return
    configure_logging()
    _runtime = Runtime(editor_pid=lambda: editor_pid(sublime.executable_path()))
    _registry = WindowRegistry(_runtime, sharing_policy())
    settings.settings().add_on_change(SETTINGS_LISTENER, settings_changed)
    for window in sublime.windows():
        _registry.open(window)


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
    if registry is not None:
        if api_alive:
            settings.settings().clear_on_change(SETTINGS_LISTENER)
            registry.close_all()
        else:
            registry.forget_all()
    if runtime is not None:
        runtime.stop()
    remove_logging()


def sharing_policy() -> SharingPolicy:
    exclude = settings.get("context_exclude", list(DEFAULT_EXCLUDES))
    return SharingPolicy(exclude=tuple(str(p) for p in exclude), share_selection=settings.get("share_selection", True))


def settings_changed() -> None:
    """Apply edited settings at once: sharing policy, log level, status bars."""
    from . import status

    configure_logging()
    if _registry is not None:
        _registry.set_policy(sharing_policy())
        for state in _registry.all():
            status.show(state)


def build_supported() -> bool:
    try:
        build = int(sublime.version())
    except ValueError:
        return True
    if build >= MIN_BUILD:
        return True
    sublime.status_message(f"Gemini Companion needs Sublime Text build {MIN_BUILD} or newer (this is {build}).")
    print(
        f"Gemini Companion: this is Sublime Text build {build}; the companion needs build {MIN_BUILD} or newer, "
        "whose Python 3.14 plugin host can run the MCP server. Update Sublime Text (Help > Check for Updates, "
        "or the dev channel before build 4213 is stable for you); the package stays inactive until then."
    )
    return False


def remove_logging() -> None:
    """Take our console handler off the (process-wide) logger, as it was before we loaded."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if getattr(handler, "_gemini_companion", False):
            logger.removeHandler(handler)
    logger.propagate = True


def configure_logging() -> None:
    logger = logging.getLogger(LOGGER_NAME)
    remove_logging()  # a reload must not double every line
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("Gemini Companion: %(levelname)s: %(message)s"))
    handler._gemini_companion = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.DEBUG if settings.get("debug", False) else logging.WARNING)
