"""A faithful stand-in for Sublime Text 4213's `sublime` module (what the adapter needs, and around it).

Names and signatures follow `sublime-text-stubs` 4213 (a test checks that nothing here is invented).
Objects are handles onto the state in `_state` by id, as in Sublime Text. Behaviour that the real
editor leaves to its UI (loading files, dialogs, the user's clicks) is driven by `control`.

Strictness over convenience: UI-changing calls off the main thread are recorded as violations;
command and settings values must be JSON-serialisable (Sublime converts them); edits need a live
`Edit` from a running `TextCommand`; a read-only buffer ignores edits; `View.sel()` changes made by
a plugin do not fire `on_selection_modified` unless they happen inside a command.
"""

from __future__ import annotations

import copy
import enum
import fnmatch
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from . import _state
from ._state import BufferData, SettingsData, SheetData, ViewData, WindowData

Point = int
DIP = float
Value = Any
ValueLike = Any
CommandArgs = Any
CommandArgsLike = Any
WindowLayout = Any


class HoverZone(enum.IntEnum):
    TEXT = 1
    GUTTER = 2
    MARGIN = 3


class NewFileFlags(enum.IntFlag):
    NONE = 0
    ENCODED_POSITION = 1
    TRANSIENT = 4
    FORCE_GROUP = 8
    SEMI_TRANSIENT = 16
    ADD_TO_SELECTION = 32
    REPLACE_MRU = 64
    CLEAR_TO_RIGHT = 128
    FORCE_CLONE = 256


ENCODED_POSITION = NewFileFlags.ENCODED_POSITION
TRANSIENT = NewFileFlags.TRANSIENT
FORCE_GROUP = NewFileFlags.FORCE_GROUP
ADD_TO_SELECTION = NewFileFlags.ADD_TO_SELECTION


class FindFlags(enum.IntFlag):
    NONE = 0
    LITERAL = 1
    IGNORECASE = 2
    WHOLEWORD = 4
    REVERSE = 8
    WRAP = 16


LITERAL = FindFlags.LITERAL
IGNORECASE = FindFlags.IGNORECASE


class QuickPanelFlags(enum.IntFlag):
    NONE = 0
    MONOSPACE_FONT = 1
    KEEP_OPEN_ON_FOCUS_LOST = 2
    WANT_EVENT = 4


class RegionFlags(enum.IntFlag):
    NONE = 0
    DRAW_EMPTY = 1
    HIDE_ON_MINIMAP = 2
    DRAW_EMPTY_AS_OVERWRITE = 4
    PERSISTENT = 16
    DRAW_NO_FILL = 32
    HIDDEN = 128
    DRAW_NO_OUTLINE = 256
    DRAW_SOLID_UNDERLINE = 512
    DRAW_STIPPLED_UNDERLINE = 1024
    DRAW_SQUIGGLY_UNDERLINE = 2048
    NO_UNDO = 8192


DRAW_EMPTY = RegionFlags.DRAW_EMPTY
HIDDEN = RegionFlags.HIDDEN
PERSISTENT = RegionFlags.PERSISTENT
DRAW_NO_FILL = RegionFlags.DRAW_NO_FILL
DRAW_NO_OUTLINE = RegionFlags.DRAW_NO_OUTLINE
DRAW_SOLID_UNDERLINE = RegionFlags.DRAW_SOLID_UNDERLINE


class QueryOperator(enum.IntEnum):
    EQUAL = 0
    NOT_EQUAL = 1
    REGEX_MATCH = 2
    NOT_REGEX_MATCH = 3
    REGEX_CONTAINS = 4
    NOT_REGEX_CONTAINS = 5


OP_EQUAL = QueryOperator.EQUAL
OP_NOT_EQUAL = QueryOperator.NOT_EQUAL
OP_REGEX_MATCH = QueryOperator.REGEX_MATCH
OP_NOT_REGEX_MATCH = QueryOperator.NOT_REGEX_MATCH
OP_REGEX_CONTAINS = QueryOperator.REGEX_CONTAINS
OP_NOT_REGEX_CONTAINS = QueryOperator.NOT_REGEX_CONTAINS


class DialogResult(enum.IntEnum):
    CANCEL = 0
    YES = 1
    NO = 2


DIALOG_CANCEL = DialogResult.CANCEL
DIALOG_YES = DialogResult.YES
DIALOG_NO = DialogResult.NO


class PhantomLayout(enum.IntEnum):
    INLINE = 0
    BELOW = 1
    BLOCK = 2


LAYOUT_INLINE = PhantomLayout.INLINE
LAYOUT_BELOW = PhantomLayout.BELOW
LAYOUT_BLOCK = PhantomLayout.BLOCK


class AutoCompleteFlags(enum.IntFlag):
    NONE = 0
    INHIBIT_WORD_COMPLETIONS = 8
    INHIBIT_EXPLICIT_COMPLETIONS = 16
    DYNAMIC_COMPLETIONS = 32
    INHIBIT_REORDER = 128


INHIBIT_WORD_COMPLETIONS = AutoCompleteFlags.INHIBIT_WORD_COMPLETIONS
INHIBIT_EXPLICIT_COMPLETIONS = AutoCompleteFlags.INHIBIT_EXPLICIT_COMPLETIONS
DYNAMIC_COMPLETIONS = AutoCompleteFlags.DYNAMIC_COMPLETIONS
INHIBIT_REORDER = AutoCompleteFlags.INHIBIT_REORDER


class CompletionItemFlags(enum.IntFlag):
    NONE = 0
    KEEP_PREFIX = 1


class CompletionFormat(enum.IntEnum):
    TEXT = 0
    SNIPPET = 1
    COMMAND = 2


class KindId(enum.IntEnum):
    AMBIGUOUS = 0
    KEYWORD = 1
    TYPE = 2
    FUNCTION = 3
    NAMESPACE = 4
    NAVIGATION = 5
    MARKUP = 6
    VARIABLE = 7
    SNIPPET = 8


Kind = tuple  # (KindId, letter, description)
KIND_AMBIGUOUS = (KindId.AMBIGUOUS, "", "")
KIND_TYPE = (KindId.TYPE, "", "")
KIND_FUNCTION = (KindId.FUNCTION, "", "")
KIND_NAMESPACE = (KindId.NAMESPACE, "", "")
KIND_NAVIGATION = (KindId.NAVIGATION, "", "")
KIND_VARIABLE = (KindId.VARIABLE, "", "")


class SymbolSource(enum.IntEnum):
    ANY = 0
    INDEX = 1
    OPEN_FILES = 2


SYMBOL_SOURCE_ANY = SymbolSource.ANY
SYMBOL_SOURCE_INDEX = SymbolSource.INDEX
SYMBOL_SOURCE_OPEN_FILES = SymbolSource.OPEN_FILES


class SymbolType(enum.IntEnum):
    ANY = 0
    DEFINITION = 1
    REFERENCE = 2


SYMBOL_TYPE_ANY = SymbolType.ANY
SYMBOL_TYPE_DEFINITION = SymbolType.DEFINITION
SYMBOL_TYPE_REFERENCE = SymbolType.REFERENCE


class SymbolLocation:
    """A place the index found a symbol; `row` and `col` are 1-based (what `path_encoded_position`
    gives `open_file` with ENCODED_POSITION)."""

    def __init__(
        self, path: str, display_name: str, row: int, col: int, syntax: str, type: SymbolType, kind: Any
    ) -> None:
        self.path = path
        self.display_name = display_name
        self.row = row
        self.col = col
        self.syntax = syntax
        self.type = type
        self.kind = kind

    def __repr__(self) -> str:
        return f"SymbolLocation({self.display_name!r}, {self.row}, {self.col})"

    def path_encoded_position(self) -> str:
        return f"{self.path}:{self.row}:{self.col}"


class CompletionItem:
    def __init__(
        self,
        trigger: str,
        annotation: str = "",
        completion: str = "",
        completion_format: CompletionFormat = CompletionFormat.TEXT,
        kind: Any = KIND_AMBIGUOUS,
        details: str = "",
        flags: CompletionItemFlags = CompletionItemFlags.NONE,
    ) -> None:
        self.trigger = trigger
        self.annotation = annotation
        self.completion = completion
        self.completion_format = completion_format
        self.kind = kind
        self.details = details
        self.flags = flags

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, CompletionItem) and vars(self) == vars(rhs)

    def __repr__(self) -> str:
        return f"CompletionItem({self.trigger!r}, {self.annotation!r}, {self.completion!r})"


class CompletionList:
    """Completions a plugin may fill later: `set_completions` "is thread-safe" (since 4184, [stubs]
    L3083); until it is called, nothing shows. The fake's `_plugin_host.query_completions` waits for it."""

    def __init__(self, completions: Any = None, flags: AutoCompleteFlags = AutoCompleteFlags.NONE) -> None:
        self.target: int | None = None
        self.completions = completions
        self.flags = flags
        self._filled = threading.Event()
        if completions is not None:
            self._filled.set()

    def set_completions(self, completions: Any, flags: AutoCompleteFlags = AutoCompleteFlags.NONE) -> None:
        _h().api_call("CompletionList.set_completions")  # thread-safe: no main-thread rule
        self.completions = list(completions)
        self.flags = flags
        self._filled.set()


class FileTooLargeError(FileNotFoundError):
    pass


def _h() -> _state.Host:
    """The editor behind every API call; a call after the API shut down (`on_exit`) is a violation."""
    host = _state.host()
    if host.api_shut_down:
        host.api_call("the sublime API")
    return host


def _events() -> Any:
    from . import _plugin_host

    return _plugin_host


# -- application --


def version() -> str:
    return _h().version


def platform() -> str:
    return {"win32": "windows", "darwin": "osx"}.get(sys.platform, "linux")


def arch() -> str:
    return "x64"


