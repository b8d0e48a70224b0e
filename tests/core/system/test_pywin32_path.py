"""pywin32 on Windows: its folders reach sys.path without the host's `.pth` processing, and the
doctor names a missing or broken pywin32 with the fix instead of a traceback.

The layout is the pywin32 wheel's as Package Control unpacks it (`win32/`, `win32/lib/`,
`pywin32_system32/`, `pywin32.pth` with Windows separators); the whole start-up on a simulated
Windows host is in tests/packaging/test_platforms.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion import doctor
from companion.core.system import pywin32_path

PTH = "# .pth file for the PyWin32 extensions\nwin32\nwin32\\lib\nPythonwin\nimport pywin32_bootstrap\n"


@pytest.fixture
def lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A library folder on sys.path holding pywin32's layout; its bootstrap records each import."""
    lib = tmp_path / "python314"
    (lib / "win32" / "lib").mkdir(parents=True)
    (lib / "pywin32_system32").mkdir()
    (lib / "pywin32.pth").write_text(PTH, encoding="utf-8")
    (lib / "pywin32_bootstrap.py").write_text("import sys\nsys.bootstrapped = getattr(sys, 'bootstrapped', 0) + 1\n")
    (lib / "pywin32-311.dist-info").mkdir()
    (lib / "pywin32-311.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: pywin32\nVersion: 311\n")
    monkeypatch.setattr(sys, "path", [str(lib), *sys.path])
    doctor.broken_libraries.cache_clear()  # each test lays out its own pywin32
    yield lib
    doctor.broken_libraries.cache_clear()
    for name in ("pywin32_bootstrap", *doctor.PYWIN32_MODULES):
        sys.modules.pop(name, None)
    if hasattr(sys, "bootstrapped"):
        del sys.bootstrapped


def test_on_windows_the_pth_folders_are_appended_and_the_bootstrap_runs_once(lib: Path) -> None:
    before = list(sys.path)
    added = pywin32_path.make_importable("win32")
    # `Pythonwin` is not in this layout: only folders that exist are added, after everything else.
    assert added == [str(lib / "win32"), str(lib / "win32" / "lib")]
    assert sys.path == [*before, *added]
    assert getattr(sys, "bootstrapped", 0) == 1
    # Idempotent: a second call (the bridge, the doctor, a reloaded plugin) changes nothing.
    assert pywin32_path.make_importable("win32") == []
    assert sys.path == [*before, *added] and getattr(sys, "bootstrapped", 0) == 1


def test_a_host_that_processed_the_pth_already_gets_nothing_added(lib: Path) -> None:
    sys.path.extend([str(lib / "win32"), str(lib / "win32" / "lib")])
    before = list(sys.path)
    assert pywin32_path.make_importable("win32") == []
    assert sys.path == before


def test_only_the_bootstrap_line_is_executed(lib: Path) -> None:
    (lib / "pywin32.pth").write_text("win32\nimport os; os.environ['PWNED'] = '1'\n", encoding="utf-8")
    pywin32_path.make_importable("win32")
    assert "PWNED" not in os.environ
    assert not hasattr(sys, "bootstrapped")


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_elsewhere_nothing_changes(lib: Path, platform: str) -> None:
    before = list(sys.path)
    assert pywin32_path.make_importable(platform) == []
    assert sys.path == before and not hasattr(sys, "bootstrapped")


def test_a_broken_bootstrap_or_unreadable_pth_never_raises(lib: Path) -> None:
    (lib / "pywin32_bootstrap.py").write_text("raise OSError('DLL folder missing')\n")
    assert pywin32_path.make_importable("win32") == [str(lib / "win32"), str(lib / "win32" / "lib")]
    (lib / "pywin32.pth").write_bytes(b"\xff\xfe\x00bad")
    assert pywin32_path.make_importable("win32") == []


def test_windows_requires_pywin32_and_other_platforms_do_not() -> None:
    assert doctor.required_libraries("win32")["pywin32"] == ""
    for platform in ("linux", "darwin"):
        assert "pywin32" not in doctor.required_libraries(platform)


def test_the_doctor_names_a_missing_pywin32_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {name: "99" for name in doctor.required_libraries("win32")} | {"pywin32": None}
    missing, wrong = doctor.library_issues(versions, {})
    assert missing == ["pywin32"] and wrong == []
    assert "Satisfy Libraries" in doctor.library_fix()


def test_an_installed_pywin32_that_cannot_be_imported_is_reported_not_raised(lib: Path) -> None:
    """The wheel's modules are absent here (a half-removed install): the doctor says which import
    fails and why, in one line."""
    [entry] = doctor.broken_libraries("win32")
    assert entry.startswith("pywin32 311 (installed, but `import pywintypes` fails: No module named 'pywintypes')")
    outdated, broken = doctor.split_wrong([entry])
    assert outdated == [] and broken == [entry]


def test_a_working_pywin32_is_not_reported(lib: Path) -> None:
    for module in doctor.PYWIN32_MODULES:
        folder = lib / "win32" / "lib" if module in ("pywintypes", "win32con") else lib / "win32"
        (folder / f"{module}.py").write_text("")
    assert doctor.broken_libraries("win32") == []
    assert doctor.broken_libraries("linux") == []
