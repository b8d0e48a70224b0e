"""Whether Gemini CLI trusts a folder, read from the CLI's own files the way Gemini CLI 0.61.0 reads them.

Headless Gemini CLI refuses to run in a folder it does not trust: it exits with code 55
(`FatalUntrustedWorkspaceError`, raised by `folderTrustCheck` in bundle/gemini-3HFX2LNT.js of
@google/gemini-cli 0.61.0). The companion never overrides the user's decision (no `--skip-trust`,
no `GEMINI_CLI_TRUST_WORKSPACE`); it says how to trust the folder once in Gemini CLI, and the doctor
shows what these files say. The rules, all in bundle/chunk-JDPZ4CE3.js unless named otherwise:

- `checkPathTrust` (core `utils/trust.js`): `GEMINI_RESTRICTED_MODE=true` or
  `GEMINI_CLI_TRUST_WORKSPACE=false` means not trusted, `GEMINI_CLI_TRUST_WORKSPACE=true` trusted;
  then, with folder trust off, trusted; then the rules of trustedFolders.json.
- `isFolderTrustEnabled` (cli `config/trustedFolders.ts`, bundle/chunk-2YTYPKEZ.js): the setting
  `security.folderTrust.enabled`, default true. System settings (`getSystemSettingsPath`, same
  chunk) override the user's `<home>/.gemini/settings.json`.
- `Storage.getTrustedFoldersPath`: `$GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else
  `<home>/.gemini/trustedFolders.json`, where home is `$GEMINI_CLI_HOME` or the user's home (`homedir`).
- `LoadedTrustedFolders.isPathTrusted`: among the rules whose folder (for `TRUST_PARENT`, the
  rule's parent) holds the folder's real path, the longest rule path wins; `DO_NOT_TRUST` means not
  trusted; no rule means undecided, which headless Gemini CLI refuses too. `normalizePath` compares
  without case on Windows and macOS.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.files.paths import is_inside

UNTRUSTED_EXIT_CODE = 55  # FatalUntrustedWorkspaceError's exit code
# What the user does once, in the words of Gemini CLI's own trust dialog (`FolderTrustDialog`,
# bundle/interactiveCli-TRXNUIPM.js: "Do you trust the files in this folder?", "Trust folder (<name>)").
TRUST_FIX = "run `gemini` in that folder once and choose “Trust folder”"

_TRUSTING = ("TRUST_FOLDER", "TRUST_PARENT")
_LEVELS = (*_TRUSTING, "DO_NOT_TRUST")


@dataclass(frozen=True)
class FolderTrust:
    """`trusted`: True, False (refused) or None (no decision yet: headless Gemini CLI refuses it too);
    `reason`: which file or variable says so."""

    trusted: bool | None
    reason: str


def folder_trust(folder: str, env: Mapping[str, str] | None = None, platform: str = sys.platform) -> FolderTrust:
    """What Gemini CLI, started with `env` (default: this process's), decides for `folder`. Reads files."""
    env = os.environ if env is None else env
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return FolderTrust(False, "the environment sets GEMINI_RESTRICTED_MODE or GEMINI_CLI_TRUST_WORKSPACE=false")
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return FolderTrust(True, "the environment sets GEMINI_CLI_TRUST_WORKSPACE=true")
    enabled, where = _folder_trust_enabled(env, platform)
    if not enabled:
        return FolderTrust(True, f"folder trust is off (security.folderTrust.enabled in {where})")
    path = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(_gemini_dir(env), "trustedFolders.json")
    try:
        rules = _read_json(path)
    except FileNotFoundError:
        return FolderTrust(None, f"no decision yet ({path} does not exist)")
    except (OSError, ValueError) as exc:
        return FolderTrust(False, f"{path} cannot be read ({exc}); Gemini CLI refuses to start until it is fixed")
    if not isinstance(rules, dict):
        return FolderTrust(False, f"{path} is not a JSON object; Gemini CLI refuses to start until it is fixed")
    rule = _deciding_rule(folder, rules, platform)
    if rule is None:
        return FolderTrust(None, f"no decision yet (no rule for it in {path})")
    return FolderTrust(rules[rule] in _TRUSTING, f"{path}: {rule} is {rules[rule]}")


def _gemini_dir(env: Mapping[str, str]) -> str:
    return os.path.join(env.get("GEMINI_CLI_HOME") or os.path.expanduser("~"), ".gemini")


def _system_settings_path(env: Mapping[str, str], platform: str) -> str:
    if env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH"):
        return env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]
    if platform == "darwin":
        return "/Library/Application Support/GeminiCli/settings.json"
    if platform == "win32":
        return "C:\\ProgramData\\gemini-cli\\settings.json"
    return "/etc/gemini-cli/settings.json"


def _folder_trust_enabled(env: Mapping[str, str], platform: str) -> tuple[bool, str]:
    """`security.folderTrust.enabled` from the first settings file that sets it (system, then the
    user's), and that file; (True, "the default") when none does or a file cannot be read as JSON."""
    for path in (_system_settings_path(env, platform), os.path.join(_gemini_dir(env), "settings.json")):
        try:
            settings = _read_json(path)
        except (OSError, ValueError):
            continue  # missing, or JSON with comments: the default is what Gemini CLI most likely uses
        value = _setting(settings, "security", "folderTrust", "enabled")
        if isinstance(value, bool):
            return value, path
    return True, "the default"


def _setting(settings: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(settings, dict):
            return None
        settings = settings.get(key)
    return settings


def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _deciding_rule(folder: str, rules: dict[str, Any], platform: str) -> str | None:
    """The rule of trustedFolders.json that decides `folder`: the longest whose folder holds it."""
    target = _cli_path(folder, platform)
    best: str | None = None
    for rule, level in rules.items():
        if level not in _LEVELS:
            continue  # Gemini CLI reports the file as invalid; the doctor shows what the valid rules say
        ruled = os.path.dirname(rule) if level == "TRUST_PARENT" else rule
        if is_inside(target, _cli_path(ruled, platform)) and (best is None or len(rule) > len(best)):
            best = rule
    return best


def _cli_path(path: str, platform: str) -> str:
    """A path as `normalizePath` and `getRealPath` compare it: absolute, symlinks resolved, and lower
    case on Windows and macOS."""
    real = os.path.realpath(os.path.abspath(path))
    return real.lower() if platform in ("win32", "darwin") else real
