"""The ACP registry (github.com/agentclientprotocol/registry): the agents New Chat offers beside the
`agents` setting. No SDK, no `sublime` here; every function does blocking I/O: call it off the
editor's main thread.

The published `registry.json` is `{"version", "agents": [{id, name, version, description,
distribution: {npx: {package, args, env} | uvx: {…} | binary: {<os>-<arch>: {archive, cmd, args,
env}}}}], "extensions"}` (its FORMAT.md). A trimmed copy ships with the package
(`registry_snapshot.json`, dated); `refreshed` fetches the live one at most once a day into the
editor's cache folder, with a timeout and a size cap, and keeps the last good copy on any failure.
"""

from __future__ import annotations

import json
import logging
import os
import pkgutil
import platform
import re
import shutil
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.token_files import atomic_write_private

log = logging.getLogger(__name__)

REGISTRY_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
SNAPSHOT = "registry_snapshot.json"  # beside this module, read with pkgutil (works in a zipped package)
CACHE_NAME = "acp-registry.json"
STAMP_NAME = "acp-registry.checked"  # its mtime: the last fetch attempt, good or bad
REFRESH_SECONDS = 24 * 3600
FETCH_TIMEOUT_SECONDS = 10.0
MAX_BYTES = 2 * 1024 * 1024  # today's registry is ~20 KB
# Packages whose program is not the last part of their name (each package's `bin` on npm).
KNOWN_PROGRAMS = {"@google/gemini-cli": "gemini", "@qwen-code/qwen-code": "qwen"}
_PACKAGE = re.compile(r"^(@[a-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*(@[\w.+-]+)?$")
_PROGRAM = re.compile(r"^[A-Za-z0-9][\w.-]*$")


class RegistryRefused(ValueError):
    """The registry's JSON is not what the format says; the message names what is wrong."""


@dataclass(frozen=True)
class RegistryAgent:
    """One agent of the registry, as this machine would run it."""

    id: str
    name: str
    version: str
    description: str
    kind: str  # npx, uvx, binary
    program: str  # what runs it once installed (looked up on PATH)
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    package: str = ""  # npx/uvx: the package with its version
    archive: str = ""  # binary: the download for this platform

    @property
    def install_command(self) -> str:
        """What the user runs to install it (shown in New Chat, run by "Install in terminal")."""
        argv = self.install_argv
        if argv is not None:
            return " ".join(argv)
        return f"download {self.archive}, unpack it and put {self.program} on PATH"

    @property
    def install_argv(self) -> tuple[str, ...] | None:
        """The install command as a command line, for npx and uvx (a binary is downloaded by hand)."""
        if self.kind == "npx":
            return ("npm", "install", "-g", self.package)
        if self.kind == "uvx":
            return ("uv", "tool", "install", self.package)
        return None

    def installed(self, path: str | None = None) -> bool:
        """Its program is on PATH (`path`: the agent's PATH, default the process's)."""
        return shutil.which(self.program, path=path) is not None


def platform_key() -> str:
    """This machine as the registry names platforms: darwin-aarch64, linux-x86_64, windows-x86_64 …"""
    system = {"darwin": "darwin", "win32": "windows"}.get(sys.platform, "linux")
    machine = platform.machine().lower()
    arch = "aarch64" if machine in ("arm64", "aarch64") else "x86_64"
    return f"{system}-{arch}"


