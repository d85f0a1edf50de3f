"""The stand-in's ``gym_gui.logging_config.log_constants``: ``LogConstant`` and every ``LOG_*``
name, made when first read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NAME = re.compile(r"LOG(?:_[A-Z0-9]+)+")
_ERROR = {"ERROR", "FAILED", "FAILURE", "EXCEPTION"}
_WARNING = {"WARNING", "WARN", "DEFAULTED", "FALLBACK", "SKIPPED", "TIMEOUT"}


@dataclass(frozen=True, slots=True)
class LogConstant:
    """A structured log record template: code, level, message, component, subcomponent, tags."""

    code: str
    level: int | str
    message: str
    component: str
    subcomponent: str
    tags: tuple[str, ...] = ()


def constant_for(name: str) -> LogConstant:
    """The constant the stand-in gives ``name``: component and subcomponent from
    its first words, level from words such as ERROR or WARNING, message from the rest."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a log constant name (LOG_ followed by WORDS)")
    words = name.split("_")[1:]
    if words[:1] == ["MOSAIC"] and words[1:2] == ["WORKER"] and len(words) > 2:
        component, sub, rest = "Worker", words[2], words[3:]
    elif words[:1] == ["WORKER"] and len(words) > 1:
        component, sub, rest = "Worker", words[1], words[2:]
    else:
        component, sub, rest = words[0], words[1] if len(words) > 1 else "", words[2:]
    upper = set(words)
    if upper & _ERROR:
        level = "ERROR"
    elif upper & _WARNING:
        level = "WARNING"
    elif "DEBUG" in upper:
        level = "DEBUG"
    else:
        level = "INFO"
    return LogConstant(
        code=name,
        level=level,
        message=" ".join(rest).lower() or name.lower(),
        component=component.title(),
        subcomponent=sub.title(),
        tags=tuple(w.lower() for w in words),
    )


def __getattr__(name: str) -> Any:
    if _NAME.fullmatch(name):
        return globals().setdefault(name, constant_for(name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = ["LogConstant", "constant_for"]