def channel() -> str:
    return "stable"


def executable_path() -> str:
    return _h().executable_path


def packages_path() -> str:
    return os.path.join(_h().data_dir, "Packages")


def installed_packages_path() -> str:
    return os.path.join(_h().data_dir, "Installed Packages")


def cache_path() -> str:
    return os.path.join(_h().data_dir, "Cache")


def lib_path() -> str:
    return os.path.join(_h().data_dir, "Lib")


def status_message(msg: str) -> None:
    host = _h()
    host.ui_call("sublime.status_message")
    host.status_messages.append(msg)


def error_message(msg: str) -> None:
    host = _h()
    host.ui_call("sublime.error_message")
    host.dialogs.append(_state.Dialog("error", msg))


def message_dialog(msg: str) -> None:
    host = _h()
    host.ui_call("sublime.message_dialog")
    host.dialogs.append(_state.Dialog("message", msg))


def _answer(kind: str, msg: str, cancel: Any) -> Any:
    host = _h()
    answer = host.dialog_answers.pop(0) if host.dialog_answers else cancel
    host.dialogs.append(_state.Dialog(kind, msg, answer))
    return answer


def ok_cancel_dialog(msg: str, ok_title: str = "", title: str = "") -> bool:
    """The user's answer comes from `control.answer_dialogs`; unanswered, the dialog is cancelled."""
    _h().ui_call("sublime.ok_cancel_dialog")
    return bool(_answer("ok_cancel", msg, False))


def yes_no_cancel_dialog(msg: str, yes_title: str = "", no_title: str = "", title: str = "") -> DialogResult:
    _h().ui_call("sublime.yes_no_cancel_dialog")
    return DialogResult(_answer("yes_no_cancel", msg, DialogResult.CANCEL))


def run_command(cmd: str, args: CommandArgsLike | None = None) -> None:
    _events().run_application_command(cmd, args)


def format_command(cmd: str, args: CommandArgsLike | None = None) -> str:
    if args is None:
        return cmd
    return f"{cmd} {json.dumps(args, ensure_ascii=False, separators=(',', ':'))}"


def command_url(cmd: str, args: CommandArgsLike | None = None) -> str:
    return "subl:" + format_command(cmd, args)


def set_clipboard(text: str) -> None:
    _h().clipboard = text


def get_clipboard(size_limit: int = 16777216) -> str:
    return _h().clipboard[:size_limit]


def get_clipboard_async(callback: Callable[[str], None], size_limit: int = 16777216) -> None:
    text = _h().clipboard[:size_limit]
    set_timeout(lambda: callback(text))


def _resources() -> Iterator[tuple[str, str]]:
    """(resource name, file path) of every file in the known packages."""
    host = _h()
    skip = {"node_modules", "__pycache__", ".venv", ".git"}
    for package, root in sorted(host.packages.items()):
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("."))
            for name in sorted(files):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root).replace(os.sep, "/")
                yield f"Packages/{package}/{relative}", path
    if host.terminus_installed:
        yield "Packages/Terminus/Terminus.sublime-settings", ""


def find_resources(pattern: str) -> list[str]:
    """Resources whose file name matches `pattern` (a glob), as `Packages/<package>/<path>`."""
    return [name for name, _ in _resources() if fnmatch.fnmatchcase(name.rsplit("/", 1)[-1], pattern)]


def load_binary_resource(name: str, max_size: int = 16777216) -> bytes:
    for resource, path in _resources():
        if resource == name and path:
            with open(path, "rb") as handle:
                data = handle.read(max_size + 1)
            if len(data) > max_size:
                raise FileTooLargeError(name)
            return data
    raise FileNotFoundError(f"resource not found: {name}")


def load_resource(name: str, max_size: int = 16777216) -> str:
    return load_binary_resource(name, max_size).decode("utf-8").replace("\r\n", "\n")


def encode_value(value: ValueLike, pretty: bool = False, update_text: str | None = None) -> str:
    return json.dumps(value, indent=4 if pretty else None, ensure_ascii=False)


