"""`~` in path settings, and folder containment, by each OS's rules (ntpath for Windows, posixpath for
macOS and Linux), decided by the same functions the companion runs."""

from __future__ import annotations

import ntpath
import os
import posixpath
import stat

import pytest

from companion.core.files.paths import is_inside
from companion.core.system.user_paths import expand_path, expand_program
from companion.mcp_tools.ask import command_line


def test_the_program_of_a_command_gets_the_home_folder_on_each_os(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/ada")
    monkeypatch.setenv("USERPROFILE", r"C:\Users\ada")
    command = ["~/.local/bin/gemini", "-m", "~not-a-path"]
    assert expand_program(command, posixpath.expanduser) == ["/home/ada/.local/bin/gemini", "-m", "~not-a-path"]
    assert expand_program(command, ntpath.expanduser) == [r"C:\Users\ada/.local/bin/gemini", "-m", "~not-a-path"]
    assert expand_program(["gemini"], posixpath.expanduser) == ["gemini"]  # found on PATH later
    assert expand_program([]) == []
    assert expand_path("~/venv/bin/python", posixpath.expanduser) == "/home/ada/venv/bin/python"
    assert expand_path("") == ""


@pytest.mark.skipif(os.name == "nt", reason="an executable script without an extension is POSIX")
def test_ask_gemini_finds_a_program_given_under_the_home_folder(tmp_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    home = str(tmp_path)
    os.makedirs(os.path.join(home, "bin"))
    program = os.path.join(home, "bin", "gemini")
    with open(program, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(program, os.stat(program).st_mode | stat.S_IXUSR)
    monkeypatch.setenv("HOME", home)
    assert command_line(["~/bin/gemini"], "hi", "")[0] == program


@pytest.mark.parametrize(
    ("path", "folder", "inside"),
    [
        (r"C:\Proj\src\a.py", r"c:\proj", True),  # Windows ignores case
        (r"C:\proj2\a.py", r"C:\proj", False),  # a longer name is not inside
        (r"\\Server\Share\proj\a.py", r"\\server\share\PROJ", True),  # UNC
        (r"\\?\C:\proj\a.py", r"\\?\c:\proj", True),  # extended-length paths
        (r"D:\proj\a.py", r"C:\proj", False),
        (r"C:\proj", "C:\\proj\\", True),
    ],
)
def test_inside_a_folder_on_windows(path: str, folder: str, inside: bool) -> None:
    assert is_inside(path, folder, ntpath) is inside


@pytest.mark.parametrize(
    ("path", "folder", "inside"),
    [
        ("/Users/ada/proj/a.py", "/Users/ada/proj", True),
        ("/Users/ada/Proj/a.py", "/Users/ada/proj", False),  # a case-sensitive volume may hold both
        ("/srv/proj2/a.py", "/srv/proj", False),
        ("/srv/proj", "/srv/proj/", True),
    ],
)
def test_inside_a_folder_on_macos_and_linux(path: str, folder: str, inside: bool) -> None:
    assert is_inside(path, folder, posixpath) is inside


@pytest.mark.parametrize("platform", ["win32", "linux"])
def test_a_program_is_never_found_in_the_current_folder(
    tmp_path: str, monkeypatch: pytest.MonkeyPatch, platform: str
) -> None:
    """Windows' lookup (and shutil.which there) tries the current folder before PATH: in an untrusted
    clone `node` would be its planted node.exe. The resolver the agents and doctor use takes PATH's."""
    from companion.core.system.user_paths import find_program

    clone, tools = os.path.join(str(tmp_path), "clone"), os.path.join(str(tmp_path), "tools")
    for folder in (clone, tools):
        os.mkdir(folder)
        for name in ("node.EXE", "node"):
            with open(os.path.join(folder, name), "w") as handle:
                handle.write("#!/bin/sh\n")
            os.chmod(os.path.join(folder, name), 0o755)
    monkeypatch.chdir(clone)
    monkeypatch.setenv("PATHEXT", ".COM;.EXE;.BAT;.CMD")
    expected = os.path.join(tools, "node.EXE" if platform == "win32" else "node")
    for path in (tools, os.pathsep.join([os.curdir, tools]), os.pathsep + tools):  # "." and "" mean the clone
        assert find_program("node", path=path, platform=platform) == expected
    assert find_program("node", path=os.curdir, platform=platform) is None
    assert find_program("./node", path=tools, platform=platform) == "./node"  # a folder given: the user's choice
