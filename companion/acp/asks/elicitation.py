"""`elicitation/create`: the agent (often for an MCP server's OAuth) asks the user to fill in a
form or to open a URL. The client advertises both (`clientCapabilities.elicitation.form`, `.url`).

A form is asked field by field through the view (`ChatView.pick` for enums and booleans,
`ask_text` for the rest), each answer checked against the requested schema's type (string,
number, integer, boolean, enum) and limits, asked again when it does not fit. The answer is
`accept` with the content, `decline` (the user chose not to answer) or `cancel` (dismissed, or
the chat closed). A URL is shown in full and opened only after the user confirms it, and only an
http(s) one. No SDK import here: the request comes as JSON (camelCase).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from ..view import ChatView

Action = Literal["accept", "decline", "cancel"]
ANSWER, DECLINE = "Answer", "Decline"
YES, NO = "Yes", "No"
LEAVE_EMPTY = "(leave empty)"


@dataclass(frozen=True)
class FormField:
    """One property of the requested schema."""

    name: str
    title: str
    kind: str  # string, number, integer, boolean, enum; anything else cannot be asked
    required: bool
    description: str | None = None
    choices: tuple[tuple[str, str], ...] = ()  # enum: (value, title)
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def question(self) -> str:
        words = f"{self.title}: {self.description}" if self.description else self.title
        return words if self.required else f"{words} (optional)"


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    """The fields of `requestedSchema`, in its order."""
    required = set(schema.get("required") or ())
    fields = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        kind = str(prop.get("type", ""))
        choices: tuple[tuple[str, str], ...] = ()
        if kind == "string" and prop.get("oneOf"):
            choices = tuple((str(o["const"]), str(o.get("title") or o["const"])) for o in prop["oneOf"] if "const" in o)
            kind = "enum"
        elif kind == "string" and prop.get("enum"):
            choices = tuple((str(v), str(v)) for v in prop["enum"])
            kind = "enum"
        fields.append(
            FormField(
                name=str(name),
                title=str(prop.get("title") or name),
                kind=kind,
                required=name in required,
                description=prop.get("description"),
                choices=choices,
                default=prop.get("default"),
                minimum=prop.get("minimum"),
                maximum=prop.get("maximum"),
                min_length=prop.get("minLength"),
                max_length=prop.get("maxLength"),
                pattern=prop.get("pattern"),
            )
        )
    return fields


def parse(field: FormField, text: str) -> str | int | float:
    """The typed answer as the schema's type; ValueError says what fits."""
    if field.kind == "integer":
        try:
            value: int | float = int(text.strip())
        except ValueError:
            raise ValueError(f"{field.title} is a whole number, such as 3") from None
        return _in_range(field, value)
    if field.kind == "number":
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"{field.title} is a number, such as 2.5") from None
        if not math.isfinite(number):
            raise ValueError(f"{field.title} is a finite number")
        return _in_range(field, number)
    if field.min_length is not None and len(text) < field.min_length:
        raise ValueError(f"{field.title} takes at least {field.min_length} characters")
    if field.max_length is not None and len(text) > field.max_length:
        raise ValueError(f"{field.title} takes at most {field.max_length} characters")
    if field.pattern:
        try:
            matches = re.search(field.pattern, text) is not None
        except re.error:
            matches = True  # a pattern we cannot read is the agent's to check
        if not matches:
            raise ValueError(f"{field.title} must match {field.pattern}")
    return text


def _in_range(field: FormField, value: int | float) -> int | float:
    if field.minimum is not None and value < field.minimum:
        raise ValueError(f"{field.title} is at least {field.minimum:g}")
    if field.maximum is not None and value > field.maximum:
        raise ValueError(f"{field.title} is at most {field.maximum:g}")
    return value


_MISSING = object()  # the user left an optional field empty


async def ask_form(view: ChatView, agent: str, message: str, schema: dict[str, Any]) -> tuple[Action, dict[str, Any]]:
    """The user's answer to a form: (action, content)."""
    fields = form_fields(schema)
    unaskable = [f for f in fields if f.kind not in ("string", "number", "integer", "boolean", "enum")]
    if any(f.required for f in unaskable):
        titles = ", ".join(f.title for f in unaskable)
        view.notice(f"{agent} asks for {titles}, which this chat cannot ask: declined.", "warning")
        return "decline", {}
    picked = await view.pick(f"{agent} asks: {message}", [ANSWER, DECLINE])
    if picked is None:
        return "cancel", {}
    if picked == 1:
        return "decline", {}
    content: dict[str, Any] = {}
    for field in fields:
        if field in unaskable:
            continue  # optional: left out
        value = await _ask_field(view, field)
        if value is None:
            return "cancel", {}
        if value is not _MISSING:
            content[field.name] = value
    return "accept", content


async def _ask_field(view: ChatView, field: FormField) -> Any:
    """The field's value, _MISSING for an optional one left empty, None when dismissed."""
    if field.kind in ("boolean", "enum"):
        options: list[tuple[Any, str]] = [(True, YES), (False, NO)] if field.kind == "boolean" else [*field.choices]
        if not field.required:
            options.append((_MISSING, LEAVE_EMPTY))
        index = await view.pick(field.question(), [title for _, title in options])
        return None if index is None else options[index][0]
    hint = f"default: {field.default}" if field.default is not None else field.kind
    while True:
        text = await view.ask_text(field.question(), hint)
        if text is None:
            return None
        if not text:
            if field.default is not None:
                return field.default
            if not field.required:
                return _MISSING
            if field.kind == "string" and not field.min_length:
                return ""
        try:
            return parse(field, text)
        except ValueError as exc:
            view.notice(f"{exc}; try again (Escape cancels the form).", "warning")


async def ask_url(view: ChatView, agent: str, message: str, url: str) -> Action:
    """Open `url` once the user confirms it; `accept` when opened, `decline` when not."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        view.notice(f"{agent} asked to open {url}, which is not a web address (http or https): declined.", "warning")
        return "decline"
    answer = await view.confirm_url(f"{agent} asks you to open this address: {message}", url)
    if answer is None:
        return "cancel"
    if not answer:
        return "decline"
    view.open_url(url)
    return "accept"
