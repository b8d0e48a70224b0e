"""The fake cannot invent API: everything public it defines exists in `sublime-text-stubs` 4213.

Both sides are read with `ast` (the stubs cannot be imported): every public top-level function and
class of the fake's `sublime` and `sublime_plugin`, every method (and `__init__` / dunder the stub
declares), every enum member and public attribute set in `__init__` must exist in the stub, with the
same parameter names, kinds and optional-ness. Our extras are private (leading underscore).
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOWED_EXTRA_DUNDERS = {"__repr__", "__str__", "__hash__", "__del__"}


def stub_path(package: str) -> str:
    for entry in sys.path:
        candidate = os.path.join(entry, f"{package}-stubs", "__init__.pyi")
        if os.path.isfile(candidate):
            return candidate
    raise AssertionError(f"{package}-stubs is not installed (sublime-text-stubs 4213 is a dev dependency)")


def parse(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), path)


Function = ast.FunctionDef | ast.AsyncFunctionDef


def params(function: Function, is_method: bool) -> list[tuple[str, str, bool]]:
    """(name, kind, has default) for each parameter, without self/cls."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    result = [
        (a.arg, "positional-only" if a in args.posonlyargs else "positional", d)
        for a, d in zip(positional, defaults, strict=True)
    ]
    if is_method and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list):
        result = result[1:]
    if args.vararg:
        result.append((args.vararg.arg, "var-positional", False))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        result.append((arg.arg, "keyword-only", default is not None))
    if args.kwarg:
        result.append((args.kwarg.arg, "var-keyword", False))
    return result


def top_level(module: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                names[alias.asname or alias.name] = node
    return names


def class_members(cls: ast.ClassDef) -> tuple[dict[str, Function], dict[str, ast.AST]]:
    methods: dict[str, Function] = {}
    attributes: dict[str, ast.AST] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            methods[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    attributes[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            attributes[node.target.id] = node
    return methods, attributes


def instance_attributes(method: Function) -> set[str]:
    found = set()
    for node in ast.walk(method):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.add(target.attr)
    return found


def literal(node: ast.AST) -> object:
    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
    try:
        return ast.literal_eval(value) if value is not None else None
    except ValueError:
        return None


def compare_class(
    name: str, fake: ast.ClassDef, stub: ast.ClassDef, stub_classes: dict[str, ast.ClassDef]
) -> list[str]:
    problems: list[str] = []
    stub_methods, stub_attributes = class_members(stub)
    for base in stub.bases:  # inherited stub members count (TextSheet inherits Sheet's)
        base_name = base.id if isinstance(base, ast.Name) else None
        if base_name in stub_classes:
            inherited_methods, inherited_attributes = class_members(stub_classes[base_name])
            stub_methods = {**inherited_methods, **stub_methods}
            stub_attributes = {**inherited_attributes, **stub_attributes}
    fake_methods, fake_attributes = class_members(fake)
    for method_name, method in fake_methods.items():
        dunder = method_name.startswith("__") and method_name.endswith("__")
        if method_name.startswith("_") and not dunder:
            continue
        if dunder and method_name not in stub_methods:
            if method_name not in ALLOWED_EXTRA_DUNDERS:
                problems.append(f"{name}.{method_name} is not in the stubs")
            continue
        if method_name not in stub_methods:
            problems.append(f"{name}.{method_name} is not in the stubs")
            continue
        ours, theirs = params(method, True), params(stub_methods[method_name], True)
        if ours != theirs:
            problems.append(f"{name}.{method_name}{ours} differs from the stub {theirs}")
        if method_name == "__init__":
            for attribute in instance_attributes(method):
                if not attribute.startswith("_") and attribute not in stub_attributes:
                    problems.append(f"{name}.{attribute} (set in __init__) is not in the stubs")
    for attribute, node in fake_attributes.items():
        if attribute.startswith("_"):
            continue
        if attribute not in stub_attributes:
            problems.append(f"{name}.{attribute} is not in the stubs")
        elif literal(stub_attributes[attribute]) is not None and literal(node) != literal(stub_attributes[attribute]):
            problems.append(
                f"{name}.{attribute} = {literal(node)!r}, the stub says {literal(stub_attributes[attribute])!r}"
            )
    return problems


@pytest.mark.parametrize("module", ["sublime", "sublime_plugin"])
def test_everything_public_the_fake_defines_is_in_the_stubs_with_the_same_parameters(module: str) -> None:
    fake = top_level(parse(os.path.join(HERE, f"{module}.py")))
    stub = top_level(parse(stub_path(module)))
    stub_classes = {n: c for n, c in stub.items() if isinstance(c, ast.ClassDef)}
    problems: list[str] = []
    checked = 0
    for name, node in fake.items():
        if name.startswith("_") or isinstance(node, ast.ImportFrom):
            continue
        if name not in stub:
            problems.append(f"{module}.{name} is not in the stubs")
            continue
        checked += 1
        stub_node = stub[name]
        if isinstance(node, ast.FunctionDef):
            if not isinstance(stub_node, ast.FunctionDef):
                problems.append(f"{module}.{name} is a function here but not in the stubs")
            elif params(node, False) != params(stub_node, False):
                problems.append(f"{module}.{name}{params(node, False)} differs from {params(stub_node, False)}")
        elif isinstance(node, ast.ClassDef):
            if not isinstance(stub_node, ast.ClassDef):
                problems.append(f"{module}.{name} is a class here but not in the stubs")
            else:
                problems += compare_class(f"{module}.{name}", node, stub_node, stub_classes)
    assert problems == []
    assert checked >= (60 if module == "sublime" else 8)  # the comparison really ran over the API


def test_the_check_catches_an_invented_parameter(tmp_path: object) -> None:
    """The checker itself: a method with a parameter the real API lacks is reported."""
    fake = ast.parse("class View:\n    def size(self, exact=True):\n        return 0\n")
    stub = top_level(parse(stub_path("sublime")))
    stub_view = stub["View"]
    assert isinstance(stub_view, ast.ClassDef)
    fake_view = fake.body[0]
    assert isinstance(fake_view, ast.ClassDef)
    problems = compare_class("sublime.View", fake_view, stub_view, {})
    assert problems and "size" in problems[0]


def test_the_readme_names_every_sublime_call_the_adapter_makes() -> None:
    """tests/sublime_fake/README.md says, for each one, what the real program does and the source."""
    import glob
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    used: set[str] = set()
    for path in [
        *glob.glob(os.path.join(root, "companion", "sublime_editor", "*.py")),
        os.path.join(root, "plugin.py"),
    ]:
        with open(path, encoding="utf-8") as handle:
            used |= set(re.findall(r"\bsublime\.([A-Za-z_]+)", handle.read()))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    missing = sorted(name for name in used if f"sublime.{name}" not in readme and f"`{name}(" not in readme)
    assert missing == [], missing
