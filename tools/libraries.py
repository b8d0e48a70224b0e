"""The facts behind `dependencies.json` and `repository.json`, shared by the tools and their tests.

Package Control installs "libraries" (wheels) into `Data/Lib/python314` by name only: no version
pins, no transitive resolution, and only libraries some channel or repository registers. So the
package lists its whole run-time import closure itself, and our `repository.json` registers, pinned
to exact wheel files, every library of that closure the default channel lacks or gets wrong.

Run-time closure = the `Requires-Dist` closure of the distributions our code imports, for Python
3.14 on each platform, minus the distributions the window server's start-up never imports
(NOT_IMPORTED). tests/packaging proves both halves by measurement, not by reading code: an import
trace of the real start-up path and the first chat, run as each platform's plugin host
(tests/packaging/simulated_host.py), loads exactly the libraries `dependencies.json` gives that
platform but LATER (imported on a later path, which test_closure.py runs and traces), and
NOT_IMPORTED is exactly what the metadata closure holds beyond that trace and LATER.

What Package Control 4 does with these files (which entries it accepts, skips or rejects, how it
picks and installs wheels, and in which order relative to loading the package) is written down, with
file references, in packaging/README.md; tools/check_repository.py enforces those rules.

`dependencies.json` is read the way Package Control 4 reads it (wbond/package_control,
`package_manager.py` `select_libraries` and `selectors.py`): of the platform keys, only the most
specific one that matches is used — `<platform>-<arch>`, then `<platform>`, then `*` — and within
it the first Sublime Text version selector that matches, in reverse-sorted order. Keys are never
merged, so the `windows` entry repeats the whole list plus pywin32.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPENDENCIES_JSON = os.path.join(ROOT, "dependencies.json")
REPOSITORY_JSON = os.path.join(ROOT, "repository.json")
RUNTIME_PINS = os.path.join(ROOT, "requirements", "runtime.txt")

PACKAGE_NAME = "Gemini Companion"
MIN_BUILD = 4205
PYTHON = "3.14"
PLATFORMS = ("linux-x64", "linux-arm64", "osx-arm64", "osx-x64", "windows-x64")

# Distributions our own code imports (companion/, plugin.py; the bridge runs outside Sublime).
# agent-client-protocol is the ACP chat's SDK: imported on the first chat, never at start-up.
ROOTS = (
    "mcp",
    "mcp-types",
    "uvicorn",
    "wsproto",
    "starlette",
    "pydantic",
    "psutil",
    "agent-client-protocol",
    "truststore",
)

# Listed in dependencies.json, but imported on a path after start-up and the first chat, with that
# path. The simulated hosts do not take it (truststore loads the macOS Security framework and
# Windows' crypt32 when imported, which a simulated OS cannot); tests/packaging/test_closure.py does,
# natively, and proves the start-up never imports them.
LATER = {
    "truststore": "companion.acp.agents.registry imports it on New Chat's registry fetch (the OS trust store)",
}

# In the metadata closure of ROOTS, but never imported by the plugin host on any code path of ours.
NOT_IMPORTED = {
    "jsonschema": "mcp.client.session validates tool output schemas with it; the server never does",
    "jsonschema-specifications": "only jsonschema uses it",
    "referencing": "only jsonschema uses it",
    "rpds-py": "only referencing uses it",
    "attrs": "only jsonschema and referencing use it",
    "pyjwt": "mcp.client.auth extensions only (client side)",
    "httpcore2": "httpx2 imports it lazily, when a request is sent; the server sends none",
    "pycparser": "cffi needs it only to compile C declarations; cryptography ships them compiled",
}

# Libraries of the closure the default channel (packagecontrol/channel) registers correctly for
# Python 3.14 on all five platforms; our repository leaves them to it.
CHANNEL_LIBRARIES = ("annotated-types", "anyio", "cffi", "idna", "typing-extensions", "typing-inspection")

# Libraries the default channel has, but which our repository registers anyway (a repository the
# user adds takes precedence over channels for the same library name).
OVERRIDES = {
    "psutil": "the channel's template picks the free-threaded cp314t wheel for 3.14, which a normal "
    "3.14 cannot import, and has no linux-arm64 entry; we pin the cp3x-abi3 wheels",
    "pydantic": "pydantic requires one exact pydantic-core; the channel floats both independently",
    "pydantic-core": "pinned together with pydantic",
    "pywin32": "Windows only (mcp imports it at import time there); the channel's PyPI template takes whatever "
    "version is newest, we pin the one the simulated Windows host is tested with",
}

# Platforms that need another version than our pin, with the reason.
PLATFORM_VERSIONS = {
    ("cryptography", "osx-x64"): (
        "48.0.1",
        "cryptography 49 and newer ship no Intel-Mac wheel; 48.0.1 is the newest with one "
        "(universal2, abi3). mcp imports cryptography at module level (mcp.server.request_state).",
    ),
}

# The platform tags each Package Control platform accepts, best first, as pip is given them
# (`pip download --platform ...`): the lowest glibc/macOS the wheels need, so the widest reach.
PLATFORM_TAGS = {
    "linux-x64": (
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
        "manylinux_2_12_x86_64",
        "manylinux2010_x86_64",
        "manylinux_2_5_x86_64",
        "manylinux1_x86_64",
    ),
    "linux-arm64": ("manylinux_2_17_aarch64", "manylinux2014_aarch64"),
    "osx-arm64": ("macosx_11_0_arm64", "macosx_11_0_universal2", "macosx_10_9_universal2"),
    "osx-x64": tuple(
        f"macosx_10_{minor}_{arch}" for minor in range(15, 8, -1) for arch in ("x86_64", "intel", "universal2")
    ),
    "windows-x64": ("win_amd64",),
}

# Environment markers of Sublime's 3.14 plugin host on each platform.
_MARKERS = {
    "linux-x64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "x86_64",
    },
    "linux-arm64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "aarch64",
    },
    "osx-arm64": {
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "os_name": "posix",
        "platform_machine": "arm64",
    },
    "osx-x64": {
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "os_name": "posix",
        "platform_machine": "x86_64",
    },
    "windows-x64": {
        "sys_platform": "win32",
        "platform_system": "Windows",
        "os_name": "nt",
        "platform_machine": "AMD64",
    },
}

PYPI_JSON = "https://pypi.org/pypi/{name}/json"
FILES_HOST = "https://files.pythonhosted.org/packages/"


def canonical(name: str) -> str:
    """PEP 503 normalised name: `PyJWT`, `pydantic_core` -> `pyjwt`, `pydantic-core`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def marker_environment(platform: str) -> dict[str, str]:
    return {
        "python_version": PYTHON,
        "python_full_version": f"{PYTHON}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_version": "",
        "implementation_version": f"{PYTHON}.0",
        "extra": "",
        **_MARKERS[platform],
    }


