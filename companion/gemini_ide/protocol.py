"""The wire contract with Gemini CLI: method and tool names, limits, tool input schemas.

Standard library only: the Sublime adapter imports this on the editor's thread. The payload
schemas that need pydantic live in `wire.py`, which only the server loop imports.
"""

from __future__ import annotations

from typing import Any

CONTEXT_UPDATE = "ide/contextUpdate"
DIFF_ACCEPTED = "ide/diffAccepted"
DIFF_REJECTED = "ide/diffRejected"

OPEN_DIFF = "openDiff"
CLOSE_DIFF = "closeDiff"

IDE_INFO = {"name": "sublimetext", "displayName": "Sublime Text"}
SERVER_NAME = "gemini-companion-sublime"


# Tool input schemas as Gemini CLI sends them (ide-client.ts).
OPEN_DIFF_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filePath": {"type": "string", "description": "Absolute path of the file the change is for."},
        "newContent": {"type": "string", "description": "The full proposed text of the file."},
    },
    "required": ["filePath", "newContent"],
}

CLOSE_DIFF_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filePath": {"type": "string", "description": "Path of the file whose review to close, as given to openDiff."},
        "suppressNotification": {
            "type": "boolean",
            "description": "Accepted for compatibility; closeDiff never notifies.",
        },
    },
    "required": ["filePath"],
}
