"""Two agents of the official ACP registry, besides Gemini CLI and Claude, run offline for the chat tests.

Chosen because they install from npm (the only registries reachable here are npm, PyPI and Debian's)
and take an OpenAI-compatible model API, served by `OpenAIStandIn`:

- Qwen Code (registry id `qwen-code`, npx `@qwen-code/qwen-code --acp`), pinned in
  `tests/conformance/qwen_code` at 0.15.10, the newest stored release whose engines accept Node 20
  (later ones ask for Node 22). Model: `OPENAI_BASE_URL`/`OPENAI_API_KEY`/`OPENAI_MODEL` with the
  `openai` auth type selected in its settings. It advertises modes `plan`, `default` (asks),
  `auto-edit`, `yolo`, starts in `tools.approvalMode` (default `default`), reads and writes through
  the client's `fs/*`. It cannot reach any model on Node 24 (its bundled undici `Agent`, passed to
  Node's own fetch as the dispatcher, fails every request: "Connection error. (cause: fetch failed)";
  the same install on Node 20 in the same Debian root answers), so on Node >= 24 its chats are
  skipped with that reason (`RegistryAgent.cannot_run_here`).
- opencode (registry id `opencode`), pinned in `tests/conformance/opencode` at 1.18.33 as the npm
  package `opencode-ai`, whose native binary comes as an optional dependency (`npm ci
  --ignore-scripts` installs it; the skipped postinstall would only copy it). Model: a custom
  provider (`@ai-sdk/openai-compatible`, bundled in the binary) in `OPENCODE_CONFIG_CONTENT`. It
  advertises no `modes`, only a `mode` config option (`build`, `plan`); out of the box `build` edits
  without asking, and it asks (`session/request_permission`) only with `permission.edit = "ask"` in
  its config.

The rest of what makes them run offline: a scratch HOME and TMPDIR, no update checks, no telemetry,
no models catalogue or plugin download (opencode's `OPENCODE_DISABLE_*`).

A third, whose every edit goes through one patch tool that can touch several files (`CODEX`, a
`PatchAgent`): Codex through Zed's adapter (registry id `codex-acp`, npx `@zed-industries/codex-acp`),
pinned in `tests/conformance/codex` at 0.16.0, whose native binary (about 223 MB installed) comes as
an optional dependency. Codex speaks only the Responses API, served by `ResponsesStandIn`
(tests/conformance/responses_standin.py). Its offline configuration, a `config.toml` in a scratch
CODEX_HOME (see `_codex_env` for why each line is there): a `model_providers` entry with
`wire_api = "responses"` at the stand-in, the key in an env var; the model id of its own catalogue
(`gpt-5.2-codex`), since only for models it knows does it offer `apply_patch` (a freeform tool whose
input is the patch text); `approval_policy = "untrusted"`, so it asks before every edit; and
`sandbox_mode = "danger-full-access"`, because its other sandboxes need bubblewrap on Linux
(without it every patch fails before any question: "bubblewrap is unavailable").
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.conformance.openai_standin import API_KEY, MODEL, ToolCall, tool_call

HERE = os.path.dirname(os.path.abspath(__file__))
QWEN_FOLDER = os.path.join(HERE, "qwen_code")
OPENCODE_FOLDER = os.path.join(HERE, "opencode")
CODEX_FOLDER = os.path.join(HERE, "codex")
CODEX_MODEL = "gpt-5.2-codex"  # a model of Codex's own catalogue: it offers `apply_patch` only to those


def _missing(path: str, folder: str, what: str) -> AssertionError:
    return AssertionError(
        f"{path} is missing: run `python3 dev.py test`, which installs the pinned {what} with `npm ci` in {folder}."
    )


@functools.cache  # one `node --version` per test session, not per chat
def node_major() -> int | None:
    """The major version of the `node` on PATH (what npm's `.bin` shims run), or None without one."""
    node = shutil.which("node")
    if node is None:
        return None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    return int(version.strip().lstrip("v").split(".")[0]) if version.startswith("v") else None


def qwen_program() -> str:
    name = "qwen.cmd" if sys.platform == "win32" else "qwen"
    path = os.path.join(QWEN_FOLDER, "node_modules", ".bin", name)
    if not os.path.exists(path):
        raise _missing(path, QWEN_FOLDER, "Qwen Code")
    return path


def opencode_program() -> str:
    """The native binary npm installed for this platform (package `opencode-<os>-<arch>`)."""
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(sys.platform)
    name = "opencode.exe" if sys.platform == "win32" else "opencode"
    path = os.path.join(OPENCODE_FOLDER, "node_modules", f"opencode-{system}-{machine}", "bin", name)
    if not os.path.isfile(path):
        raise _missing(path, OPENCODE_FOLDER, "opencode")
    return path


def _native(folder: str, package: str, name: str) -> str:
    """The native binary npm installed for this platform as the optional dependency `package-<os>-<arch>`."""
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    name = f"{name}.exe" if sys.platform == "win32" else name
    path = os.path.join(folder, "node_modules", f"{package}-{system}-{machine}", "bin", name)
    if not os.path.isfile(path):
        raise _missing(path, folder, package)
    return path


def codex_acp_program() -> str:
    return _native(CODEX_FOLDER, "@zed-industries/codex-acp", "codex-acp")


@dataclass(frozen=True)
class RegistryAgent:
    """One registry agent: how to start it against a model at `base_url`, and its tools' vocabulary
    (what its model calls to read, write and edit a file)."""

    name: str
    program: Callable[[], str]
    args: tuple[str, ...]
    configure: Callable[[str, str, dict[str, Any]], dict[str, str]]  # (home, base_url, options) -> env
    read_tool: tuple[str, str]  # (tool, path key)
    write_tool: tuple[str, str, str]  # (tool, path key, content key)
    edit_tool: tuple[str, str, str, str]  # (tool, path key, old key, new key)
    fails_from_node: int | None = None  # the first Node major on which it cannot reach a model (seen)

    def cannot_run_here(self) -> str | None:
        """Why this agent cannot run with this machine's Node, or None when it can."""
        major = node_major()
        if self.fails_from_node is None or major is None or major < self.fails_from_node:
            return None
        return (f"{self.name} cannot reach a model on Node {major} (seen from Node {self.fails_from_node}): "
                "its bundled undici fails every model request ('Connection error. (cause: fetch failed)')")  # fmt: skip

    def command(self) -> list[str]:
        return [self.program(), *self.args]

    def read(self, path: str) -> ToolCall:
        name, path_key = self.read_tool
        return tool_call(name, **{path_key: path})

    def write(self, path: str, content: str) -> ToolCall:
        name, path_key, content_key = self.write_tool
        return tool_call(name, **{path_key: path, content_key: content})

    def edit(self, path: str, old: str, new: str) -> ToolCall:
        name, path_key, old_key, new_key = self.edit_tool
        return tool_call(name, **{path_key: path, old_key: old, new_key: new})


def _qwen_env(home: str, base_url: str, options: dict[str, Any]) -> dict[str, str]:
    """`options["approval_mode"]`: the user's `tools.approvalMode` (the mode it starts in)."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "openai"}},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
    }
    if "approval_mode" in options:
        settings["tools"] = {"approvalMode": options["approval_mode"]}
    folder = os.path.join(home, ".qwen")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "settings.json"), "w", encoding="utf-8") as handle:
        json.dump(settings, handle)
    return {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": API_KEY, "OPENAI_MODEL": MODEL}


def _opencode_env(home: str, base_url: str, options: dict[str, Any]) -> dict[str, str]:
    """`options["permission"]`: opencode's `permission` config (e.g. `{"edit": "ask"}`)."""
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Stand-in",
        "options": {"baseURL": base_url, "apiKey": API_KEY},
        "models": {MODEL: {"name": MODEL}},
    }
    config: dict[str, Any] = {"provider": {"standin": provider}, "model": f"standin/{MODEL}", "autoupdate": False}
    if "permission" in options:
        config["permission"] = options["permission"]
    env = {"OPENCODE_CONFIG_CONTENT": json.dumps(config)}
    for switch in ("AUTOUPDATE", "MODELS_FETCH", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE"):
        env[f"OPENCODE_DISABLE_{switch}"] = "1"
    return env


QWEN = RegistryAgent(
    name="qwen",
    program=qwen_program,
    args=("--acp",),
    configure=_qwen_env,
    read_tool=("read_file", "file_path"),
    write_tool=("write_file", "file_path", "content"),
    edit_tool=("edit", "file_path", "old_string", "new_string"),
    fails_from_node=24,
)
OPENCODE = RegistryAgent(
    name="opencode",
    program=opencode_program,
    args=("acp",),
    configure=_opencode_env,
    read_tool=("read", "filePath"),
    write_tool=("write", "filePath", "content"),
    edit_tool=("edit", "filePath", "oldString", "newString"),
)
REGISTRY_AGENTS = {agent.name: agent for agent in (QWEN, OPENCODE)}


@dataclass(frozen=True)
class Update:
    """One file of a patch: replace the lines `old` (read as the model saw them) by `new`, with the
    unchanged lines around them as context (each a list of lines without their line breaks)."""

    path: str
    before: tuple[str, ...]
    old: tuple[str, ...]
    new: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True)
