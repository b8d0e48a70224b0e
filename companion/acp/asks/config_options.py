"""The session's config options (`configOptions`: selects and booleans) as the user sees and sets
them: their current values in words, and a typed value checked against the option. Shared by the
"Chat Options…" palette command and the terminal chat's `/config`. No SDK import here."""

from __future__ import annotations

from ..view import ConfigOption

ON_WORDS = ("on", "true", "yes", "1")
OFF_WORDS = ("off", "false", "no", "0")


def current_text(option: ConfigOption) -> str:
    """The option's value in words: on/off, or the chosen value's name."""
    if option.kind == "boolean":
        return "on" if option.current is True else "off"
    chosen = next((c for c in option.choices if c.value == option.current), None)
    return chosen.name if chosen is not None and chosen.name else str(option.current)


def values_text(option: ConfigOption) -> str:
    """What the option takes, for a listing."""
    if option.kind == "boolean":
        return "on | off"
    return " | ".join(c.value for c in option.choices)


def parse_value(option: ConfigOption, text: str) -> str | bool:
    """`text` as a value of `option`; ValueError says what it takes."""
    word = text.strip()
    if option.kind == "boolean":
        if word.lower() in ON_WORDS:
            return True
        if word.lower() in OFF_WORDS:
            return False
        raise ValueError(f"{option.name} is on or off, not {word!r}")
    values = [c.value for c in option.choices]
    if option.kind != "select":
        raise ValueError(f"{option.name} is a {option.kind or 'kind of'} option this chat cannot set")
    if values and word not in values:
        raise ValueError(f"{word!r} is not a value of {option.name}; its values are {', '.join(values)}")
    return word