def parse(data: bytes, where: str = "the registry") -> list[RegistryAgent]:
    """The agents runnable here; RegistryRefused for JSON that is not a registry. An entry with a
    bad field is left out (logged), so one broken agent does not hide the others."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RegistryRefused(f"{where} is not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("agents"), list):
        raise RegistryRefused(f'{where} has no "agents" list')
    agents: list[RegistryAgent] = []
    for entry in document["agents"]:
        try:
            found = _agent(entry)
        except (RegistryRefused, KeyError, TypeError, AttributeError) as exc:
            log.info("ACP registry entry %r left out: %s", _id_of(entry), exc)
            continue
        if found is not None:
            agents.append(found)
    return agents


def _id_of(entry: object) -> object:
    return entry.get("id") if isinstance(entry, dict) else entry


def _text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > 500:
        raise RegistryRefused(f"{key!r} is not a short string")
    return value.strip()


def _strings(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RegistryRefused(f"{what} is not a list of strings")
    return tuple(value)


def _env(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise RegistryRefused("env is not a map of strings")
    return dict(value)


def _agent(entry: Any) -> RegistryAgent | None:
    """The entry as this platform runs it: npx first, then uvx, then a binary for this platform."""
    if not isinstance(entry, dict):
        raise RegistryRefused("an agent is not an object")
    common = {k: _text(entry, k) for k in ("id", "name", "version", "description")}
    distribution = entry.get("distribution")
    if not isinstance(distribution, dict):
        raise RegistryRefused("no distribution")
    for kind in ("npx", "uvx"):
        spec = distribution.get(kind)
        if isinstance(spec, dict):
            package = _text(spec, "package")
            if not _PACKAGE.match(package):
                raise RegistryRefused(f"package {package!r} is not a package name")
            name = re.sub(r"(?<=.)@[^/]*$", "", package)
            program = KNOWN_PROGRAMS.get(name, name.rsplit("/", 1)[-1])
            args, env = _strings(spec.get("args"), "args"), _env(spec.get("env"))
            return RegistryAgent(**common, kind=kind, program=program, args=args, env=env, package=package)
    binaries = distribution.get("binary")
    target = binaries.get(platform_key()) if isinstance(binaries, dict) else None
    if not isinstance(target, dict):
        return None  # nothing for this platform
    program = os.path.basename(_text(target, "cmd"))
    program = program[:-4] if program.lower().endswith(".exe") else program
    if not _PROGRAM.match(program):
        raise RegistryRefused(f"cmd {program!r} is not a program name")
    args, env = _strings(target.get("args"), "args"), _env(target.get("env"))
    archive = _text(target, "archive")
    return RegistryAgent(**common, kind="binary", program=program, args=args, env=env, archive=archive)


def snapshot() -> tuple[list[RegistryAgent], str]:
    """The copy shipped with the package, and its date."""
    data = pkgutil.get_data(__package__ or "companion.acp", SNAPSHOT) or b""
    agents = parse(data, "the shipped registry snapshot")
    return agents, str(json.loads(data).get("snapshot", ""))


def cached(folder: str) -> list[RegistryAgent] | None:
    """The last registry fetched into `folder`, None when there is none or it is unreadable."""
    try:
        with open(os.path.join(folder, CACHE_NAME), "rb") as handle:
            return parse(handle.read(MAX_BYTES + 1)[:MAX_BYTES], "the cached registry")
    except (OSError, RegistryRefused) as exc:
        log.debug("no cached ACP registry: %s", exc)
        return None


def due(folder: str, now: float | None = None) -> bool:
    """A day or more since the last attempt (or never, or a stamp from the future: a clock set back)."""
    try:
        checked = os.stat(os.path.join(folder, STAMP_NAME)).st_mtime
    except OSError:
        return True
    age = (time.time() if now is None else now) - checked
    return not 0 <= age < REFRESH_SECONDS


def fetch(url: str = REGISTRY_URL, timeout: float = FETCH_TIMEOUT_SECONDS, limit: int = MAX_BYTES) -> bytes:
    """The registry's bytes; OSError (with what went wrong) on failure, a too large answer included."""
    if not url.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise OSError(f"refusing to fetch the registry from {url!r}: only https")
    request = urllib.request.Request(url, headers={"User-Agent": "gemini-companion"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:  # the scheme is checked above
        data = answer.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"the registry is larger than {limit} bytes")
    return data


def agents(folder: str, allow_fetch: bool, url: str = REGISTRY_URL, now: float | None = None) -> list[RegistryAgent]:
    """The registry's agents for New Chat: refreshed from `url` when allowed and due (at most
    daily), else the last fetched copy, else the shipped snapshot. A failed fetch only logs."""
    if allow_fetch and due(folder, now):
        _touch(folder, time.time() if now is None else now)
        try:
            data = fetch(url)
            found = parse(data)
            _save(folder, data)
            return found
        except (OSError, RegistryRefused, ValueError) as exc:
            log.warning("Gemini Companion: the ACP registry could not be refreshed (%s); using the last copy", exc)
    return cached(folder) or snapshot()[0]


def _touch(folder: str, now: float) -> None:
    stamp = os.path.join(folder, STAMP_NAME)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(stamp, "w", encoding="utf-8"):
            pass
        os.utime(stamp, (now, now))
    except OSError as exc:
        log.debug("ACP registry stamp not written: %s", exc)


def _save(folder: str, data: bytes) -> None:
    """Written whole or not at all (a temporary file renamed over the old copy)."""
    try:
        atomic_write_private(os.path.join(folder, CACHE_NAME), data)
    except OSError as exc:
        log.debug("ACP registry not cached: %s", exc)
