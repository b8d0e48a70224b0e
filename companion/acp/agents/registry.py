"""The ACP registry (github.com/agentclientprotocol/registry): the agents New Chat offers beside the
`agents` setting. No SDK, no `sublime` here; every function does blocking I/O: call it off the
editor's main thread.

The published `registry.json` is `{"version", "agents": [{id, name, version, description,
distribution: {npx: {package, args, env} | uvx: {…} | binary: {<os>-<arch>: {archive, cmd, args,
env}}}}], "extensions"}` (its FORMAT.md). A trimmed copy ships with the package
(`registry_snapshot.json`, dated); `refreshed` fetches the live one at most once a day into the
editor's cache folder and keeps the last good copy on any failure. The fetch is https only, every
redirect included; `FETCH_TIMEOUT_SECONDS` bounds all of it (connecting, TLS, headers, body: a
server that sends a byte a second is cut off), `MAX_BYTES` its size. The certificates trusted are
the operating system's (macOS keychain, Windows certificate store, the Linux system bundle) through
`truststore`, imported on the fetch, never at start-up; without it, Python's default ones (which
miss a corporate proxy's CA, and on a Mac may be none at all). Registry text shown to the user (ids, names,
versions, descriptions) is made one line, with control characters written as visible escapes.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import pkgutil
import platform
import re
import shutil
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.system.token_files import atomic_write_private

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


# Characters that would hide, reorder or break a line of text as shown (controls, bidi controls, BOM).
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def one_line(text: str) -> str:
    """`text` as the registry's text is shown: one line (every run of white space, line breaks
    included, one space) and every control character a visible escape like `\\x1b`."""
    text = " ".join(text.split())
    return _HIDDEN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > 500:
        raise RegistryRefused(f"{key!r} is not a short string")
    return one_line(value)


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
    if common["name"].casefold() == "you":
        raise RegistryRefused('the name "You" is the chat\'s heading of your own prompts')
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


def fetch(
    url: str = REGISTRY_URL,
    timeout: float = FETCH_TIMEOUT_SECONDS,
    limit: int = MAX_BYTES,
    context: ssl.SSLContext | None = None,
) -> bytes:
    """The registry's bytes; OSError (with what went wrong) on failure: a URL or a redirect that is
    not https, the whole fetch taking more than `timeout` seconds, an answer larger than `limit`.
    `context`: the certificates to trust (default: `trusted_context`'s)."""
    if not _allowed(url):
        raise OSError(f"refusing to fetch the registry from {url!r}: only https")
    trusting = "the given certificates"
    if context is None:
        context, trusting = trusted_context()
    deadline = _Deadline(timeout)
    handlers = (_Redirects(), _HttpsHandler(deadline, context), _HttpHandler(deadline))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers={"User-Agent": "gemini-companion"})
    try:
        with opener.open(request, timeout=timeout) as answer:  # the scheme is checked above
            data = answer.read(limit + 1)
    except (OSError, http.client.HTTPException) as exc:
        if deadline.expired:
            raise OSError(f"the registry did not arrive within {timeout:g} s") from None
        unverified = exc if isinstance(exc, ssl.SSLCertVerificationError) else getattr(exc, "reason", None)
        if isinstance(unverified, ssl.SSLCertVerificationError):
            raise OSError(f"could not verify the registry's certificate with {trusting}: {unverified}") from None
        raise exc if isinstance(exc, OSError) else OSError(f"the registry's answer is broken: {exc!r}") from None
    finally:
        deadline.close()
    if deadline.expired:
        raise OSError(f"the registry did not arrive within {timeout:g} s")
    if len(data) > limit:
        raise OSError(f"the registry is larger than {limit} bytes")
    return data


def trusted_context() -> tuple[ssl.SSLContext, str]:
    """The certificates a fetch trusts, and their name for New Chat's note: the operating system's
    trust store through `truststore` (dependencies.json lists it; imported here, on New Chat's
    fetch, so start-up never loads it), else Python's default certificates."""
    try:
        import truststore
    except ImportError as exc:
        log.info("truststore cannot be imported (%s): the registry is fetched with Python's certificates", exc)
        return ssl.create_default_context(), "Python's certificates (truststore is not installed)"
    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT), "the system's trust store"


