"""The map of `companion/`: one room per agent protocol around a shared core, and no import circle.

The core is its own folder, `core/` (the window's server, Reviews, the context, the path policy and
file I/O, the socket's guards, processes): it imports nothing of the package outside it, and
outside the package only the standard library and the pinned runtime libraries. Rooms speak one
agent protocol each: `gemini_ide/` (Gemini CLI's IDE companion), `claude_ide/` (Claude Code's
`/ide`), `acp/` (the ACP chat client) and `workspace/` (the tools offered to other MCP clients);
they import the core, never each other and nothing above them. Above the rooms sit the composition
(`runtime`, which decides which rooms serve a window) and the entry points (`cli`, `bridge`,
`doctor`, `headless`, `console`, `terminal_chat`, `terminal_restore`, the Sublime adapter); they
may import rooms. Every import counts, at any level of a module (a function-level or TYPE_CHECKING
import is still a dependency), which is why a circle cannot be hidden by moving an import into a function.
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
ROOM_PACKAGES = ("gemini_ide", "claude_ide", "acp", "workspace")
ABOVE_THE_ROOMS = (
    "runtime",
    "cli",
    "__main__",
    "bridge",
    "doctor",
    "headless",
    "headless_doctor",
    "console",
    "terminal_chat",
    "terminal_restore",
    "sublime_editor",
)
ACP_SDK_HOME = "acp.session"
ACP_DEMO_AGENT = "acp.demo_agent"  # the built-in demo agent: a program of its own, the SDK's agent side


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


def floor_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks the floors: the core importing anything of the package outside it, a
    room importing another room or anything above the rooms."""
    found = []
    for module, targets in edges.items():
        for target in sorted(targets):
            if in_core(module) and not in_core(target):
                found.append(f"{module} -> {target}: the core imports only the core (move the name down into it)")
            elif room(module) is not None and room(target) not in (None, room(module)):
                found.append(f"{module} -> {target}: a room imports another (move the shared name into the core)")
            elif room(module) is not None and above_the_rooms(target):
                found.append(f"{module} -> {target}: a room imports from above the rooms (move it down)")
    return sorted(found)


def test_every_module_has_its_floor() -> None:
    lost = [m for m in modules() if m and not (in_core(m) or room(m) or above_the_rooms(m))]
    assert not lost, f"put these in core/, a room or the layer above the rooms (and say so here): {lost}"


def test_the_core_imports_only_the_core_and_rooms_only_the_core() -> None:
    violations = floor_violations(import_map())
    assert not violations, "\n".join(violations)


def test_the_floor_check_finds_each_kind_of_violation() -> None:
    # The check above must be able to fail (tried for real too: `from ..runtime import Runtime` in
    # core/diffs.py, then removed).
    edges = {
        "core.a": {"core.b", "gemini_ide.server"},
        "core.b": {"doctor"},
        "acp.x": {"core.a", "claude_ide.server"},
        "workspace.tools": {"cli", "workspace.settings"},
        "runtime": {"acp.x", "core.a"},
    }
    assert floor_violations(edges) == [
        "acp.x -> claude_ide.server: a room imports another (move the shared name into the core)",
        "core.a -> gemini_ide.server: the core imports only the core (move the name down into it)",
        "core.b -> doctor: the core imports only the core (move the name down into it)",
        "workspace.tools -> cli: a room imports from above the rooms (move it down)",
    ]


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