# -- the files in the repository --


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def selectors(platform: str) -> tuple[str, str, str]:
    """Package Control's platform selectors for one of PLATFORMS, most specific first
    (`sublime.platform() + "-" + sublime.arch()`, `sublime.platform()`, `"*"`)."""
    return (platform, platform.split("-", 1)[0], "*")


def dependencies(platform: str, path: str = DEPENDENCIES_JSON) -> list[str]:
    """The library names Package Control installs on `platform` from `dependencies.json`."""
    data = read_json(path)
    data.pop("$schema", None)
    known = {s for p in PLATFORMS for s in selectors(p)}
    for key, versions in data.items():
        if key not in known or list(versions) != [f">={MIN_BUILD}"]:
            raise ValueError(
                f'{path}: every entry must be "<selector>": {{">={MIN_BUILD}": [...]}}, the selector one of '
                f"{sorted(known)}; got {key!r}: {list(versions)}"
            )
    key = next((s for s in selectors(platform) if s in data), None)
    return list(data[key][f">={MIN_BUILD}"]) if key else []


def all_dependencies(path: str = DEPENDENCIES_JSON) -> list[str]:
    """Every library some platform installs, in first-seen order."""
    names: dict[str, None] = {}
    for platform in PLATFORMS:
        names.update(dict.fromkeys(dependencies(platform, path)))
    return list(names)


