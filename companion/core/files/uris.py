"""`file://` URIs as the agents send and expect them (standard library only)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def file_uri(path: str) -> str:
    """`file:///abs/path` for an absolute path (percent-encoded); anything else unchanged."""
    return Path(path).as_uri() if os.path.isabs(path) else path


def path_of(uri_or_path: str) -> str:
    """The local path of a `file://` URI; any other string unchanged."""
    if not uri_or_path.startswith("file://"):
        return uri_or_path
    path = unquote(urlparse(uri_or_path).path)
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
        path = path[1:]  # file:///C:/x → C:/x
    return os.path.normpath(path)


def diagnostics_by_uri(found: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The editor's diagnostics per file, as Claude Code's getDiagnostics answers them:
    `[{uri, diagnostics: [...]}]`."""
    return [{"uri": file_uri(path), "diagnostics": items} for path, items in found.items()]