def _strip_json_extras(data: str) -> str:
    """Sublime's JSON: `//` and `/* */` comments and trailing commas are allowed."""
    out: list[str] = []
    i, n = 0, len(data)
    in_string = False
    while i < n:
        c = data[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(data[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif data.startswith("//", i):
            end = data.find("\n", i)
            i = n if end < 0 else end
        elif data.startswith("/*", i):
            end = data.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def decode_value(data: str) -> Value:
    try:
        return json.loads(_strip_json_extras(data))
    except json.JSONDecodeError as exc:
        raise ValueError(str(exc)) from exc


# Snippet syntax: `\$` is a `$`, and `\\` a single backslash, which halves the two that start a
# Windows UNC path (sublimehq/sublime_text#4826, a duplicate of SublimeTextIssues/Core#1878:
# `expand_variables(r"\\192.168.1.2", {})` gives `\192.168.1.2`); any other backslash stays.
_VARIABLE = re.compile(r"\\\\|\\\$|\$\{(\w+)(?::([^}]*))?\}|\$(\w+)")


def expand_variables(value: ValueLike, variables: dict[str, str]) -> Value:
    def expand_text(text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            if match.group(0) in ("\\$", "\\\\"):
                return match.group(0)[1]
            name = match.group(1) or match.group(3)
            if name in variables:
                return variables[name]
            return expand_text(match.group(2)) if match.group(2) is not None else ""

        return _VARIABLE.sub(replace, text)

    if isinstance(value, str):
        return expand_text(value)
    if isinstance(value, list):
        return [expand_variables(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: expand_variables(v, variables) for k, v in value.items()}
    return value


def _json_copy(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-serialisable: {exc}") from None


def load_settings(base_name: str) -> Settings:
    host = _h()
    with host.lock:
        settings_id = host.named_settings.get(base_name)
        if settings_id is None:
            data = SettingsData(host.new_id())
            for _package, root in sorted(host.packages.items()):
                path = os.path.join(root, base_name)
                if os.path.isfile(path):
                    with open(path, encoding="utf-8") as handle:
                        loaded = decode_value(handle.read())
                    if isinstance(loaded, dict):
                        data.defaults.update(loaded)
            data.values.update(copy.deepcopy(host.user_settings.get(base_name, {})))
            host.settings[data.id] = data
            host.named_settings[base_name] = data.id
            settings_id = data.id
    return Settings(settings_id)


def save_settings(base_name: str) -> None:
    host = _h()
    settings_id = host.named_settings.get(base_name)
    if settings_id is not None:
        host.saved_settings[base_name] = copy.deepcopy(host.settings[settings_id].values)


def set_timeout(callback: Callable[[], object], delay: int = 0) -> None:
    host = _h()
    host.api_call("sublime.set_timeout")
    host.main_queue.put(callback, delay)


def set_timeout_async(callback: Callable[[], object], delay: int = 0) -> None:
    host = _h()
    host.api_call("sublime.set_timeout_async")
    host.worker.queue.put(callback, delay)


def active_window() -> Window:
    host = _h()
    with host.lock:
        live = [w for w in host.window_order if w in host.windows]
        return Window(live[-1] if live else 0)


def windows() -> list[Window]:
    host = _h()
    with host.lock:
        return [Window(w) for w in sorted(host.windows)]


# -- syntaxes --

# Path, name, scope, extensions, `version` (sublimehq/Packages @ 16506a2: Python, JavaScript,
# TypeScript, Markdown, JSON and Go declare `version: 2`; Rust declares none, so it is version 1).
_SYNTAXES = [
    ("Packages/Text/Plain text.tmLanguage", "Plain Text", "text.plain", ["txt"], 1),
    ("Packages/Python/Python.sublime-syntax", "Python", "source.python", ["py", "pyw", "pyi"], 2),
    ("Packages/JavaScript/JavaScript.sublime-syntax", "JavaScript", "source.js", ["js", "mjs", "cjs"], 2),
    ("Packages/JavaScript/TypeScript.sublime-syntax", "TypeScript", "source.ts", ["ts"], 2),
    ("Packages/Markdown/Markdown.sublime-syntax", "Markdown", "text.html.markdown", ["md", "markdown"], 2),
    ("Packages/JSON/JSON.sublime-syntax", "JSON", "source.json", ["json", "sublime-settings"], 2),
    ("Packages/Rust/Rust.sublime-syntax", "Rust", "source.rust", ["rs"], 1),
    ("Packages/Go/Go.sublime-syntax", "Go", "source.go", ["go"], 2),
]


class Syntax:
    def __init__(self, path: str, name: str, hidden: bool, scope: str) -> None:
        self.path = path
        self.name = name
        self.hidden = hidden
        self.scope = scope

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Syntax) and self.path == other.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Syntax({self.path!r}, {self.name!r}, {self.hidden!r}, {self.scope!r})"


def list_syntaxes() -> list[Syntax]:
    """The built-in syntaxes above, and every package's `.sublime-syntax` (Sublime indexes them all;
    its `name` defaults to the file's base name: https://www.sublimetext.com/docs/syntax.html)."""
    found = [Syntax(path, name, False, scope) for path, name, scope, _, _ in _SYNTAXES]
    resources = [(name, path) for name, path in _resources() if name.endswith(".sublime-syntax") and path]
    return found + [_package_syntax(name, path) for name, path in resources]


def _package_syntax(resource: str, path: str) -> Syntax:
    """Its top-level `name`, `scope` and `hidden` keys (the only ones the API reports)."""
    keys = _syntax_header(path)
    base = resource.rsplit("/", 1)[-1][: -len(".sublime-syntax")]
    name, scope = keys.get("name", base), keys.get("scope", "")
    return Syntax(resource, name if isinstance(name, str) else base, keys.get("hidden") == "true", str(scope))


def _syntax_header(path: str) -> dict[str, str | list[str]]:
    """The top-level scalar keys of a `.sublime-syntax` file, and `extends` as a list (a scalar, a
    flow list `[a, b]` or a block list): all Sublime reads before the contexts. A small YAML reader,
    enough for headers (quotes stripped, comments dropped)."""
    keys: dict[str, str | list[str]] = {}
    listing: list[str] | None = None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if listing is not None and re.match(r"^\s+-\s+", line):
                listing.append(_yaml_scalar(line.split("-", 1)[1]))
                continue
            listing = None
            match = re.match(r"^([A-Za-z_]+):(.*)$", line)
            if not match or match.group(1) in keys:
                continue
            key, value = match.group(1), _yaml_scalar(match.group(2))
            if key == "extends":
                if value.startswith("[") and value.endswith("]"):
                    keys[key] = [_yaml_scalar(v) for v in value[1:-1].split(",") if v.strip()]
                else:
                    keys[key] = listing = [value] if value else []
            else:
                keys[key] = value
    return keys


def _yaml_scalar(text: str) -> str:
    text = re.sub(r"(^|\s)#.*$", "", text).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _syntax_version(resource: str) -> int | None:
    """A syntax's `version` (1 when it declares none); None when no such syntax exists."""
    builtin = next((s for s in _SYNTAXES if s[0] == resource), None)
    if builtin is not None:
        return builtin[4]
    path = next((p for name, p in _resources() if name == resource and p), None)
    if path is None:
        return None
    version = _syntax_header(path).get("version", "1")
    return int(version) if isinstance(version, str) and version.isdigit() else 1


def _parents(resource: str) -> list[str]:
    """The syntaxes `resource` extends, as resource paths (a bare name is relative to its folder)."""
    if any(s[0] == resource for s in _SYNTAXES):
        return []  # the built-in ones extend nothing the fake models
    path = next((p for name, p in _resources() if name == resource and p), None)
    if path is None:
        return []
    extends = _syntax_header(path).get("extends", [])
    folder = resource.rsplit("/", 1)[0]
    listed = extends if isinstance(extends, list) else [extends]
    return [p if p.startswith("Packages/") else f"{folder}/{p}" for p in listed]


def _syntax_problem(resource: str) -> str | None:
    """Why Sublime would refuse to load this syntax, None when it loads. What it checks for
    `extends` (https://www.sublimetext.com/docs/syntax.html#inheritance; sublimehq/sublime_text#5767
    for the message): every parent exists, has the same `version`, and no syntax extends itself."""
    version = _syntax_version(resource)
    if version is None:
        return f'Error loading syntax file "{resource}": Unable to read file'
    seen = [resource]
    pending = [(resource, version)]
    while pending:
        child, child_version = pending.pop()
        for parent in _parents(child):
            parent_version = _syntax_version(parent)
            if parent_version is None:
                return f'Error loading syntax file "{resource}": Unable to find syntax to extend: {parent}'
            if parent_version != child_version:
                return (
                    f'Error loading syntax file "{resource}": syntax inheritance does not allow for mixed '
                    f"versions ({child} is version {child_version}, {parent} is version {parent_version})"
                )
            if parent in seen:
                return f'Error loading syntax file "{resource}": extends itself through {parent}'
            seen.append(parent)
            pending.append((parent, parent_version))
    return None


def syntax_from_path(path: str) -> Syntax | None:
    return next((s for s in list_syntaxes() if s.path == path), None)


def find_syntax_by_name(name: str) -> list[Syntax]:
    return [s for s in list_syntaxes() if s.name == name]


def find_syntax_by_scope(scope: str) -> list[Syntax]:
    return [s for s in list_syntaxes() if s.scope == scope]


def find_syntax_for_file(path: str, first_line: str = "") -> Syntax | None:
    extension = os.path.splitext(path)[1].lstrip(".").lower()
    for syntax_path, name, scope, extensions, _ in _SYNTAXES:
        if extension in extensions:
            return Syntax(syntax_path, name, False, scope)
    return Syntax(_SYNTAXES[0][0], _SYNTAXES[0][1], False, _SYNTAXES[0][2])


# -- geometry --


class Region:
    __slots__ = ("a", "b", "xpos")

    def __init__(self, a: Point, b: Point | None = None, xpos: DIP = -1) -> None:
        self.a = a
        self.b = a if b is None else b
        self.xpos = xpos

    def __iter__(self) -> Iterator[int]:
        return iter((self.a, self.b))

    def __repr__(self) -> str:
        return f"Region({self.a}, {self.b})"

    def __len__(self) -> int:
        return self.size()

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, Region) and (self.a, self.b) == (rhs.a, rhs.b)

    __hash__ = None  # type: ignore[assignment]

    def __lt__(self, rhs: Region) -> bool:
        return (self.begin(), self.end()) < (rhs.begin(), rhs.end())

    def __contains__(self, v: Region | Point) -> bool:
        if isinstance(v, Region):
            return v.a in self and v.b in self
        if isinstance(v, int):
            return self.begin() <= v <= self.end()
        raise TypeError(f"in <Region> requires int or Region as left operand, not {type(v).__qualname__}")

    def to_tuple(self) -> tuple[Point, Point]:
        return (self.a, self.b)

    def empty(self) -> bool:
        return self.a == self.b

    def begin(self) -> Point:
        return min(self.a, self.b)

    def end(self) -> Point:
        return max(self.a, self.b)

    def size(self) -> int:
        return abs(self.a - self.b)

    def contains(self, x: Region | Point) -> bool:
        return x in self

    def cover(self, region: Region) -> Region:
        begin, end = min(self.begin(), region.begin()), max(self.end(), region.end())
        return Region(begin, end) if self.a < self.b else Region(end, begin)

    def intersection(self, region: Region) -> Region:
        if self.end() <= region.begin() or self.begin() >= region.end():
            return Region(0)
        return Region(max(self.begin(), region.begin()), min(self.end(), region.end()))

    def intersects(self, region: Region) -> bool:
        lb, le, rb, re_ = self.begin(), self.end(), region.begin(), region.end()
        return (lb, le) == (rb, re_) or lb < rb < le or lb < re_ < le or rb < lb < re_ or rb < le < re_


class Edit:
    def __init__(self, token: int) -> None:
        self.edit_token = token

    def __repr__(self) -> str:
        return f"Edit({self.edit_token!r})"


def _merge(regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping; a caret inside or touching a region joins it, equal carets merge."""
    ordered = sorted(regions, key=lambda r: (min(r), max(r)))
    merged: list[tuple[int, int]] = []
    for a, b in ordered:
        if merged:
            pa, pb = merged[-1]
            pbegin, pend = min(pa, pb), max(pa, pb)
            begin, end = min(a, b), max(a, b)
            touches = begin < pend or begin == pbegin or (a == b and begin <= pend) or (pa == pb and pbegin == begin)
            if touches:
                new_begin, new_end = min(pbegin, begin), max(pend, end)
                merged[-1] = (new_begin, new_end) if pa <= pb else (new_end, new_begin)
                continue
        merged.append((a, b))
    return merged


class Selection:
    def __init__(self, id: int) -> None:
        self.view_id = id

    def _data(self) -> ViewData | None:
        return _h().views.get(self.view_id)

    def _regions(self) -> list[tuple[int, int]]:
        data = self._data()
        return list(data.selection) if data is not None and data.valid else []

    def _set(self, regions: list[tuple[int, int]], api: str) -> None:
        host = _h()
        host.ui_call(api)
        data = self._data()
        if data is None or not data.valid:
            return
        size = len(host.buffers[data.buffer_id].text)
        clamped = [(max(0, min(a, size)), max(0, min(b, size))) for a, b in regions]
        data.selection = _merge(clamped)

    def __iter__(self) -> Iterator[Region]:
        return iter([Region(a, b) for a, b in self._regions()])

    def __len__(self) -> int:
        return len(self._regions())

    def __getitem__(self, index: int) -> Region:
        regions = self._regions()
        if not 0 <= index < len(regions):
            raise IndexError(index)
        return Region(*regions[index])

    def __delitem__(self, index: int) -> None:
        regions = self._regions()
        if not 0 <= index < len(regions):
            raise IndexError(index)
        del regions[index]
        self._set(regions, "Selection.__delitem__")

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, Selection) and self._regions() == rhs._regions()

    __hash__ = None  # type: ignore[assignment]

    def __lt__(self, rhs: Selection | None) -> bool:
        return rhs is not None and self.view_id < rhs.view_id

    def __bool__(self) -> bool:
        return self.view_id != 0

    def __repr__(self) -> str:
        return f"Selection({self._regions()!r})"

    def is_valid(self) -> bool:
        data = self._data()
        return data is not None and data.valid

    def clear(self) -> None:
        self._set([], "Selection.clear")

    def add(self, x: Region | Point) -> None:
        region = x if isinstance(x, Region) else Region(x)
        self._set([*self._regions(), (region.a, region.b)], "Selection.add")

    def add_all(self, regions: Iterable[Region | Point]) -> None:
        added = [(r.a, r.b) if isinstance(r, Region) else (r, r) for r in regions]
        self._set([*self._regions(), *added], "Selection.add_all")

    def subtract(self, region: Region) -> None:
        kept: list[tuple[int, int]] = []
        for a, b in self._regions():
            begin, end = min(a, b), max(a, b)
            if end <= region.begin() or begin >= region.end():
                kept.append((a, b))
                continue
            if begin < region.begin():
                kept.append((begin, region.begin()))
            if end > region.end():
                kept.append((region.end(), end))
        self._set(kept, "Selection.subtract")

    def contains(self, region: Region) -> bool:
        return any(region in Region(a, b) for a, b in self._regions())

    def has_empty_region(self) -> bool:
        return any(a == b for a, b in self._regions())

    def has_non_empty_region(self) -> bool:
        return any(a != b for a, b in self._regions())

    def has_multiple_non_empty_regions(self) -> bool:
        return sum(1 for a, b in self._regions() if a != b) > 1


# -- settings --


class Settings:
    def __init__(self, id: int) -> None:
        self.settings_id = id

    def _data(self) -> SettingsData:
        return _h().settings[self.settings_id]

    def _changed(self, api: str) -> None:
        data = self._data()
        for _tag, callback in list(data.callbacks):
            _h().run_callback(callback, f"Settings on_change ({api})")

    def __getitem__(self, key: str) -> Value:
        data = self._data()
        if key in data.values:
            return copy.deepcopy(data.values[key])
        if key in data.defaults:
            return copy.deepcopy(data.defaults[key])
        raise KeyError(key)

    def __setitem__(self, key: str, value: ValueLike) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        self.erase(key)

    def __contains__(self, key: str) -> bool:
        return self.has(key)

    def to_dict(self) -> dict[str, Value]:
        data = self._data()
        return copy.deepcopy({**data.defaults, **data.values})

    def setdefault(self, key: str, value: ValueLike) -> Value:
        if key not in self:
            self.set(key, value)
        return self[key]

    def update(self, other: Any = (), /, **kwargs: ValueLike) -> None:
        items = other.items() if hasattr(other, "items") else other
        for key, value in [*items, *kwargs.items()]:
            self.set(key, value)

    def get(self, key: str, default: ValueLike | None = None) -> Value:
        try:
            return self[key]
        except KeyError:
            return default

    def has(self, key: str) -> bool:
        data = self._data()
        return key in data.values or key in data.defaults

    def set(self, key: str, value: ValueLike) -> None:
        _h().ui_call("Settings.set")
        self._data().values[key] = _json_copy(value, f"setting {key!r}")
        self._changed("set")

    def erase(self, key: str) -> None:
        _h().ui_call("Settings.erase")
        self._data().values.pop(key, None)
        self._changed("erase")

    def add_on_change(self, tag: str, callback: Callable[[], None]) -> None:
        self._data().callbacks.append((tag, callback))

    def clear_on_change(self, tag: str) -> None:
        data = self._data()
        data.callbacks = [(t, c) for t, c in data.callbacks if t != tag]


def _new_settings(defaults: dict[str, Any] | None = None, view_id: int | None = None) -> int:
    host = _h()
    data = SettingsData(host.new_id(), defaults=dict(defaults or {}), view_id=view_id)
    host.settings[data.id] = data
    return data.id


# -- sheets --


class Sheet:
    def __init__(self, id: int) -> None:
        self.sheet_id = id

    def __hash__(self) -> int:
        return self.sheet_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sheet) and other.sheet_id == self.sheet_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sheet_id!r})"

    def _data(self) -> SheetData | None:
        return _h().sheets.get(self.sheet_id)

    def id(self) -> int:
        return self.sheet_id

    def window(self) -> Window | None:
        data = self._data()
        return Window(data.window_id) if data is not None else None

    def view(self) -> View | None:
        data = self._data()
        return View(data.view_id) if data is not None and data.view_id is not None else None

    def file_name(self) -> str | None:
        view = self.view()
        return view.file_name() if view is not None else None

    def is_semi_transient(self) -> bool:
        return False

    def is_transient(self) -> bool:
        return False

    def is_selected(self) -> bool:
        data = self._data()
        if data is None:
            return False
        window = _h().windows.get(data.window_id)
        return window is not None and data.id in window.selected

    def group(self) -> int | None:
        data = self._data()
        window = _h().windows.get(data.window_id) if data is not None else None
        if data is None or window is None:
            return None
        return next((g for g, sheets in enumerate(window.groups) if data.id in sheets), None)

    def close(self, on_close: Callable[[bool], None] = lambda did_close: None) -> None:
        view = self.view()
        if view is not None:
            view.close(on_close)
            return
        data = self._data()
        if data is not None:
            _h().ui_call("Sheet.close")
            _remove_sheet(data.window_id, data.id)
            on_close(True)


class TextSheet(Sheet):
    pass


class HtmlSheet(Sheet):
    def set_contents(self, contents: str) -> None:
        _h().ui_call("HtmlSheet.set_contents")
        data = self._data()
        if data is not None:
            data.contents = contents


def _sheet(sheet_id: int) -> Sheet:
    data = _h().sheets.get(sheet_id)
    return HtmlSheet(sheet_id) if data is not None and data.kind == "html" else TextSheet(sheet_id)


# -- windows --


class Window:
    def __init__(self, id: int) -> None:
        self.window_id = id
        self.settings_object: Settings | None = None
        self.template_settings_object: Settings | None = None

    def __hash__(self) -> int:
        return self.window_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Window) and other.window_id == self.window_id

    def __bool__(self) -> bool:
        return self.window_id != 0

    def __repr__(self) -> str:
        return f"Window({self.window_id!r})"

    def _data(self) -> WindowData | None:
        data = _h().windows.get(self.window_id)
        return data if data is not None and data.valid else None

    def id(self) -> int:
        return self.window_id

    def is_valid(self) -> bool:
        return self._data() is not None

    def active_sheet(self) -> Sheet | None:
        data = self._data()
        if data is None:
            return None
        selected = data.selected[data.active_group]
        return _sheet(selected) if selected is not None else None

    def active_view(self) -> View | None:
        data = self._data()
        if data is None:
            return None
        if data.focused_panel_view is not None:
            return View(data.focused_panel_view)
        sheet = self.active_sheet()
        return sheet.view() if sheet is not None else None

    def new_html_sheet(
        self, name: str, contents: str, flags: NewFileFlags = NewFileFlags.NONE, group: int = -1
    ) -> Sheet:
        host = _h()
        host.ui_call("Window.new_html_sheet")
        data = self._require()
        sheet = SheetData(host.new_id(), data.id, None, kind="html", name=name, contents=contents)
        host.sheets[sheet.id] = sheet
        target = data.active_group if group < 0 else min(group, len(data.groups) - 1)
        data.groups[target].append(sheet.id)
        _focus_sheet(data, sheet.id)
        return HtmlSheet(sheet.id)

    def _require(self) -> WindowData:
        data = self._data()
        if data is None:
            raise ValueError("the window is not valid")
        return data

    def run_command(self, cmd: str, args: CommandArgsLike | None = None) -> None:
        _events().run_window_command(self.window_id, cmd, args)

    def new_file(self, flags: NewFileFlags = NewFileFlags.NONE, syntax: str = "") -> View:
        _h().ui_call("Window.new_file")
        data = self._require()
        view = _create_view(data, data.active_group)
        if syntax:
            view.assign_syntax(syntax)
        _events().view_event("on_new", view.view_id)
        _focus_sheet(data, view.sheet_id())
        return view

    def open_file(self, fname: str, flags: NewFileFlags = NewFileFlags.NONE, group: int = -1) -> View:
        """Opens (or focuses) `fname`; the text arrives on a later main-thread turn, then `on_load` fires."""
        host = _h()
        host.ui_call("Window.open_file")
        data = self._require()
        position: tuple[int, int] | None = None
        if flags & NewFileFlags.ENCODED_POSITION:
            match = re.match(r"^(.*?):(\d+)(?::(\d+))?$", fname)
            if match:
                fname, position = match.group(1), (int(match.group(2)), int(match.group(3) or 1))
        path = os.path.abspath(fname)
        existing = self.find_open_file(path)
        if existing is not None:
            _focus_sheet(data, existing.sheet_id())
            return existing
        target = data.active_group if group < 0 else min(group, len(data.groups) - 1)
        view = _create_view(data, target, file_name=path, loading=True)
        _focus_sheet(data, view.sheet_id())
        view_id = view.view_id
        set_timeout(lambda: _finish_loading(view_id, position), 0)
        return view

    def find_open_file(self, fname: str, group: int = -1) -> View | None:
        data = self._data()
        if data is None:
            return None
        wanted = os.path.normcase(os.path.abspath(fname))
        for view in self.views() if group < 0 else self.views_in_group(group):
            name = view.file_name()
            if name is not None and os.path.normcase(name) == wanted:
                return view
        return None

    def file_history(self) -> list[str]:
        return []

    def num_groups(self) -> int:
        data = self._data()
        return len(data.groups) if data is not None else 0

    def active_group(self) -> int:
        data = self._data()
        return data.active_group if data is not None else -1

    def focus_group(self, idx: int) -> None:
        _h().ui_call("Window.focus_group")
        data = self._data()
        if data is None or not 0 <= idx < len(data.groups):
            return
        selected = data.selected[idx]
        if selected is not None:
            _focus_sheet(data, selected)
        else:
            old = self.active_view()
            data.active_group = idx
            data.focused_panel_view = None
            _activation_changed(old, self.active_view())

    def focus_sheet(self, sheet: Sheet) -> None:
        _h().ui_call("Window.focus_sheet")
        data = self._data()
        if data is not None and any(sheet.sheet_id in g for g in data.groups):
            _focus_sheet(data, sheet.sheet_id)

    def focus_view(self, view: View) -> None:
        _h().ui_call("Window.focus_view")
        data = self._data()
        view_data = _h().views.get(view.view_id)
        if data is None or view_data is None or not view_data.valid or view_data.window_id != data.id:
            return
        if view_data.sheet_id:
            _focus_sheet(data, view_data.sheet_id)
        else:
            old = self.active_view()
            data.focused_panel_view = view.view_id
            _activation_changed(old, view)

    def bring_to_front(self) -> None:
        _h().ui_call("Window.bring_to_front")
        _focus_window(self.window_id)

    def get_sheet_index(self, sheet: Sheet) -> tuple[int, int]:
        data = self._data()
        if data is not None:
            for group, sheets in enumerate(data.groups):
                if sheet.sheet_id in sheets:
                    return group, sheets.index(sheet.sheet_id)
        return -1, -1

    def get_view_index(self, view: View) -> tuple[int, int]:
        view_data = _h().views.get(view.view_id)
        if view_data is None or not view_data.sheet_id:
            return -1, -1
        return self.get_sheet_index(Sheet(view_data.sheet_id))

    def set_sheet_index(self, sheet: Sheet, group: int, index: int) -> None:
        _h().ui_call("Window.set_sheet_index")
        data = self._data()
        if data is None or not 0 <= group < len(data.groups):
            return
        old_group, _ = self.get_sheet_index(sheet)
        if old_group < 0:
            return
        data.groups[old_group].remove(sheet.sheet_id)
        if data.selected[old_group] == sheet.sheet_id:
            data.selected[old_group] = _most_recent(data, data.groups[old_group])
        data.groups[group].insert(max(0, min(index, len(data.groups[group]))), sheet.sheet_id)
        was_active = data.active_group == old_group and data.focused_panel_view is None
        if data.selected[group] is None or was_active:
            data.selected[group] = sheet.sheet_id
        if was_active:
            data.active_group = group

    def set_view_index(self, view: View, group: int, index: int) -> None:
        view_data = _h().views.get(view.view_id)
        if view_data is not None and view_data.sheet_id:
            self.set_sheet_index(Sheet(view_data.sheet_id), group, index)
        else:
            _h().ui_call("Window.set_view_index")

    def move_sheets_to_group(
        self, sheets: list[Sheet], group: int, insertion_idx: int = -1, select: bool = True
    ) -> None:
        for offset, sheet in enumerate(sheets):
            index = len(self.sheets_in_group(group)) if insertion_idx < 0 else insertion_idx + offset
            self.set_sheet_index(sheet, group, index)
        if select and sheets:
            self.focus_sheet(sheets[-1])

    def sheets(self) -> list[Sheet]:
        data = self._data()
        return [_sheet(s) for group in data.groups for s in group] if data is not None else []

    def views(self, *, include_transient: bool = False) -> list[View]:
        return [v for v in (s.view() for s in self.sheets()) if v is not None]

    def selected_sheets(self) -> list[Sheet]:
        sheet = self.active_sheet()
        return [sheet] if sheet is not None else []

    def selected_sheets_in_group(self, group: int) -> list[Sheet]:
        sheet = self.active_sheet_in_group(group)
        return [sheet] if sheet is not None else []

    def active_sheet_in_group(self, group: int) -> Sheet | None:
        data = self._data()
        if data is None or not 0 <= group < len(data.groups):
            return None
        selected = data.selected[group]
        return _sheet(selected) if selected is not None else None

    def active_view_in_group(self, group: int) -> View | None:
        sheet = self.active_sheet_in_group(group)
        return sheet.view() if sheet is not None else None

    def sheets_in_group(self, group: int) -> list[Sheet]:
        data = self._data()
        if data is None or not 0 <= group < len(data.groups):
            return []
        return [_sheet(s) for s in data.groups[group]]

    def views_in_group(self, group: int) -> list[View]:
        return [v for v in (s.view() for s in self.sheets_in_group(group)) if v is not None]

    def num_sheets_in_group(self, group: int) -> int:
        return len(self.sheets_in_group(group))

    def num_views_in_group(self, group: int) -> int:
        return len(self.views_in_group(group))

    def transient_sheet_in_group(self, group: int) -> Sheet | None:
        return None

    def transient_view_in_group(self, group: int) -> View | None:
        return None

    def layout(self) -> WindowLayout:
        data = self._data()
        return copy.deepcopy(data.layout) if data is not None else {}

    def get_layout(self) -> WindowLayout:
        return self.layout()

    def set_layout(self, layout: WindowLayout) -> None:
        """Cells beyond the new layout are removed; their sheets move to the new last group."""
        _h().ui_call("Window.set_layout")
        data = self._data()
        if data is None:
            return
        layout = _json_copy(layout, "layout")
        cols, rows, cells = layout.get("cols"), layout.get("rows"), layout.get("cells")
        if not (isinstance(cols, list) and isinstance(rows, list) and isinstance(cells, list) and cells):
            raise ValueError(f"invalid layout: {layout!r}")
        for cell in cells:
            if len(cell) != 4 or not (0 <= cell[0] < cell[2] < len(cols) and 0 <= cell[1] < cell[3] < len(rows)):
                raise ValueError(f"invalid layout cell {cell!r} in {layout!r}")
        old_active = self.active_view()
        count = len(cells)
        while len(data.groups) > count:
            moved = data.groups.pop()
            moved_selected = data.selected.pop()
            data.groups[-1].extend(moved)
            if moved_selected is not None and data.active_group >= len(data.groups):
                data.selected[-1] = moved_selected
        while len(data.groups) < count:
            data.groups.append([])
            data.selected.append(None)
        data.active_group = min(data.active_group, count - 1)
        data.layout = layout
        _activation_changed(old_active, self.active_view())

    def create_output_panel(self, name: str, unlisted: bool = False) -> View:
        host = _h()
        host.ui_call("Window.create_output_panel")
        data = self._require()
        key = f"output.{name}"
        existing = data.panels.get(key)
        if existing is not None and host.views[existing].valid:
            return View(existing)
        view = _create_view(data, None, element="output:output")
        data.panels[key] = view.view_id
        return view

    def find_output_panel(self, name: str) -> View | None:
        data = self._data()
        view_id = data.panels.get(f"output.{name}") if data is not None else None
        return View(view_id) if view_id is not None and _h().views[view_id].valid else None

    def destroy_output_panel(self, name: str) -> None:
        host = _h()
        host.ui_call("Window.destroy_output_panel")
        data = self._data()
        view_id = data.panels.pop(f"output.{name}", None) if data is not None else None
        if data is not None and view_id is not None:
            if data.active_panel == f"output.{name}":
                data.active_panel = None
            if data.focused_panel_view == view_id:
                data.focused_panel_view = None
            _destroy_view(view_id)

    def active_panel(self) -> str | None:
        data = self._data()
        return data.active_panel if data is not None else None

    def panels(self) -> list[str]:
        data = self._data()
        return sorted(data.panels) if data is not None else []

    def show_quick_panel(
        self,
        items: Any,
        on_select: Callable[[int], None],
        flags: QuickPanelFlags = QuickPanelFlags.NONE,
        selected_index: int = -1,
        on_highlight: Callable[[int], None] | None = None,
        placeholder: str | None = None,
    ) -> None:
        """Shown until the test picks an item with `control.choose_quick_panel`."""
        host = _h()
        host.ui_call("Window.show_quick_panel")
        host.quick_panels.append(
            {
                "window": self.window_id,
                "items": copy.deepcopy(items),
                "on_select": on_select,
                "placeholder": placeholder,
            }
        )

    def show_input_panel(
        self,
        caption: str,
        initial_text: str,
        on_done: Callable[[str], None] | None,
        on_change: Callable[[str], None] | None,
        on_cancel: Callable[[], None] | None,
    ) -> View:
        """Shown until the test answers it with `control.answer_input_panel` (or cancels it); the
        panel's own view (a widget) is returned, as Sublime does."""
        host = _h()
        host.ui_call("Window.show_input_panel")
        data = self._require()
        view = _create_view(data, None, element="input:input")
        host.input_panels.append(
            {
                "window": self.window_id,
                "caption": caption,
                "initial_text": initial_text,
                "on_done": on_done,
                "on_cancel": on_cancel,
                "view": view,
            }
        )
        return view

    def symbol_locations(
        self,
        sym: str,
        source: SymbolSource = SymbolSource.ANY,
        type: SymbolType = SymbolType.ANY,
        kind_id: KindId = KindId.AMBIGUOUS,
        kind_letter: str = "",
    ) -> list[SymbolLocation]:
        """The index's entries named exactly `sym`: the index covers files under the window's folders
        (SymbolSource.INDEX), the open files cover this window's views (OPEN_FILES). `kind_id`
        AMBIGUOUS matches any kind. Any thread may call it, as every non-UI call."""
        _h().api_call("Window.symbol_locations")
        folders = self.folders()
        open_paths = {v.file_name() for v in self.views()}
        found: list[SymbolLocation] = []
        for entry in _h().symbols:
            path = entry["path"]
            indexed = any(path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)
            reachable = {
                SymbolSource.ANY: indexed or path in open_paths,
                SymbolSource.INDEX: indexed,
                SymbolSource.OPEN_FILES: path in open_paths,
            }[SymbolSource(source)]
            if entry["name"] != sym or not reachable:
                continue
            if type != SymbolType.ANY and entry["type"] != type:
                continue
            if kind_id != KindId.AMBIGUOUS and entry["kind"][0] != kind_id:
                continue
            base = next((f for f in folders if path.startswith(f.rstrip(os.sep) + os.sep)), None)
            display = os.path.relpath(path, os.path.dirname(base)) if base else path
            found.append(
                SymbolLocation(path, display, entry["row"], entry["col"], entry["syntax"], entry["type"], entry["kind"])
            )
        return found

    def folders(self) -> list[str]:
        data = self._data()
        if data is None or not data.project_data:
            return []
        base = os.path.dirname(data.project_file) if data.project_file else os.getcwd()
        result = []
        for folder in data.project_data.get("folders", []):
            path = folder.get("path") if isinstance(folder, dict) else None
            if isinstance(path, str):
                result.append(os.path.normpath(os.path.join(base, os.path.expanduser(path))))
        return result

    def project_file_name(self) -> str | None:
        data = self._data()
        return data.project_file if data is not None else None

    def workspace_file_name(self) -> str | None:
        data = self._data()
        if data is None or data.project_file is None:
            return None
        return os.path.splitext(data.project_file)[0] + ".sublime-workspace"

    def project_data(self) -> dict[str, Value] | None:
        data = self._data()
        return copy.deepcopy(data.project_data) if data is not None else None

    def set_project_data(self, data: Mapping[str, ValueLike]) -> None:
        _h().ui_call("Window.set_project_data")
        window = self._data()
        if window is not None:
            window.project_data = _json_copy(dict(data), "project data")

    def settings(self) -> Settings:
        data = self._require()
        return Settings(data.settings_id)

    def template_settings(self) -> Settings:
        return self.settings()

    def extract_variables(self) -> dict[str, str]:
        variables = {"platform": {"linux": "Linux", "osx": "OSX", "windows": "Windows"}[platform()]}
        variables["packages"] = packages_path()
        folders = self.folders()
        if folders:
            variables["folder"] = folders[0]
        project = self.project_file_name()
        if project:
            variables["project"] = project
            variables["project_path"] = os.path.dirname(project)
            variables["project_name"] = os.path.basename(project)
            variables["project_base_name"] = os.path.splitext(os.path.basename(project))[0]
        view = self.active_view()
        name = view.file_name() if view is not None else None
        if name:
            variables["file"] = name
            variables["file_path"] = os.path.dirname(name)
            variables["file_name"] = os.path.basename(name)
            variables["file_base_name"], extension = os.path.splitext(os.path.basename(name))
            variables["file_extension"] = extension.lstrip(".")
        return variables

    def status_message(self, msg: str) -> None:
        host = _h()
        host.ui_call("Window.status_message")
        host.status_messages.append(msg)


# -- views --


class Buffer:
    def __init__(self, id: int) -> None:
        self.buffer_id = id

    def __hash__(self) -> int:
        return self.buffer_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Buffer) and other.buffer_id == self.buffer_id

    def id(self) -> int:
        return self.buffer_id

    def file_name(self) -> str | None:
        data = _h().buffers.get(self.buffer_id)
        return data.file_name if data is not None else None

    def views(self) -> list[View]:
        data = _h().buffers.get(self.buffer_id)
        return [View(v) for v in data.views] if data is not None else []

    def primary_view(self) -> View:
        return self.views()[0]


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _advance(line: str, units: int, measure: Callable[[str], int]) -> int:
    """How many characters of `line` make up `units` code units (past the end: counted as 1 each)."""
    total = 0
    for index, char in enumerate(line):
        if total >= units:
            return index
        total += measure(char)
    return len(line) + max(0, units - total)


class View:
    def __init__(self, id: int) -> None:
        self.view_id = id
        self.selection = Selection(id)
        self.settings_object: Settings | None = None

    def __len__(self) -> int:
        return self.size()

    def __hash__(self) -> int:
        return self.view_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, View) and other.view_id == self.view_id

    def __bool__(self) -> bool:
        return self.view_id != 0

    def __repr__(self) -> str:
        return f"View({self.view_id!r})"

    def _data(self) -> ViewData | None:
        data = _h().views.get(self.view_id)
        return data if data is not None and data.valid else None

    def _buffer(self) -> BufferData | None:
        data = self._data()
        return _h().buffers.get(data.buffer_id) if data is not None else None

    def _text(self) -> str:
        buffer = self._buffer()
        return buffer.text if buffer is not None else ""

    def id(self) -> int:
        return self.view_id

    def buffer_id(self) -> int:
        data = self._data()
        return data.buffer_id if data is not None else 0

    def buffer(self) -> Buffer:
        return Buffer(self.buffer_id())

    def sheet_id(self) -> int:
        data = self._data()
        return data.sheet_id if data is not None else 0

    def sheet(self) -> Sheet | None:
        sheet_id = self.sheet_id()
        return _sheet(sheet_id) if sheet_id else None

    def element(self) -> str | None:
        data = self._data()
        return data.element if data is not None else None

    def is_valid(self) -> bool:
        return self._data() is not None

    def is_primary(self) -> bool:
        buffer = self._buffer()
        return buffer is not None and buffer.views[:1] == [self.view_id]

    def window(self) -> Window | None:
        data = self._data()
        if data is None or data.window_id not in _h().windows or not _h().windows[data.window_id].valid:
            return None
        return Window(data.window_id)

    def clones(self) -> list[View]:
        buffer = self._buffer()
        return [View(v) for v in buffer.views if v != self.view_id] if buffer is not None else []

    def file_name(self) -> str | None:
        buffer = self._buffer()
        return buffer.file_name if buffer is not None else None

    def close(self, on_close: Callable[[bool], None] = lambda did_close: None) -> bool:
        """Closes the view (`on_pre_close`, `on_close`); a dirty file first asks to save, as Sublime does."""
        host = _h()
        host.ui_call("View.close")
        data = self._data()
        buffer = self._buffer()
        if data is None or buffer is None:
            return False
        if self.is_dirty() and len(buffer.views) == 1:
            answer = yes_no_cancel_dialog(f"Save changes to {buffer.file_name or buffer.name or 'untitled'}?")
            if answer == DialogResult.CANCEL:
                on_close(False)
                return False
            if answer == DialogResult.YES:
                self.run_command("save")
        _close_view(self.view_id)
        on_close(True)
        return True

    def retarget(self, new_fname: str) -> None:
        _h().ui_call("View.retarget")
        buffer = self._buffer()
        if buffer is not None:
            buffer.file_name = os.path.abspath(new_fname)

    def name(self) -> str:
        buffer = self._buffer()
        return buffer.name if buffer is not None else ""

    def set_name(self, name: str) -> None:
        _h().ui_call("View.set_name")
        buffer = self._buffer()
        if buffer is not None:
            buffer.name = name

    def reset_reference_document(self) -> None:
        _h().ui_call("View.reset_reference_document")
        buffer = self._buffer()
        if buffer is not None:
            buffer.reference = None

    def set_reference_document(self, reference: str) -> None:
        _h().ui_call("View.set_reference_document")
        buffer = self._buffer()
        if buffer is not None:
            buffer.reference = reference.replace("\r\n", "\n")

    def is_loading(self) -> bool:
        buffer = self._buffer()
        return buffer is not None and buffer.loading

    def is_dirty(self) -> bool:
        buffer = self._buffer()
        return buffer is not None and not buffer.scratch and buffer.change_count != buffer.saved_change_count

    def is_read_only(self) -> bool:
        buffer = self._buffer()
        return buffer is not None and buffer.read_only

    def set_read_only(self, read_only: bool) -> None:
        _h().ui_call("View.set_read_only")
        buffer = self._buffer()
        if buffer is not None:
            buffer.read_only = bool(read_only)

    def is_scratch(self) -> bool:
        buffer = self._buffer()
        return buffer is not None and buffer.scratch

    def set_scratch(self, scratch: bool) -> None:
        _h().ui_call("View.set_scratch")
        buffer = self._buffer()
        if buffer is not None:
            buffer.scratch = bool(scratch)

    def encoding(self) -> str:
        buffer = self._buffer()
        return buffer.encoding if buffer is not None else "Undefined"

    def set_encoding(self, encoding_name: str) -> None:
        _h().ui_call("View.set_encoding")
        buffer = self._buffer()
        if buffer is not None:
            buffer.encoding = encoding_name

    def line_endings(self) -> str:
        buffer = self._buffer()
        return buffer.line_endings if buffer is not None else "Unix"

    def set_line_endings(self, line_ending_name: str) -> None:
        _h().ui_call("View.set_line_endings")
        buffer = self._buffer()
        if buffer is not None:
            buffer.line_endings = line_ending_name

    def size(self) -> int:
        return len(self._text())

    def begin_edit(self, edit_token: int, cmd: str, args: CommandArgsLike | None = None) -> Edit:
        data = self._data()
        if data is None:
            raise ValueError("the view is not valid")
        data.edit_token = edit_token
        return Edit(edit_token)

    def end_edit(self, edit: Edit) -> None:
        data = self._data()
        if data is not None and data.edit_token == edit.edit_token:
            data.edit_token = None

    def is_in_edit(self) -> bool:
        data = self._data()
        return data is not None and data.edit_token is not None

    def _modify(self, edit: Edit, begin: int, end: int, text: str, api: str) -> int:
        host = _h()
        host.ui_call(api)
        data, buffer = self._data(), self._buffer()
        if data is None or buffer is None:
            return 0
        if not isinstance(edit, Edit) or edit.edit_token is None or edit.edit_token != data.edit_token:
            raise ValueError("Edit objects may not be used after the TextCommand's run method has returned")
        if buffer.read_only or buffer.loading:
            return 0  # Sublime ignores edits to a read-only buffer
        size = len(buffer.text)
        begin, end = max(0, min(begin, size)), max(0, min(end, size))
        _events().remember_undo(buffer)
        buffer.text = buffer.text[:begin] + text + buffer.text[end:]
        buffer.change_count += 1
        delta = len(text) - (end - begin)

        def move(point: int) -> int:
            if point >= end:
                return point + delta
            if point > begin:
                return begin + len(text)  # inside the replaced text: to its end
            return point

        for view_id in buffer.views:
            view = host.views[view_id]
            view.selection = _merge([(move(a), move(b)) for a, b in view.selection])
        return len(text)

    def insert(self, edit: Edit, pt: Point, text: str) -> int:
        return self._modify(edit, pt, pt, text, "View.insert")

    def erase(self, edit: Edit, region: Region) -> None:
        self._modify(edit, region.begin(), region.end(), "", "View.erase")

    def replace(self, edit: Edit, region: Region, text: str) -> None:
        self._modify(edit, region.begin(), region.end(), text, "View.replace")

    def change_count(self) -> int:
        buffer = self._buffer()
        return buffer.change_count if buffer is not None else 0

    def run_command(self, cmd: str, args: CommandArgsLike | None = None) -> None:
        _events().run_text_command(self.view_id, cmd, args)

    def sel(self) -> Selection:
        return self.selection

    def substr(self, x: Region | Point) -> str:
        text = self._text()
        if isinstance(x, Region):
            return text[max(0, x.begin()) : max(0, x.end())]
        return text[x] if 0 <= x < len(text) else "\x00"

    def find(self, pattern: str, start_pt: Point, flags: FindFlags = FindFlags.NONE) -> Region:
        text = self._text()
        regex = re.escape(pattern) if flags & FindFlags.LITERAL else pattern
        match = re.compile(regex, re.IGNORECASE if flags & FindFlags.IGNORECASE else 0).search(text, start_pt)
        if match:
            return Region(match.start(), match.end())
        # No match: Region(-1, -1), or None as build 3's API reference documented ("or None if it
        # can't be found"); the 4213 stubs only say "The first Region matching": both are played.
        return None if _h().find_miss_is_none else Region(-1)  # type: ignore[return-value]

    def find_all_results(self) -> list[tuple[str, int, int]]:
        return [(name, line, column) for name, line, column, _text in self.find_all_results_with_text()]

    def find_all_results_with_text(self) -> list[tuple[str, int, int, str]]:
        """The build results in this view, parsed as Sublime does for the exec panel: each line is
        matched with `result_file_regex` (groups: file, line, column, message), else with
        `result_line_regex` (line, column, message) for the file last matched above it; a relative
        file is joined to `result_base_dir`; line and column are 1-based, 0 when not captured."""
        view_settings = self.settings()
        file_regex = view_settings.get("result_file_regex") or ""
        line_regex = view_settings.get("result_line_regex") or ""
        base = view_settings.get("result_base_dir") or ""
        results: list[tuple[str, int, int, str]] = []
        current = ""
        for text_line in self._text().split("\n"):
            match = re.search(file_regex, text_line) if file_regex else None
            groups: list[str | None]
            if match is not None:
                groups = [*match.groups(), None, None, None, None][:4]
                current = os.path.join(base, groups[0] or "") if base else (groups[0] or "")
                groups = groups[1:]
            elif line_regex and current and (match := re.search(line_regex, text_line)) is not None:
                groups = [*match.groups(), None, None, None][:3]
            else:
                continue
            line, column, message = groups
            results.append((current, int(line or 0), int(column or 0), message or ""))  # "" groups count as 0
        return results

    def settings(self) -> Settings:
        data = _h().views.get(self.view_id)
        if data is None:
            raise ValueError("the view is not valid")
        return Settings(data.settings_id)

    def lines(self, region: Region) -> list[Region]:
        result = []
        point = self.line(region.begin()).begin()
        while True:
            line = self.line(point)
            result.append(line)
            if line.end() >= region.end() or line.end() >= self.size():
                return result
            point = line.end() + 1

    def split_by_newlines(self, region: Region) -> list[Region]:
        return [line.intersection(region) if not region.empty() else region for line in self.lines(region)]

    def line(self, x: Region | Point) -> Region:
        text = self._text()
        begin = x.begin() if isinstance(x, Region) else x
        end = x.end() if isinstance(x, Region) else x
        begin, end = max(0, min(begin, len(text))), max(0, min(end, len(text)))
        start = text.rfind("\n", 0, begin) + 1
        stop = text.find("\n", end)
        return Region(start, len(text) if stop < 0 else stop)

    def full_line(self, x: Region | Point) -> Region:
        line = self.line(x)
        return Region(line.a, min(line.b + 1, self.size()))

    def word(self, x: Region | Point) -> Region:
        text = self._text()
        point = x.begin() if isinstance(x, Region) else x
        begin = end = max(0, min(point, len(text)))
        while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] == "_"):
            begin -= 1
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        return Region(begin, end)

    def _row_and_line(self, tp: Point) -> tuple[int, str]:
        text = self._text()
        tp = max(0, min(tp, len(text)))
        row = text.count("\n", 0, tp)
        return row, text[text.rfind("\n", 0, tp) + 1 : tp]

    def rowcol(self, tp: Point) -> tuple[int, int]:
        row, before = self._row_and_line(tp)
        return row, len(before)

    def rowcol_utf8(self, tp: Point) -> tuple[int, int]:
        row, before = self._row_and_line(tp)
        return row, len(before.encode("utf-8", "surrogatepass"))

    def rowcol_utf16(self, tp: Point) -> tuple[int, int]:
        row, before = self._row_and_line(tp)
        return row, _utf16_len(before)

    def _text_point(self, row: int, col: int, clamp_column: bool, measure: Callable[[str], int]) -> Point:
        text = self._text()
        lines = text.split("\n")
        row = max(0, min(row, len(lines) - 1))
        start = sum(len(line) + 1 for line in lines[:row])
        line = lines[row]
        chars = _advance(line, max(0, col), measure)
        if clamp_column:
            chars = min(chars, len(line))
        return min(start + chars, len(text))

    def text_point(self, row: int, col: int, *, clamp_column: bool = False) -> Point:
        return self._text_point(row, col, clamp_column, lambda c: 1)

    def text_point_utf8(self, row: int, col: int, *, clamp_column: bool = False) -> Point:
        return self._text_point(row, col, clamp_column, lambda c: len(c.encode("utf-8", "surrogatepass")))

    def text_point_utf16(self, row: int, col: int, *, clamp_column: bool = False) -> Point:
        return self._text_point(row, col, clamp_column, lambda c: 2 if ord(c) > 0xFFFF else 1)

    def utf8_code_units(self, tp: Point | None = None) -> int:
        text = self._text()
        return len(text[: len(text) if tp is None else tp].encode("utf-8", "surrogatepass"))

    def utf16_code_units(self, tp: Point | None = None) -> int:
        text = self._text()
        return _utf16_len(text[: len(text) if tp is None else tp])

    def visible_region(self) -> Region:
        return Region(0, self.size())

    def show(
        self,
        location: Region | Selection | Point,
        show_surrounds: bool = True,
        keep_to_left: bool = False,
        animate: bool = True,
    ) -> None:
        _h().ui_call("View.show")

    def show_at_center(self, location: Region | Point, animate: bool = True) -> None:
        _h().ui_call("View.show_at_center")

    def add_regions(
        self,
        key: str,
        regions: list[Region],
        scope: str = "",
        icon: str = "",
        flags: RegionFlags = RegionFlags.NONE,
        annotations: list[str] = [],  # noqa: B006 - the real default
        annotation_color: str = "",
        on_navigate: Callable[[str], None] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        _h().ui_call("View.add_regions")
        data = self._data()
        if data is not None:
            data.regions[key] = {
                "regions": [(r.a, r.b) for r in regions],
                "scope": scope,
                "icon": icon,
                "flags": int(flags),
                "annotations": list(annotations),
                "on_navigate": on_navigate,
            }

    def get_regions(self, key: str) -> list[Region]:
        data = self._data()
        entry = data.regions.get(key) if data is not None else None
        return [Region(a, b) for a, b in entry["regions"]] if entry else []

    def erase_regions(self, key: str) -> None:
        _h().ui_call("View.erase_regions")
        data = self._data()
        if data is not None:
            data.regions.pop(key, None)

    def add_phantom(
        self,
        key: str,
        region: Region,
        content: str,
        layout: PhantomLayout,
        on_navigate: Callable[[str], None] | None = None,
    ) -> int:
        host = _h()
        host.ui_call("View.add_phantom")
        data = self._data()
        phantom_id = host.new_id()
        if data is not None:
            data.phantoms[phantom_id] = (key, (region.a, region.b), content, int(layout), on_navigate)
        return phantom_id

    def erase_phantoms(self, key: str) -> None:
        _h().ui_call("View.erase_phantoms")
        data = self._data()
        if data is not None:
            data.phantoms = {pid: p for pid, p in data.phantoms.items() if p[0] != key}

    def erase_phantom_by_id(self, pid: int) -> None:
        # Not checked: `PhantomSet.__del__` calls it wherever and whenever the garbage collector runs.
        data = _state.host().views.get(self.view_id)
        if data is not None:
            data.phantoms.pop(pid, None)

    def query_phantom(self, pid: int) -> list[Region]:
        data = self._data()
        phantom = data.phantoms.get(pid) if data is not None else None
        return [Region(*phantom[1])] if phantom is not None else [Region(-1)]

    def query_phantoms(self, pids: list[int]) -> list[Region]:
        return [self.query_phantom(pid)[0] for pid in pids]

    def assign_syntax(self, syntax: str | Syntax) -> None:
        _h().ui_call("View.assign_syntax")
        buffer = self._buffer()
        if buffer is None:
            return
        if isinstance(syntax, Syntax):
            path = syntax.path
        elif syntax.startswith("scope:"):
            found = find_syntax_by_scope(syntax[len("scope:") :])
            if not found:
                raise ValueError(f"no syntax for {syntax!r}")
            path = found[0].path
        else:
            if syntax_from_path(syntax) is None:
                raise ValueError(f"unknown syntax {syntax!r} (the fake knows: {[s.path for s in list_syntaxes()]})")
            path = syntax
        problem = _syntax_problem(path)
        if problem is not None:  # Sublime shows the error in a dialog; the view keeps its syntax
            _h().dialogs.append(_state.Dialog("error", problem))
            return
        buffer.syntax = path
        self.settings().set("syntax", path)

    def syntax(self) -> Syntax | None:
        buffer = self._buffer()
        return syntax_from_path(buffer.syntax) if buffer is not None else None

    def set_status(self, key: str, value: str) -> None:
        _h().ui_call("View.set_status")
        data = self._data()
        if data is not None:
            data.status[key] = value

    def get_status(self, key: str) -> str:
        data = self._data()
        return data.status.get(key, "") if data is not None else ""

    def erase_status(self, key: str) -> None:
        _h().ui_call("View.erase_status")
        data = self._data()
        if data is not None:
            data.status.pop(key, None)

    def clear_undo_stack(self) -> None:
        buffer = self._buffer()
        if buffer is not None:
            buffer.undo.clear()
            buffer.redo.clear()


class Phantom:
    def __init__(
        self,
        region: Region,
        content: str,
        layout: PhantomLayout,
        on_navigate: Callable[[str], None] | None = None,
    ) -> None:
        self.region = region
        self.content = content
        self.layout = layout
        self.on_navigate = on_navigate
        self.id: int | None = None

    def __eq__(self, rhs: object) -> bool:
        return isinstance(rhs, Phantom) and self.to_tuple() == rhs.to_tuple()

    __hash__ = None  # type: ignore[assignment]

    def to_tuple(self) -> tuple[tuple[Point, Point], str, PhantomLayout, Callable[[str], None] | None]:
        return (self.region.to_tuple(), self.content, self.layout, self.on_navigate)


class PhantomSet:
    def __init__(self, view: View, key: str = "") -> None:
        self.view = view
        self.key = key
        self.phantoms: list[Phantom] = []

    def __del__(self) -> None:
        try:
            for phantom in self.phantoms:
                if phantom.id is not None:
                    self.view.erase_phantom_by_id(phantom.id)
        except RuntimeError:
            pass  # the fake was reset

    def __repr__(self) -> str:
        return f"PhantomSet({self.view!r}, key={self.key!r})"

    def update(self, phantoms: Iterable[Phantom]) -> None:
        """Keep phantoms that did not change (same region, content, layout and callback), add new ones."""
        wanted = {p.to_tuple(): p for p in phantoms}
        ids = [p.id for p in self.phantoms if p.id is not None]
        for phantom, region in zip(self.phantoms, self.view.query_phantoms(ids), strict=False):
            phantom.region = region
        current = {p.to_tuple(): p for p in self.phantoms}
        for key, phantom in wanted.items():
            if key in current:
                phantom.id = current[key].id
            else:
                phantom.id = self.view.add_phantom(
                    self.key, phantom.region, phantom.content, phantom.layout, phantom.on_navigate
                )
        kept = {p.id for p in wanted.values()}
        for phantom in self.phantoms:
            if phantom.id not in kept and phantom.region != Region(-1) and phantom.id is not None:
                self.view.erase_phantom_by_id(phantom.id)
        self.phantoms = list(wanted.values())


class Html:
    def __init__(self, data: str) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"Html({self.data!r})"


# -- internals shared with `_plugin_host` and `control` (not API) --


def _create_view(
    window: WindowData,
    group: int | None,
    *,
    file_name: str | None = None,
    loading: bool = False,
    element: str | None = None,
) -> View:
    """A new buffer and view; `group` None makes a panel view (no sheet)."""
    host = _h()
    with host.lock:
        buffer = BufferData(host.new_id(), file_name=file_name, loading=loading)
        if file_name is not None:
            syntax = find_syntax_for_file(file_name)
            if syntax is not None:
                buffer.syntax = syntax.path
        view = ViewData(host.new_id(), buffer.id, window.id, element=element)
        view.settings_id = _new_settings({"syntax": buffer.syntax}, view_id=view.id)
        buffer.views.append(view.id)
        host.buffers[buffer.id] = buffer
        host.views[view.id] = view
        if group is not None:
            sheet = SheetData(host.new_id(), window.id, view.id)
            host.sheets[sheet.id] = sheet
            view.sheet_id = sheet.id
            window.groups[group].append(sheet.id)
            if window.selected[group] is None:
                window.selected[group] = sheet.id
    return View(view.id)


def _file_text(buffer: BufferData) -> str:
    """The text of the buffer's file as Sublime loads it (encoding and line endings noted on the
    buffer, every line break as "\\n"); "" when there is no such file."""
    if buffer.file_name is None or not os.path.isfile(buffer.file_name):
        return ""
    with open(buffer.file_name, "rb") as handle:
        raw = handle.read()
    if raw.startswith(b"\xef\xbb\xbf"):
        text, buffer.encoding = raw[3:].decode("utf-8", "replace"), "UTF-8 with BOM"
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text, buffer.encoding = raw.decode("cp1252", "replace"), "Western (Windows 1252)"
    if "\r\n" in text:
        buffer.line_endings = "Windows"
    elif "\r" in text:
        buffer.line_endings = "CR"
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _finish_loading(view_id: int, position: tuple[int, int] | None) -> None:
    host = _h()
    view = host.views.get(view_id)
    if view is None or not view.valid:
        return
    buffer = host.buffers[view.buffer_id]
    buffer.text = _file_text(buffer)
    buffer.loading = False
    point = View(view_id).text_point(position[0] - 1, position[1] - 1) if position else 0
    view.selection = [(point, point)]
    _events().view_event("on_load", view_id)


def _most_recent(window: WindowData, candidates: list[int]) -> int | None:
    for sheet_id in reversed(window.history):
        if sheet_id in candidates:
            return sheet_id
    return candidates[-1] if candidates else None


def _activation_changed(old: View | None, new: View | None) -> None:
    if old == new:
        return
    if old is not None and old.is_valid():
        _events().view_event("on_deactivated", old.view_id)
    if new is not None and new.is_valid():
        _events().view_event("on_activated", new.view_id)


def _focus_sheet(window: WindowData, sheet_id: int) -> None:
    old = Window(window.id).active_view()
    for group, sheets in enumerate(window.groups):
        if sheet_id in sheets:
            window.active_group = group
            window.selected[group] = sheet_id
    window.focused_panel_view = None
    if sheet_id in window.history:
        window.history.remove(sheet_id)
    window.history.append(sheet_id)
    _activation_changed(old, Window(window.id).active_view())


def _clone_view(view_id: int) -> View:
    """File › New View into File (`clone_file`): a second view into the same buffer, in the same group,
    focused ([stubs] `View.clones`, `on_clone`). Whether it copies the view's settings no source
    settles: the fake copies them, the case where a clone looks like its original by its settings."""
    host = _h()
    with host.lock:
        original = host.views[view_id]
        window = host.windows[original.window_id]
        old = host.settings[original.settings_id]
        view = ViewData(host.new_id(), original.buffer_id, window.id, selection=list(original.selection))
        view.settings_id = _new_settings({**old.defaults, **old.values}, view_id=view.id)
        host.buffers[original.buffer_id].views.append(view.id)
        host.views[view.id] = view
        group = next((g for g, sheets in enumerate(window.groups) if original.sheet_id in sheets), window.active_group)
        sheet = SheetData(host.new_id(), window.id, view.id)
        host.sheets[sheet.id] = sheet
        view.sheet_id = sheet.id
        window.groups[group].append(sheet.id)
    _events().view_event("on_clone", view.id)
    _focus_sheet(window, sheet.id)
    return View(view.id)


def _move_view(view_id: int, window_id: int) -> None:
    """A tab dragged into another window: the same view (id, buffer, settings) now in `window_id`'s
    active group, focused there. Which events Sublime sends for it no source settles: the fake sends
    the activations only."""
    host = _h()
    view = host.views[view_id]
    old = Window(view.window_id).active_view() if view.window_id in host.windows else None
    _remove_sheet(view.window_id, view.sheet_id)
    target = host.windows[window_id]
    sheet = SheetData(host.new_id(), window_id, view_id)
    host.sheets[sheet.id] = sheet
    view.sheet_id, view.window_id = sheet.id, window_id
    target.groups[target.active_group].append(sheet.id)
    if old is not None and old.view_id == view_id:
        _events().view_event("on_deactivated", view_id)
    _focus_sheet(target, sheet.id)
    _focus_window(window_id)


def _focus_window(window_id: int) -> None:
    host = _h()
    old_window = active_window()
    old = old_window.active_view() if old_window else None
    if window_id in host.window_order:
        host.window_order.remove(window_id)
    host.window_order.append(window_id)
    _activation_changed(old, Window(window_id).active_view())


def _remove_sheet(window_id: int, sheet_id: int) -> None:
    host = _h()
    window = host.windows.get(window_id)
    host.sheets.pop(sheet_id, None)
    if window is None:
        return
    if sheet_id in window.history:
        window.history.remove(sheet_id)
    for group, sheets in enumerate(window.groups):
        if sheet_id in sheets:
            sheets.remove(sheet_id)
            if window.selected[group] == sheet_id:
                window.selected[group] = _most_recent(window, sheets)


def _destroy_view(view_id: int) -> None:
    host = _h()
    view = host.views.get(view_id)
    if view is None or not view.valid:
        return
    view.valid = False
    buffer = host.buffers.get(view.buffer_id)
    if buffer is not None:
        buffer.views.remove(view_id)
        if not buffer.views:
            del host.buffers[buffer.id]


def _close_view(view_id: int) -> None:
    """The closing sequence: on_pre_close, the tab goes, on_close, the next tab is activated."""
    host = _h()
    view = host.views[view_id]
    window = host.windows.get(view.window_id)
    window_id = view.window_id
    handle = View(view_id)
    if not host.pre_close_has_window:
        view.window_id = 0  # the ST4 regressions sublimehq/sublime_text#3463, #3516
    _events().view_event("on_pre_close", view_id)
    was_active = window is not None and Window(window.id).active_view() == handle
    if window is not None and window.focused_panel_view == view_id:
        window.focused_panel_view = None
    if view.sheet_id:
        _remove_sheet(window_id, view.sheet_id)
        view.sheet_id = 0
    view.window_id = 0  # during on_close the view is no longer in a window
    _events().view_event("on_close", view_id)
    _events().forget_view(view_id)
    _destroy_view(view_id)
    if was_active and window is not None and window.valid:
        new = Window(window.id).active_view()
        if new is not None:
            _events().view_event("on_activated", new.view_id)
