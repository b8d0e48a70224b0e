"""Payload schemas of the notifications we send, checked before anything leaves the process.

Gemini CLI parses every notification with a zod schema and disconnects for good (until the user
runs `/ide enable`) when one fails, so each payload is validated here in strict mode: a string
timestamp, a float line or a 0-based cursor fails in our process, never in the CLI.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.context import MAX_OPEN_FILES, MAX_SELECTED_TEXT
from .protocol import CONTEXT_UPDATE, DIFF_ACCEPTED, DIFF_REJECTED


class _Wire(BaseModel):
    # strict: a float where an int belongs, or a string timestamp, must fail here, not in the CLI.
    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)


class Cursor(_Wire):
    line: int = Field(ge=1)
    character: int = Field(ge=1)


class OpenFile(_Wire):
    path: str = Field(min_length=1)
    timestamp: int = Field(ge=0)
    is_active: bool | None = Field(default=None, alias="isActive")
    selected_text: str | None = Field(default=None, alias="selectedText", max_length=MAX_SELECTED_TEXT)
    cursor: Cursor | None = None


class WorkspaceState(_Wire):
    # isTrusted is deliberately absent: Sublime has no trust model and the CLI would let it
    # override its own folder-trust decision.
    open_files: list[OpenFile] = Field(default_factory=list, alias="openFiles", max_length=MAX_OPEN_FILES)


class ContextUpdateParams(_Wire):
    workspace_state: WorkspaceState = Field(alias="workspaceState")


class DiffAcceptedParams(_Wire):
    file_path: str = Field(alias="filePath")
    content: str


class DiffRejectedParams(_Wire):
    file_path: str = Field(alias="filePath")


_SCHEMAS: dict[str, type[_Wire]] = {
    CONTEXT_UPDATE: ContextUpdateParams,
    DIFF_ACCEPTED: DiffAcceptedParams,
    DIFF_REJECTED: DiffRejectedParams,
}


class InvalidNotification(ValueError):
    """A payload that Gemini CLI would reject; sending it would disconnect the CLI."""


def validated_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Return `params` in wire form after checking them against the method's schema."""
    schema = _SCHEMAS.get(method)
    if schema is None:
        raise InvalidNotification(f"unknown notification method {method!r}")
    try:
        model = schema.model_validate(params, by_alias=True)
    except ValidationError as exc:
        raise InvalidNotification(f"{method} payload does not match the wire schema: {exc}") from exc
    return model.model_dump(by_alias=True, exclude_none=True)
