"""The run-time libraries installed alone (pip --no-deps) into one folder, shared by the session.

Versions are our pins (requirements/runtime.txt); pip's cache is reused. When pip fails because
PyPI cannot be reached the tests that need the folder are skipped with that reason; any other
failure fails them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools import libraries as L

REPO = L.ROOT


def pinned_requirements() -> list[str]:
    pins = L.runtime_pins()
    return [f"{name}=={pins[L.canonical(name)]}" for name in L.dependencies(L.current_platform())]


def pip_install_target(target: str, requirements: list[str]) -> None:
    """`pip install --no-deps --target`, skipping the caller's test only when PyPI is unreachable."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "--no-compile",
            "--target",
            target,
            *requirements,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode == 0:
        return
    try:
        L.check_reachable()
    except L.Unreachable as exc:
        pytest.skip(f"pip could not install the libraries and PyPI is unreachable: {exc}")
    pytest.fail(f"pip install --no-deps failed although PyPI is reachable:\n{result.stdout}\n{result.stderr}")


@pytest.fixture(scope="session")
def closure_lib(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A folder holding exactly the libraries of dependencies.json, at our pinned versions."""
    target = str(tmp_path_factory.mktemp("closure") / "lib")
    os.makedirs(target)
    pip_install_target(target, pinned_requirements())
    return target


def isolated(paths: list[str], code: str) -> list[str]:
    """argv for a Python running `code` that imports only the standard library and `paths`
    (-I: no environment variables, no user site, no script folder; -S: no site-packages)."""
    return [sys.executable, "-I", "-S", "-B", "-c", f"import sys; sys.path[:0] = {paths!r}\n{code}"]
