"""A tool call's card in the chat view: its locations as links (file and line), its output folded
under "output (N lines)" (the last SHOWN_CHARS characters, escaped: no markup of the agent's, no
terminal escapes), and Follow the Agent (the setting `chat_follow_agent`): each new location opens
in the other group as a preview while the focus stays in the chat's prompt. Main thread only;
opening a file is Sublime's own loading, not ours."""

from __future__ import annotations

import html
import os
from collections.abc import Callable

import sublime

from ...acp.shown_output import SHOWN_CHARS, tail
from ...acp.view import Location, ToolCall
from ..settings import get

FOLLOW_SETTING = "chat_follow_agent"


def following() -> bool:
    return get(FOLLOW_SETTING, False)


def line_of(location: Location) -> int | None:
    """The location's 0-based line when it is one (an agent's value may be anything)."""
    line = location.line
    return line if isinstance(line, int) and not isinstance(line, bool) and line >= 0 else None


def label(location: Location, folders: list[str]) -> str:
    """`src/a.py:3` (relative to the window's folder holding it, the line 1-based), else the path."""
    path = location.path
    for folder in folders:
        if _inside(path, folder):
            path = os.path.relpath(path, folder)
            break
    line = line_of(location)
    return path if line is None else f"{path}:{line + 1}"


def inside_folders(path: str, folders: list[str]) -> bool:
    return any(_inside(path, folder) for folder in folders)


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)
    except ValueError:  # another drive (Windows), or a relative path against an absolute one
        return False


def locations_html(
    call: ToolCall, folders: list[str], open_one: Callable[[Location], None]
) -> tuple[str, dict[str, Callable[[], None]]]:
    """The call's locations, each an absolute path as a link; the links' actions by href."""
    parts: list[str] = []
    links: dict[str, Callable[[], None]] = {}
    for index, location in enumerate(call.locations):
        shown = html.escape(label(location, folders))
        if os.path.isabs(location.path):
            links[f"loc-{index}"] = lambda loc=location: open_one(loc)
            parts.append(f'<a href="loc-{index}">{shown}</a>')
        else:  # the protocol's paths are absolute: another is shown, never opened
            parts.append(f"<code>{shown}</code>")
    return (f"<br>{' · '.join(parts)}" if parts else ""), links


def kept(output: str) -> str:
    """What a card keeps of an output to show it again: enough for `tail`."""
    return output[-4 * SHOWN_CHARS :]


def output_html(output: str, lines: int, expanded: bool) -> str:
    """The output's fold link, and when unfolded its end, escaped (`href="output"` toggles it)."""
    if not output:
        return ""
    fold = f'<br><a href="output">{"▾" if expanded else "▸"} output ({lines} line{"" if lines == 1 else "s"})</a>'
    if not expanded:
        return fold
    shown = html.escape(tail(output)).replace("  ", " &nbsp;").replace("\n", "<br>")
    return f'{fold}<div class="output">{shown}</div>'


def open_location(window: sublime.Window, location: Location, chat: sublime.View | None = None) -> None:
    """Open the location's file at its line. With `chat` (following the agent): as a preview in
    the group beside the chat's, and the focus back in the chat, so typing goes on in the prompt."""
    line = line_of(location)
    flags = sublime.NewFileFlags.ENCODED_POSITION if line is not None else sublime.NewFileFlags.NONE
    name = f"{location.path}:{line + 1}" if line is not None else location.path
    if chat is None:
        window.open_file(name, flags)
        return
    group = _beside(window, chat)
    window.open_file(name, flags | sublime.NewFileFlags.TRANSIENT, group)
    window.focus_view(chat)


def _beside(window: sublime.Window, chat: sublime.View) -> int:
    """The group after the chat's (with one group, the chat's own)."""
    groups = window.num_groups()
    own = window.get_view_index(chat)[0]
    return (own + 1) % groups if groups > 1 and own >= 0 else max(own, 0)
