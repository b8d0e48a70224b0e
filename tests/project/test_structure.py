"""The map of `companion/`: floors inside floors, and no import circle.

The package, bottom up (an arrow means "may import"; every module may import its own floor):
- `core/`: free of agent protocols and of sublime; it imports nothing of the package outside it, and
  outside the package only the standard library and the pinned runtime libraries. Inside it:
  `system/` (processes, the OS) imports nothing else of the package; `files/` (the path policy and the
  safe file I/O) -> system; the editor model (`core/*.py`: the Editor port, reviews, context) ->
  files, system; `history/` (checkpoints, change sets, restores, turns) -> files, system, never the
  model or the server; `server/` (the window's server and its guards) -> the model, files, system,
  never history.
- The rooms, one agent protocol each: `gemini_ide/`, `claude_ide/`, `acp/`, `mcp_tools/` -> core;
  never another room, never anything above them.
- Above the rooms: the composition (`runtime`) and the programs (`cli`, `bridge`, `doctor`,
  `__main__`), `headless/` (the front end without Sublime) and `sublime_editor/` (the only code that
  imports sublime) -> rooms, core; `headless/` and `sublime_editor/` never import each other.
- Inside `sublime_editor/`: the base (`sublime_editor/*.py`: settings, main thread, the window
  registry and what runs with the commands' base `CompanionWindowCommand`, the editor, the review UI,
  status, Terminus) < `changes/` < `chat/` < `terminal/` < `lifecycle` (plugin_loaded/unloaded only)
  < `commands/` (every Command and Listener `plugin.py` exports, and only there); each floor imports
  only its own and the floors below it.

Every import counts, at any level of a module (a function-level or TYPE_CHECKING import is still a
dependency), which is why a circle cannot be hidden by moving an import into a function.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "companion"
CORE = "core"
# The floors of core/, bottom up, and what each may import besides itself.
CORE_FLOORS = {
    "system": set(),
    "files": {"system"},
    "model": {"files", "system"},
    "history": {"files", "system"},
    "server": {"model", "files", "system"},
}
ROOM_PACKAGES = ("gemini_ide", "claude_ide", "acp", "mcp_tools")
ABOVE_THE_ROOMS = ("runtime", "cli", "__main__", "bridge", "doctor", "headless", "sublime_editor")
FRONT_ENDS = ("headless", "sublime_editor")  # above the rooms, and never each other
ADAPTER = "sublime_editor"
# The floors of sublime_editor/, bottom up: each imports only its own floor and those below it.
ADAPTER_FLOORS = ("base", "changes", "chat", "terminal", "lifecycle", "commands")
ACP_SDK_HOME = "acp.session"
ACP_DEMO_AGENT = "acp.agents.demo_agent"  # the built-in demo agent: a program of its own, the SDK's agent side


def modules() -> dict[str, str]:
    """Every module of the package, by dotted name relative to it ("" is the package itself)."""
    found: dict[str, str] = {}
    for folder, _dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, os.path.join(ROOT, PACKAGE))[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported_names(module: str, path: str) -> Iterator[str]:
    """What `module` imports, as absolute dotted names ("companion.x.y", "sublime", "acp", ...)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    dotted = f"{PACKAGE}.{module}".rstrip(".")
    package = dotted if path.endswith("__init__.py") else dotted.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_map() -> dict[str, set[str]]:
    """module -> the package's modules it imports (relative names), from the source, not by importing."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for module, path in known.items():
        targets = set()
        for name in imported_names(module, path):
            if name == PACKAGE or not name.startswith(PACKAGE + "."):
                continue
            relative = name[len(PACKAGE) + 1 :]
            if relative in known and relative != module and not is_ancestor(relative, module):
                targets.add(relative)
        edges[module] = targets
    return edges


def is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def external_imports(module: str) -> set[str]:
    """The top-level names of what `module` imports from outside the package."""
    names = imported_names(module, modules()[module])
    return {name.split(".")[0] for name in names if name and not name.startswith(PACKAGE)}


def room(module: str) -> str | None:
    """The protocol room `module` belongs to, or None for the core and the layers above the rooms."""
    top = module.split(".")[0]
    return top if top in ROOM_PACKAGES else None


def in_core(module: str) -> bool:
    return module.split(".")[0] == CORE


def above_the_rooms(module: str) -> bool:
    return module.split(".")[0] in ABOVE_THE_ROOMS


def core_floor(module: str) -> str:
    """The floor of a core module: its sub-package, or "model" for `core/*.py` (and core itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in CORE_FLOORS) else "model"


def adapter_floor(module: str) -> str:
    """The floor of a module of the Sublime adapter: its sub-package, `lifecycle`, or the base."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ADAPTER_FLOORS:
        return parts[1]
    return "base"


def floor_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks a floor (see the module's docstring for the map)."""
    found = []
    for module, targets in edges.items():
        for target in sorted(targets):
            problem = _violation(module, target)
            if problem:
                found.append(f"{module} -> {target}: {problem}")
    return sorted(found)


