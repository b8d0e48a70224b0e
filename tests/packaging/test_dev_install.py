"""tools/dev_install.py against a temporary Sublime data folder, for this machine's platform."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.packaging.conftest import REPO, isolated
from tools import dev_install
from tools import libraries as L

TOOL = os.path.join(REPO, "tools", "dev_install.py")


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        try:
            L.check_reachable()
        except L.Unreachable as exc:
            pytest.skip(f"dev_install could not download and PyPI is unreachable: {exc}")
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def dist_infos(lib: str) -> dict[str, str]:
    out = {}
    for name in os.listdir(lib):
        if name.endswith(".dist-info"):
            dist, version = name[: -len(".dist-info")].rsplit("-", 1)
            assert L.canonical(dist) not in out, f"two copies of {dist}"
            out[L.canonical(dist)] = version
    return out


def test_installs_the_exact_set_pinned_in_repository_json_and_links_the_package(tmp_path: str) -> None:
    data = os.path.join(str(tmp_path), "Sublime Text")
    platform = dev_install.current_platform()
    lib = os.path.join(data, "Lib", "python314")
    os.makedirs(lib)
    # An older mcp left from before: replaced, with its files, not kept beside the new one.
    old = os.path.join(lib, "mcp-2.2.0.dist-info")
    os.makedirs(os.path.join(lib, "mcp", "gone"))
    os.makedirs(old)
    with open(os.path.join(lib, "mcp", "gone", "old.py"), "w") as handle:
        handle.write("")
    with open(os.path.join(old, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\nName: mcp\nVersion: 2.2.0\n")
    with open(os.path.join(old, "RECORD"), "w") as handle:
        handle.write("mcp/gone/old.py,,\nmcp-2.2.0.dist-info/METADATA,,\n")

    result = run_tool("--data", data, "--platform", platform)

    pins = L.runtime_pins()
    assert dist_infos(lib) == {L.canonical(n): L.version_for(n, platform, pins) for n in L.dependencies(platform)}
    assert not os.path.exists(os.path.join(lib, "mcp", "gone"))
    for name in os.listdir(lib):
        if name.endswith(".dist-info"):
            with open(os.path.join(lib, name, "INSTALLER")) as handle:
                assert handle.read().strip() != "Package Control"  # so Package Control leaves them alone
    # The same wheels a user gets from our repository.json on this platform.
    chosen = {line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("installed ")}
    repo = L.read_json(L.REPOSITORY_JSON)
    pinned = {
        r["url"].rsplit("/", 1)[1] for lib_ in repo["libraries"] for r in lib_["releases"] if platform in r["platforms"]
    }
    assert pinned <= chosen and len(chosen) == len(L.dependencies(platform))
    link = os.path.join(data, "Packages", L.PACKAGE_NAME)
    assert os.path.samefile(link, REPO) and os.path.isfile(os.path.join(link, "plugin.py"))

    # Again: nothing duplicated, the link kept.
    run_tool("--data", data, "--platform", platform)
    assert len(dist_infos(lib)) == len(L.dependencies(platform))
    assert os.path.samefile(link, REPO)


@pytest.mark.parametrize(("platform", "compiled"), [("windows-x64", ".cp314-win_amd64.pyd"), ("osx-x64", "-darwin.so")])
def test_installs_another_platforms_set_for_a_contributor_on_that_platform(
    tmp_path: str, platform: str, compiled: str
) -> None:
    """--platform picks that platform's wheels: those of repository.json, at that platform's versions
    (cryptography 48.0.1 on Intel Macs), with that platform's compiled modules."""
    data = os.path.join(str(tmp_path), "Sublime Text")
    result = run_tool("--data", data, "--platform", platform)
    lib = os.path.join(data, "Lib", "python314")
    pins = L.runtime_pins()
    assert dist_infos(lib) == {L.canonical(n): L.version_for(n, platform, pins) for n in L.dependencies(platform)}
    chosen = {line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("installed ")}
    repo = L.read_json(L.REPOSITORY_JSON)
    pinned = {
        r["url"].rsplit("/", 1)[1] for lib_ in repo["libraries"] for r in lib_["releases"] if platform in r["platforms"]
    }
    assert pinned <= chosen and len(chosen) == len(L.dependencies(platform))
    core = os.listdir(os.path.join(lib, "pydantic_core"))
    assert any(name.startswith("_pydantic_core") and name.endswith(compiled) for name in core), core


def test_an_unpacked_set_imports_the_server_stack(tmp_path: str) -> None:
    """Unpacked for this interpreter (the host's 3.14 is not here), the folder alone imports the stack."""
    data = os.path.join(str(tmp_path), "data")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    run_tool("--data", data, "--python-version", version)
    lib = os.path.join(data, "Lib", f"python{version.replace('.', '')}")
    code = (
        "import mcp.server.lowlevel, uvicorn, starlette, pydantic_core, cryptography.hazmat.primitives.ciphers.aead, "
        "psutil; from companion.gemini_ide import server; print('ok', psutil.pid_exists(1) in (True, False))"
    )
    proc = subprocess.run(isolated([lib, REPO], code), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok True", proc.stderr


def test_an_existing_other_package_folder_is_not_replaced_without_force(tmp_path: str) -> None:
    data = os.path.join(str(tmp_path), "data")
    other = os.path.join(data, "Packages", L.PACKAGE_NAME)
    os.makedirs(other)
    with pytest.raises(SystemExit, match="--force"):
        dev_install.link_package(data, force=False)
    assert os.path.isdir(other) and not os.path.islink(other)
    dev_install.link_package(data, force=True)
    assert os.path.samefile(other, REPO)