def _allowed(url: str) -> bool:
    """https, or plain http to this machine (a test's server)."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost"))


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to https (never down to plain http, where anyone on the way could
    answer with their own registry)."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme != "https":
            fp.close()
            raise OSError(f"refusing the registry's redirect from {req.full_url!r} to {newurl!r}: only https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Deadline:
    """The end of a whole fetch: each connection's socket is shut down when it comes (a socket
    timeout only bounds each read: a server sending a byte a second never trips it)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []  # duplicates: TLS takes over the original's descriptor
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()
        self._end = time.monotonic() + seconds

    def connect(
        self, address: tuple[str, int], timeout: float | None = None, source_address: Any = None
    ) -> socket.socket:
        """socket.create_connection, watched (http.client's `_create_connection`), the host name's
        lookup included (a resolver that hangs, as behind a broken VPN, must not hold New Chat)."""
        sock = self._open(self._resolve(*address), timeout, source_address)
        with self._lock:
            if self.expired:
                sock.close()
                raise OSError("timed out")
            self._sockets.append(sock.dup())
        return sock

    def _left(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise self._timed_out()
        return left

    def _timed_out(self) -> OSError:
        with self._lock:  # the fetch says so, even if the timer has not fired yet
            self.expired = True
        return OSError("timed out")

    def _resolve(self, host: str, port: int) -> list[Any]:
        """socket.getaddrinfo, given only the time left: on a daemon thread of its own, as a lookup
        cannot be interrupted (left behind if the resolver hangs; it ends when the resolver does)."""
        found: list[Any] = []
        done = threading.Event()

        def lookup() -> None:
            try:
                found.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
            except OSError as exc:
                found.append(exc)
            finally:
                done.set()

        threading.Thread(target=lookup, name="gemini-companion-resolve", daemon=True).start()
        if not done.wait(self._left()):
            raise self._timed_out()
        if isinstance(found[0], OSError):
            raise found[0]
        return found[0]

    def _open(self, addresses: list[Any], timeout: float | None, source_address: Any) -> socket.socket:
        """The first address that accepts a connection (socket.create_connection's loop)."""
        error: OSError = OSError("the registry's host name has no address")
        for family, kind, proto, _, sockaddr in addresses:
            left = self._left()
            sock = socket.socket(family, kind, proto)
            try:
                given = timeout if isinstance(timeout, (int, float)) and timeout > 0 else left
                sock.settimeout(min(given, left))
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
        raise error

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once
                except OSError:
                    pass

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline, context: ssl.SSLContext | None) -> None:
        super().__init__(context=context)
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        deadline = self._deadline

        class Connection(http.client.HTTPSConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._create_connection = deadline.connect

        return self.do_open(Connection, req, context=self._context)  # type: ignore[attr-defined]


class _HttpHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        deadline = self._deadline

        class Connection(http.client.HTTPConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._create_connection = deadline.connect

        return self.do_open(Connection, req)


def agents(folder: str, allow_fetch: bool, url: str = REGISTRY_URL, now: float | None = None) -> list[RegistryAgent]:
    """The registry's agents for New Chat: refreshed from `url` when allowed and due (at most
    daily), else the last fetched copy, else the shipped snapshot. A failed fetch only logs."""
    return listing(folder, allow_fetch, url, now)[0]


def listing(
    folder: str, allow_fetch: bool, url: str = REGISTRY_URL, now: float | None = None
) -> tuple[list[RegistryAgent], str]:
    """`agents`, and when they are the shipped snapshot, one line saying so and why ("" otherwise)."""
    why = ""
    if allow_fetch and due(folder, now):
        _touch(folder, time.time() if now is None else now)
        try:
            data = fetch(url)
            found = parse(data)
            _save(folder, data)
            return found, ""
        except (OSError, RegistryRefused, ValueError) as exc:
            why = one_line(str(exc))[:300]
            log.warning("Gemini Companion: the ACP registry could not be refreshed (%s); using the last copy", why)
            _touch(folder, time.time() if now is None else now, why)
    found = cached(folder)
    if found is not None:
        return found, ""
    if not allow_fetch:
        why = 'the setting "acp_registry_fetch" is false'
    elif not why:
        why = _last_failure(folder) or "the fetched copy is missing or unreadable"
    agents, date = snapshot()
    return agents, f"the list shipped with the package ({date}): {why}"


def _last_failure(folder: str) -> str:
    try:
        with open(os.path.join(folder, STAMP_NAME), encoding="utf-8", errors="replace") as handle:
            return one_line(handle.read(1000))
    except OSError:
        return ""


def _touch(folder: str, now: float, failure: str = "") -> None:
    """The stamp of an attempt at `now`, holding why it failed (New Chat says it the next day too)."""
    stamp = os.path.join(folder, STAMP_NAME)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(stamp, "w", encoding="utf-8") as handle:
            handle.write(failure)
        os.utime(stamp, (now, now))
    except OSError as exc:
        log.debug("ACP registry stamp not written: %s", exc)


def _save(folder: str, data: bytes) -> None:
    """Written whole or not at all (a temporary file renamed over the old copy)."""
    try:
        atomic_write_private(os.path.join(folder, CACHE_NAME), data)
    except OSError as exc:
        log.debug("ACP registry not cached: %s", exc)