def _violation(module: str, target: str) -> str | None:
    top, target_top = module.split(".")[0], target.split(".")[0]
    if in_core(module):
        if not in_core(target):
            return "the core imports only the core (move the name down into it)"
        floor, target_floor = core_floor(module), core_floor(target)
        if target_floor != floor and target_floor not in CORE_FLOORS[floor]:
            return f"core/{floor} may not import core/{target_floor} (see the floors of core/ above)"
    elif room(module) is not None:
        if room(target) not in (None, room(module)):
            return "a room imports another (move the shared name into the core)"
        if above_the_rooms(target):
            return "a room imports from above the rooms (move it down)"
    elif top in FRONT_ENDS and target_top in FRONT_ENDS and top != target_top:
        return "headless/ and sublime_editor/ never import each other (move the shared name into a room or the core)"
    elif top == ADAPTER == target_top:
        floor, target_floor = adapter_floor(module), adapter_floor(target)
        if ADAPTER_FLOORS.index(target_floor) > ADAPTER_FLOORS.index(floor):
            return f"sublime_editor's {floor} floor imports the higher {target_floor} floor (move the name down)"
    return None


def test_every_module_has_its_floor() -> None:
    lost = [m for m in modules() if m and not (in_core(m) or room(m) or above_the_rooms(m))]
    assert not lost, f"put these in core/, a room or the layer above the rooms (and say so here): {lost}"


def test_every_floor_imports_only_its_own_and_those_below() -> None:
    violations = floor_violations(import_map())
    assert not violations, "\n".join(violations)


def test_the_floor_check_finds_each_kind_of_violation() -> None:
    # The check above must be able to fail (tried for real too: `from ..runtime import Runtime` in
    # core/reviews.py, then removed).
    edges = {
        "core.a": {"core.b", "gemini_ide.server"},
        "core.b": {"doctor"},
        "core.system.processes": {"core.files.paths"},
        "core.files.paths": {"core.system.processes", "core.reviews"},
        "core.history.turns": {"core.files.paths", "core.server.window", "core.editor"},
        "core.server.window": {"core.editor", "core.history.turns"},
        "acp.x": {"core.a", "claude_ide.server"},
        "mcp_tools.tools": {"cli", "mcp_tools.settings"},
        "runtime": {"acp.x", "core.a"},
        "headless.chat": {"acp.x", "sublime_editor.settings"},
        "sublime_editor.chat.view": {"sublime_editor.changes.tab", "sublime_editor.lifecycle"},
        "sublime_editor.settings": {"sublime_editor.commands.chat"},
        "sublime_editor.commands.chat": {"sublime_editor.lifecycle", "sublime_editor.terminal.launch"},
    }
    assert floor_violations(edges) == [
        "acp.x -> claude_ide.server: a room imports another (move the shared name into the core)",
        "core.a -> gemini_ide.server: the core imports only the core (move the name down into it)",
        "core.b -> doctor: the core imports only the core (move the name down into it)",
        "core.files.paths -> core.reviews: core/files may not import core/model (see the floors of core/ above)",
        "core.history.turns -> core.editor: core/history may not import core/model (see the floors of core/ above)",
        "core.history.turns -> core.server.window: core/history may not import core/server (see the floors of core/ above)",  # noqa: E501
        "core.server.window -> core.history.turns: core/server may not import core/history (see the floors of core/ above)",  # noqa: E501
        "core.system.processes -> core.files.paths: core/system may not import core/files (see the floors of core/ above)",  # noqa: E501
        "headless.chat -> sublime_editor.settings: headless/ and sublime_editor/ never import each other (move the shared name into a room or the core)",  # noqa: E501
        "mcp_tools.tools -> cli: a room imports from above the rooms (move it down)",
        "sublime_editor.chat.view -> sublime_editor.lifecycle: sublime_editor's chat floor imports the higher lifecycle floor (move the name down)",  # noqa: E501
        "sublime_editor.settings -> sublime_editor.commands.chat: sublime_editor's base floor imports the higher commands floor (move the name down)",  # noqa: E501
    ]


def test_no_folder_of_the_package_holds_more_than_fifteen_modules() -> None:
    # The listing is the architecture: a folder past ~15 modules has grown a group that wants its own.
    crowded = {}
    for folder, _dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        count = len([name for name in files if name.endswith(".py") and name != "__init__.py"])
        if count > 15:
            crowded[os.path.relpath(folder, ROOT)] = count
    assert not crowded, f"split these folders into groups of their own (see the floors above): {crowded}"


