"""The map of `companion/`: one room per agent protocol around a shared core, and no import circle.

Rooms speak one agent protocol each: `gemini_ide/` (Gemini CLI's IDE companion), `claude_ide/`
(Claude Code's `/ide`), `acp/` (the ACP chat client) and the workspace tools offered to other MCP
clients (`workspace/tools.py`, `settings.py`, `factory.py`, `ask.py`). The rest of
`workspace/` is the path policy and the safe file I/O that every room and `disk_text` share, so
it is core. Above the rooms sit the composition (`runtime`, which decides which rooms serve a
window) and the entry points (`cli`, `bridge`, `doctor`, the Sublime adapter); they may import
rooms. Every import counts, at any level of a module (a function-level or TYPE_CHECKING import is
still a dependency), which is why a circle cannot be hidden by moving an import into a function.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "companion"
ROOM_PACKAGES = ("gemini_ide", "claude_ide", "acp")
WORKSPACE_TOOLS = ("workspace.tools", "workspace.settings", "workspace.factory", "workspace.ask")
ABOVE_THE_ROOMS = ("runtime", "cli", "__main__", "bridge", "doctor", "sublime_editor")
ACP_SDK_HOME = "acp.session"


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
    if top in ROOM_PACKAGES:
        return top
    if module in WORKSPACE_TOOLS:
        return "workspace tools"
    return None


def above_the_rooms(module: str) -> bool:
    return module.split(".")[0] in ABOVE_THE_ROOMS


def test_no_room_imports_another_room() -> None:
    crossings = [
        f"{module} -> {target}"
        for module, targets in import_map().items()
        for target in targets
        if room(module) is not None and room(target) not in (None, room(module))
    ]
    assert not crossings, "a protocol room imports another; move the shared name into the core:\n" + "\n".join(
        sorted(crossings)
    )


def test_the_core_imports_no_room() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in import_map().items()
        for target in targets
        if room(module) is None and not above_the_rooms(module) and module and room(target) is not None
    ]
    assert not upward, "a core module imports a protocol room; the room should import the core instead:\n" + "\n".join(
        sorted(upward)
    )


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
    outside = [module for module in modules() if "acp" in external_imports(module) and module != ACP_SDK_HOME]
    assert not outside, (
        "only companion/acp/session.py may import the ACP SDK (it is loaded on the first chat only); "
        f"route these through ChatSession: {outside}"
    )