def platforms_of(name: str, path: str = DEPENDENCIES_JSON) -> list[str]:
    """The platforms whose Package Control installs `name`."""
    return [p for p in PLATFORMS if canonical(name) in {canonical(n) for n in dependencies(p, path)}]


def current_platform() -> str:
    """This machine as one of PLATFORMS (what Package Control would call it)."""
    import platform as platform_module
    import sys

    machine = platform_module.machine().lower()
    arch = "arm64" if machine in ("arm64", "aarch64") else "x64"
    system = {"linux": "linux", "darwin": "osx", "win32": "windows"}.get(sys.platform, sys.platform)
    return f"{system}-{arch}"


def runtime_pins(path: str = RUNTIME_PINS) -> dict[str, str]:
    """canonical name -> exact version, from requirements/runtime.txt (environment markers dropped:
    pywin32 is pinned for Windows only, and only `dependencies.json`'s windows entry names it)."""
    pins: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].split(";", 1)[0].strip()
            if not line:
                continue
            name, sep, version = line.partition("==")
            if not sep:
                raise ValueError(f"{path}: {line!r} is not pinned with ==")
            pins[canonical(name)] = version.strip()
    return pins


def version_for(name: str, platform: str, pins: dict[str, str] | None = None) -> str:
    override = PLATFORM_VERSIONS.get((canonical(name), platform))
    if override:
        return override[0]
    return (pins or runtime_pins())[canonical(name)]


def registered_libraries(names: Iterable[str]) -> list[str]:
    """The libraries of the closure our repository.json must register."""
    return [n for n in names if canonical(n) not in CHANNEL_LIBRARIES]


# -- the closure, from installed metadata --


def metadata_closure(platform: str, requires: Callable[[str], list[str] | None] | None = None) -> set[str]:
    """Canonical names of ROOTS and everything they require on `platform` for 3.14, following
    requested extras (mcp needs `pyjwt[crypto]`, which is how cryptography and cffi come in).

    A distribution required only under an environment marker (pywin32: `sys_platform == "win32"`)
    and not installed here is taken as a leaf: pywin32 311 declares no Requires-Dist. Any other
    missing metadata is an error."""
    import importlib.metadata

    from packaging.requirements import Requirement

    get = requires or importlib.metadata.requires
    seen: set[tuple[str, str]] = set()
    names: set[str] = set()
    conditional: set[str] = set()  # reached only through a requirement with a marker
    todo: list[tuple[str, str]] = [(canonical(r), "") for r in ROOTS]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        names.add(name)
        try:
            texts = get(name) or []
        except importlib.metadata.PackageNotFoundError:
            if name in conditional:
                continue
            raise
        for text in texts:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({**marker_environment(platform), "extra": extra}):
                continue
            if req.marker is None and extra:
                continue  # already followed without the extra
            if req.marker is not None:
                conditional.add(canonical(req.name))
            todo.append((canonical(req.name), ""))
            todo += [(canonical(req.name), e) for e in req.extras]
    return names


def runtime_closure(platform: str, requires: Callable[[str], list[str] | None] | None = None) -> set[str]:
    """Everything Package Control must install on `platform`: what start-up, the first chat and LATER import."""
    return metadata_closure(platform, requires) - {canonical(n) for n in NOT_IMPORTED}


# -- wheels --


def compatible_tags(platform: str) -> list[Any]:
    """packaging Tags a CPython 3.14 (GIL build) on `platform` accepts, best first (pip's order)."""
    from packaging import tags

    version = (3, 14)
    platforms = list(PLATFORM_TAGS[platform])
    return list(tags.cpython_tags(version, ["cp314"], platforms)) + list(
        tags.compatible_tags(version, "cp314", platforms)
    )