class PatchAgent:
    """A registry agent whose model edits only through one patch tool touching any number of files."""

    name: str
    program: Callable[[], str]
    args: tuple[str, ...]
    configure: Callable[[str, str, dict[str, Any]], dict[str, str]]  # (home, base_url, options) -> env
    patch_tool: str

    def command(self) -> list[str]:
        return [self.program(), *self.args]

    def patch(self, *updates: Update) -> ToolCall:
        """One call of the patch tool updating every file of `updates` (Codex's patch format)."""
        lines = ["*** Begin Patch"]
        for update in updates:
            lines += [f"*** Update File: {update.path}", "@@"]
            lines += [f" {line}" for line in update.before]
            lines += [f"-{line}" for line in update.old] + [f"+{line}" for line in update.new]
            lines += [f" {line}" for line in update.after]
        lines.append("*** End Patch")
        return tool_call(self.patch_tool, input="\n".join(lines) + "\n")


def _toml(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def _codex_env(home: str, base_url: str, options: dict[str, Any]) -> dict[str, str]:
    """A scratch CODEX_HOME whose config.toml points Codex at the stand-in (module docstring)."""
    folder = os.path.join(home, ".codex")
    os.makedirs(folder, exist_ok=True)
    config = "\n".join([
        f"model = {_toml(CODEX_MODEL)}",
        'model_provider = "standin"',
        'approval_policy = "untrusted"',  # asks before every edit (and every command not known safe)
        'sandbox_mode = "danger-full-access"',  # its sandboxes need bubblewrap, absent here
        "check_for_update_on_startup = false",
        "[analytics]",
        "enabled = false",
        "[model_providers.standin]",
        'name = "Stand-in"',
        f"base_url = {_toml(base_url)}",
        'env_key = "STANDIN_API_KEY"',
        'wire_api = "responses"',
        "",
    ])  # fmt: skip
    with open(os.path.join(folder, "config.toml"), "w", encoding="utf-8") as handle:
        handle.write(config)
    return {"CODEX_HOME": folder, "STANDIN_API_KEY": API_KEY}


CODEX = PatchAgent(name="codex", program=codex_acp_program, args=(), configure=_codex_env, patch_tool="apply_patch")
