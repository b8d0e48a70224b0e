"""The wire contract with Claude Code's `/ide` integration: tool names, result words, limits.

Facts from the real client (`@anthropic-ai/claude-code` 2.1.197 and 2.1.331), summarised in
CONTRIBUTING.md ("Claude Code"). Standard library only: the Sublime adapter imports this
on the editor's thread.
"""

from __future__ import annotations

from typing import Any

IDE_NAME = "Sublime Text"
WEBSOCKET_PATH = "/"
SUBPROTOCOL = "mcp"
AUTH_HEADER = b"x-claude-code-ide-authorization"

# Environment of a Claude Code started from the editor's terminal: the lock with this port wins.
PORT_ENV = "CLAUDE_CODE_SSE_PORT"
CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"

# Notifications sent to Claude Code.
SELECTION_CHANGED = "selection_changed"
AT_MENTIONED = "at_mentioned"
# What clears Claude Code's selection (the client skips a null `selection`; see claude_server).
NO_SELECTION: dict[str, Any] = {
    "text": "",
    "filePath": "",
    "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}, "isEmpty": True},
}
# Notification Claude Code sends once connected.
IDE_CONNECTED = "ide_connected"

# openDiff answers, as the client parses them: FILE_SAVED needs the final text as a second item;
# TAB_CLOSED means *accept as proposed*, so a review the user closes must answer DIFF_REJECTED.
FILE_SAVED = "FILE_SAVED"
DIFF_REJECTED = "DIFF_REJECTED"

OPEN_DIFF = "openDiff"
OPEN_FILE = "openFile"
GET_CURRENT_SELECTION = "getCurrentSelection"
GET_LATEST_SELECTION = "getLatestSelection"
GET_OPEN_EDITORS = "getOpenEditors"
GET_WORKSPACE_FOLDERS = "getWorkspaceFolders"
GET_DIAGNOSTICS = "getDiagnostics"
CHECK_DOCUMENT_DIRTY = "checkDocumentDirty"
SAVE_DOCUMENT = "saveDocument"
CLOSE_TAB = "close_tab"
CLOSE_ALL_DIFF_TABS = "closeAllDiffTabs"


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


_PATH = {"type": "string", "description": "Absolute path of the file."}

TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    OPEN_DIFF: (
        "Show a proposed change as a diff the user can edit, accept or reject; answers when the user "
        "decides: FILE_SAVED with the accepted text (user edits included), or DIFF_REJECTED.",
        _object(
            {
                "old_file_path": _PATH,
                "new_file_path": _PATH,
                "new_file_contents": {"type": "string", "description": "The full proposed text."},
                "tab_name": {"type": "string", "description": "A name for the review, used by close_tab."},
            },
            ["new_file_path", "new_file_contents", "tab_name"],
        ),
    ),
    OPEN_FILE: (
        "Open a file in the editor, optionally selecting from the line holding startText to the one holding endText.",
        _object(
            {
                "filePath": _PATH,
                "preview": {"type": "boolean"},
                "startText": {"type": "string"},
                "endText": {"type": "string"},
                "selectToEndOfLine": {"type": "boolean"},
                "makeFrontmost": {"type": "boolean"},
            },
            ["filePath"],
        ),
    ),
    GET_CURRENT_SELECTION: ("The selection in the active file.", _object({})),
    GET_LATEST_SELECTION: ("The most recent selection in any file of this window.", _object({})),
    GET_OPEN_EDITORS: ("The files open in this window.", _object({})),
    GET_WORKSPACE_FOLDERS: ("The folders of this window.", _object({})),
    GET_DIAGNOSTICS: (
        "Diagnostics the editor shows: errors of the last build, and the LSP package's Diagnostics panel while "
        "it is open. Empty when there are none.",
        _object({"uri": {"type": "string", "description": "file:// URI of one file; all files when absent."}}),
    ),
    CHECK_DOCUMENT_DIRTY: (
        "Whether the file has unsaved changes in the editor.",
        _object({"filePath": _PATH}, ["filePath"]),
    ),
    SAVE_DOCUMENT: ("Save the file's open buffer.", _object({"filePath": _PATH}, ["filePath"])),
    CLOSE_TAB: (
        "Close the review opened under this tab_name (no decision is sent).",
        _object({"tab_name": {"type": "string"}}, ["tab_name"]),
    ),
    CLOSE_ALL_DIFF_TABS: ("Close every review Claude Code opened in this window.", _object({})),
}