def select_wheel(files: list[dict[str, Any]], platform: str) -> dict[str, Any] | None:
    """The wheel pip would pick for `platform` among a release's PyPI file entries, or None."""
    from packaging.utils import parse_wheel_filename

    ranking = {tag: i for i, tag in enumerate(compatible_tags(platform))}
    best: tuple[int, dict[str, Any]] | None = None
    for entry in files:
        if not entry["filename"].endswith(".whl") or entry.get("yanked"):
            continue
        _, _, _, file_tags = parse_wheel_filename(entry["filename"])
        ranks = [ranking[t] for t in file_tags if t in ranking]
        if ranks and (best is None or min(ranks) < best[0]):
            best = (min(ranks), entry)
    return best[1] if best else None


def file_url(entry: dict[str, Any]) -> str:
    """The canonical files.pythonhosted.org address of a PyPI file entry (from its blake2b digest)."""
    digest = entry["digests"]["blake2b_256"]
    return f"{FILES_HOST}{digest[:2]}/{digest[2:4]}/{digest[4:]}/{entry['filename']}"


# -- PyPI --


class Unreachable(Exception):
    """PyPI cannot be reached from here (no network, DNS, proxy): a reason to skip, not a failure."""


def http(url: str, method: str = "GET", headers: dict[str, str] | None = None, timeout: float = 30) -> Any:
    request = urllib.request.Request(
        url, method=method, headers={"User-Agent": "gemini-companion-tools", **(headers or {})}
    )
    return urllib.request.urlopen(request, timeout=timeout)


def check_reachable(timeout: float = 15) -> None:
    """Raise Unreachable with the reason when PyPI's JSON API and file host cannot be reached."""
    for url in ("https://pypi.org/pypi/pip/json", FILES_HOST):
        try:
            with http(url, "HEAD", timeout=timeout):
                pass
        except urllib.error.HTTPError:
            continue  # an HTTP answer: the host is reachable
        except (urllib.error.URLError, OSError) as exc:
            raise Unreachable(f"{url} is unreachable: {getattr(exc, 'reason', exc)}") from exc


def pypi_releases(name: str) -> dict[str, list[dict[str, Any]]]:
    """version -> file entries, from PyPI's JSON API (the per-version endpoint is not used: some
    mirrors lack it)."""
    with http(PYPI_JSON.format(name=name)) as response:
        return json.load(response)["releases"]


def remote_wheel_metadata(url: str) -> str:
    """The METADATA file of a remote wheel, read with HTTP range requests (no full download)."""
    import zipfile

    with zipfile.ZipFile(_RangeFile(url)) as wheel:
        names = [n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            raise ValueError(f"{url}: expected one .dist-info/METADATA, found {names}")
        return wheel.read(names[0]).decode("utf-8")


class _RangeFile:
    """A read-only, seekable file over HTTP range requests, enough for zipfile."""

    CHUNK = 1 << 16

    def __init__(self, url: str) -> None:
        self.url = url
        with http(url, "HEAD") as response:
            self.size = int(response.headers["Content-Length"])
        self.pos = 0
        self._cache: dict[int, bytes] = {}

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def _chunk(self, index: int) -> bytes:
        if index not in self._cache:
            start = index * self.CHUNK
            end = min(self.size, start + self.CHUNK) - 1
            with http(self.url, headers={"Range": f"bytes={start}-{end}"}) as response:
                data = response.read()
            if len(data) != end - start + 1:
                raise OSError(f"{self.url}: range {start}-{end} answered {len(data)} bytes")
            self._cache[index] = data
        return self._cache[index]

    def read(self, n: int = -1) -> bytes:
        end = self.size if n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            index, offset = divmod(self.pos, self.CHUNK)
            piece = self._chunk(index)[offset : offset + end - self.pos]
            out += piece
            self.pos += len(piece)
        return bytes(out)
