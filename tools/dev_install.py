#!/usr/bin/env python3
"""Try your working copy in a real Sublime Text in one step.

    python3 tools/dev_install.py --data "<Sublime data folder>" [--platform linux-x64] [--force]

1. Downloads the exact library set the package needs (dependencies.json at the versions of
   requirements/runtime.txt; cryptography 48.0.1 on Intel Macs) as wheels for Python 3.14 on the
   platform (`pip download --only-binary=:all: --no-deps --platform ...`), and unpacks them into
   `<data>/Lib/python314`, replacing older copies of the same libraries.
2. Links this folder as `<data>/Packages/Gemini Companion` (a symlink; a junction on Windows).

The Sublime data folder is what Preferences > Browse Packages… opens, one level up: usually
`~/.config/sublime-text` (Linux), `~/Library/Application Support/Sublime Text` (macOS),
`%APPDATA%\\Sublime Text` (Windows). Quit Sublime Text first, start it again afterwards.
Package Control leaves libraries it did not install alone, so it will not replace these.
Needs only a Python with pip (any version: the wheels are chosen for 3.14, not for this Python).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import libraries as L

INSTALLER = "gemini-companion tools/dev_install.py\n"  # not "Package Control": it leaves these alone


current_platform = L.current_platform


def requirements(platform: str) -> list[str]:
    pins = L.runtime_pins()
    return [f"{name}=={L.version_for(name, platform, pins)}" for name in L.dependencies(platform)]


def download(platform: str, python_version: str, folder: str) -> list[str]:
    """The wheels for `platform`, downloaded into `folder`; returns their paths."""
    version = python_version.replace(".", "")
    command = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
        "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
        "--abi", f"cp{version}", "--dest", folder,
    ]  # fmt: skip
    for tag in L.PLATFORM_TAGS[platform]:
        command += ["--platform", tag]
    subprocess.run([*command, *requirements(platform)], check=True)
    return sorted(glob.glob(os.path.join(folder, "*.whl")))


def _dist_key(dist_info_name: str) -> str:
    return L.canonical(dist_info_name[: -len(".dist-info")].rsplit("-", 1)[0])


def remove_installed(lib: str, key: str) -> None:
    """Delete an installed distribution: the files its RECORD lists, folders left empty, its dist-info."""
    for name in os.listdir(lib):
        if not name.endswith(".dist-info") or _dist_key(name) != key:
            continue
        info = os.path.join(lib, name)
        folders: set[str] = set()
        record = os.path.join(info, "RECORD")
        if os.path.isfile(record):
            with open(record, encoding="utf-8") as handle:
                for line in handle:
                    rel = line.rsplit(",", 2)[0].strip().replace("\\", "/")
                    if not rel or rel.startswith("../") or os.path.isabs(rel):
                        continue
                    path = os.path.join(lib, *rel.split("/"))
                    if os.path.isfile(path) or os.path.islink(path):
                        os.unlink(path)
                    parent = os.path.dirname(path)
                    while parent != lib and parent.startswith(lib):
                        folders.add(parent)
                        parent = os.path.dirname(parent)
        for folder in sorted(folders, key=len, reverse=True):  # deepest first
            for cache in ("__pycache__",):
                shutil.rmtree(os.path.join(folder, cache), ignore_errors=True)
            try:
                os.rmdir(folder)
            except OSError:
                pass  # not empty: something else lives there
        shutil.rmtree(info, ignore_errors=True)


def unpack(wheel: str, lib: str) -> str:
    """Install one wheel into `lib` the way Package Control does (files at the top, dist-info kept)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info"))
        remove_installed(lib, _dist_key(info))
        data = info[: -len(".dist-info")] + ".data"
        for name in names:
            if name.endswith("/"):
                continue
            target = name
            if name.startswith(data + "/"):
                parts = name.split("/", 2)
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue  # scripts, headers: not used by a plugin host
                target = parts[2]
            path = os.path.join(lib, *target.split("/"))
            if os.path.commonpath([os.path.abspath(path), os.path.abspath(lib)]) != os.path.abspath(lib):
                raise ValueError(f"{wheel}: {name} points outside the library folder")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with archive.open(name) as source, open(path, "wb") as out:
                shutil.copyfileobj(source, out)
    with open(os.path.join(lib, info, "INSTALLER"), "w", encoding="utf-8") as handle:
        handle.write(INSTALLER)
    return info


def link_package(data: str, force: bool) -> str:
    packages = os.path.join(data, "Packages")
    os.makedirs(packages, exist_ok=True)
    link = os.path.join(packages, L.PACKAGE_NAME)
    if os.path.lexists(link):
        if os.path.exists(link) and os.path.samefile(link, L.ROOT):
            return link
        if not force:
            raise SystemExit(f"{link} exists and is not this working copy; move it away or pass --force.")
        if os.path.islink(link) or not os.path.isdir(link):
            os.unlink(link)
        else:
            try:
                os.rmdir(link)  # an empty folder or a Windows junction
            except OSError:
                shutil.rmtree(link)
    try:
        os.symlink(L.ROOT, link, target_is_directory=True)
    except OSError:
        if sys.platform != "win32":
            raise
        subprocess.run(["cmd", "/c", "mklink", "/J", link, L.ROOT], check=True, capture_output=True)
    return link


def install(data: str, platform: str, python_version: str = L.PYTHON, force: bool = False) -> list[str]:
    tag = python_version.replace(".", "")
    lib = os.path.join(data, "Lib", f"python{tag}")
    os.makedirs(lib, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        wheels = download(platform, python_version, folder)
        names = [os.path.basename(w) for w in wheels]
        for wheel in wheels:
            unpack(wheel, lib)
    link = link_package(data, force)
    for name in names:
        print(f"installed {name}")
    print(f"{len(names)} libraries in {lib}\n{link} -> {L.ROOT}")
    print("Restart Sublime Text (build 4205 or newer) to load the package.")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", required=True, help="the Sublime Text data folder (holds Packages/ and Lib/)")
    parser.add_argument("--platform", choices=L.PLATFORMS, default=current_platform(), help="default: this machine")
    parser.add_argument("--python-version", default=L.PYTHON, help=argparse.SUPPRESS)  # tests: another interpreter
    parser.add_argument("--force", action="store_true", help="replace an existing Packages/Gemini Companion")
    args = parser.parse_args(argv)
    if args.platform not in L.PLATFORMS:
        parser.error(f"unsupported platform {args.platform}; one of {', '.join(L.PLATFORMS)}")
    install(os.path.abspath(args.data), args.platform, args.python_version, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
