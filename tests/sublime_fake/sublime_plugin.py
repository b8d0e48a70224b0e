"""A faithful stand-in for Sublime Text 4213's `sublime_plugin` module: the classes plugins subclass.

As in the real module, the base `EventListener` and `ViewEventListener` declare no `on_*` methods:
the host finds a listener's events by the methods its subclass defines. Loading plugins and
dispatching events (the real module's top-level functions, which the editor calls) live in
`_plugin_host`; tests drive them through `control`.
"""

from __future__ import annotations

from typing import Any

from . import sublime


def _derived_name(class_name: str, suffix: str) -> str:
    """`FooBarCommand` -> `foo_bar`, exactly as Sublime derives command names (runs of capitals stay together)."""
    name = class_name[0].lower()
    last_upper = False
    for char in class_name[1:]:
        if char.isupper() and not last_upper:
            name += "_" + char.lower()
        else:
            name += char
        last_upper = char.isupper()
    return name[: -len(suffix)] if name.endswith(suffix) else name


class CommandInputHandler:
    def name(self) -> str:
        return _derived_name(type(self).__name__, "_input_handler")

    def placeholder(self) -> str:
        return ""

    def initial_text(self) -> str:
        return ""

    def initial_selection(self) -> list[tuple[int, int]]:
        return []

    def preview(self, text: Any) -> str | sublime.Html:
        return ""

    def validate(self, text: Any, event: Any = None) -> bool:
        return True

    def cancel(self) -> None:
        pass

    def confirm(self, text: Any, event: Any = None) -> None:
        pass

    def next_input(self, args: dict[str, Any]) -> CommandInputHandler | None:
        return None

    def want_event(self) -> bool:
        return False


class Command:
    def name(self) -> str:
        return _derived_name(type(self).__name__, "_command")

    def _filter_args(self, args: dict[str, Any] | None) -> dict[str, Any] | None:
        if args and "event" in args and not self.want_event():
            args = {k: v for k, v in args.items() if k != "event"}
        return args

    def _ask(self, method: str, args: dict[str, Any] | None) -> bool:
        """is_enabled / is_visible / is_checked with the command's arguments, as Sublime calls them."""
        function = getattr(self, method)
        try:
            filtered = self._filter_args(args)
            result = function(**filtered) if filtered else function()
        except TypeError:
            result = function()
        if not isinstance(result, bool):
            raise ValueError(f"{method} must return a bool", self)
        return result

    def is_enabled(self) -> bool:
        return True

    def is_visible(self) -> bool:
        return True

    def is_checked(self) -> bool:
        return False

    def description(self) -> str | None:
        return ""

    def want_event(self) -> bool:
        return False

    def input(self, args: dict[str, Any]) -> CommandInputHandler | None:
        return None

    def input_description(self) -> str:
        return ""

    def _run(self, edit_token: int, args: dict[str, Any] | None) -> object:
        filtered = self._filter_args(args)
        return self.run(**filtered) if filtered else self.run()  # type: ignore[attr-defined]


class ApplicationCommand(Command):
    pass


class WindowCommand(Command):
    def __init__(self, window: sublime.Window) -> None:
        self.window = window


class TextCommand(Command):
    def __init__(self, view: sublime.View) -> None:
        self.view = view

    def _run(self, edit_token: int, args: dict[str, Any] | None) -> object:
        filtered = self._filter_args(args)
        edit = self.view.begin_edit(edit_token, self.name(), filtered)
        try:
            return self.run(edit, **filtered) if filtered else self.run(edit)  # type: ignore[attr-defined]
        finally:
            self.view.end_edit(edit)


class EventListener:
    pass


class ViewEventListener:
    @classmethod
    def is_applicable(cls, settings: sublime.Settings) -> bool:
        return True

    @classmethod
    def applies_to_primary_view_only(cls) -> bool:
        return True

    def __init__(self, view: sublime.View) -> None:
        self.view = view


def find_view_event_listener(view: sublime.View, cls: type) -> Any:
    from . import _plugin_host

    return _plugin_host.find_view_event_listener(view, cls)