# What Sublime runs as a command or sends events to (sublime_plugin's classes).
SUBLIME_PLUGIN_CLASSES = {
    "ApplicationCommand",
    "WindowCommand",
    "TextCommand",
    "EventListener",
    "ViewEventListener",
    "TextChangeListener",
}


def plugin_classes() -> dict[str, tuple[str, set[str]]]:
    """Every class of the package that derives from a sublime_plugin command or listener, directly or
    through the package's own classes: its name -> (its module, the names of its bases)."""
    found: dict[str, tuple[str, set[str]]] = {}
    for module, path in modules().items():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found[node.name] = (module, {_base_name(base) for base in node.bases})
    plugin: set[str] = set()
    while True:  # the package's classes on sublime_plugin's, level by level
        more = {
            name
            for name, (_module, bases) in found.items()
            if name not in plugin and any(b in plugin or b.startswith("sublime_plugin.") for b in bases)
        }
        if not more:
            return {name: found[name] for name in sorted(plugin)}
        plugin |= more


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "sublime_plugin":
        return f"sublime_plugin.{base.attr}" if base.attr in SUBLIME_PLUGIN_CLASSES else base.attr
    return base.id if isinstance(base, ast.Name) else ast.unparse(base)


def plugin_exports() -> set[str]:
    """The names plugin.py exports (its `__all__`): what Sublime registers."""
    with open(os.path.join(ROOT, "plugin.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("plugin.py has no __all__")


def test_every_command_and_listener_lives_in_commands() -> None:
    # The top floor of the adapter holds what Sublime runs; the floors below hold what those call.
    # Only the bases commands derive from (CompanionWindowCommand) live lower, and Sublime never runs those.
    classes = plugin_classes()
    bases = {base for _module, class_bases in classes.values() for base in class_bases}
    misplaced = sorted(
        f"{module}.{name}"
        for name, (module, _bases) in classes.items()
        if name not in bases and not module.startswith(f"{ADAPTER}.commands.")
    )
    assert not misplaced, f"move these Command and Listener classes into sublime_editor/commands/: {misplaced}"
    exported = plugin_exports()
    assert not bases & exported, f"plugin.py exports a base class (Sublime would run it): {sorted(bases & exported)}"
    missing = sorted(name for name in classes if name not in bases and name not in exported)
    assert not missing, f"commands and listeners plugin.py does not export (Sublime never sees them): {missing}"


def test_the_commands_find_what_runs_in_the_base_not_in_the_boot() -> None:
    # lifecycle starts and stops the companion (windows.running); the commands read it from the base
    # (CompanionWindowCommand), and only the listener that stops everything at exit reaches the boot.
    importers = sorted(m for m, targets in import_map().items() if f"{ADAPTER}.lifecycle" in targets)
    assert importers == [f"{ADAPTER}.commands.listeners"], f"import what runs from sublime_editor.windows: {importers}"


def pinned_runtime_libraries() -> set[str]:
    """The import names of the runtime's pinned distributions (requirements/runtime.txt)."""
    with open(os.path.join(ROOT, "requirements", "runtime.txt"), encoding="utf-8") as handle:
        names = re.findall(r"^([A-Za-z0-9_.-]+)==", handle.read(), re.MULTILINE)
    return {name.lower().replace("-", "_") for name in names}


def test_the_core_imports_only_the_standard_library_and_pinned_libraries() -> None:
    allowed = set(sys.stdlib_module_names) | pinned_runtime_libraries() | {"__future__"}
    outside = {module: sorted(external_imports(module) - allowed) for module in modules() if in_core(module)}
    outside = {module: names for module, names in outside.items() if names}
    assert not outside, f"the core imports libraries that are neither standard nor pinned: {outside}"


def import_circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circles() -> None:
    circles = import_circles(import_map())
    assert not circles, "modules that import each other (move the shared name down a floor):\n" + "\n".join(
        " <-> ".join(circle) for circle in circles
    )


def test_the_circle_finder_finds_a_circle() -> None:
    # The check above must be able to fail: a two-module and a three-module circle are found.
    edges = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(import_circles(edges)) == [["a", "b"], ["c", "d", "e"]]


def test_only_the_sublime_adapter_imports_sublime() -> None:
    outside = [
        module
        for module in modules()
        if external_imports(module) & {"sublime", "sublime_plugin"} and module.split(".")[0] != "sublime_editor"
    ]
    assert not outside, f"only companion/sublime_editor/ may import sublime; move this code there: {outside}"


def test_only_the_chat_session_imports_the_acp_sdk() -> None:
    outside = [
        module
        for module in modules()
        if "acp" in external_imports(module) and module not in (ACP_SDK_HOME, ACP_DEMO_AGENT)
    ]
    assert not outside, (
        "only companion/acp/session.py may import the ACP SDK (it is loaded on the first chat only); "
        f"route these through ChatSession: {outside}"
    )
