"""The stand-in's ``gym_gui.logging_config.helpers``: ``log_constant`` and ``LogConstantMixin``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mosaic_sdk.plugins.gym_gui_stand_in.log_constants import LogConstant

# the attributes every LogRecord has (plus those Formatter adds): `extra` may not set them
_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    value = logging.getLevelName(str(level).upper())
    return value if isinstance(value, int) else logging.INFO


def log_constant(
    logger: logging.Logger,
    constant: LogConstant,
    *,
    message: str | None = None,
    extra: Mapping[str, object] | None = None,
    exc_info: BaseException | tuple[Any, ...] | None = None,
) -> None:
    """Log ``constant`` through ``logger``, its fields as ``extra``."""
    fields: dict[str, object] = {
        "log_code": constant.code,
        "component": constant.component,
        "subcomponent": constant.subcomponent,
        "tags": ",".join(constant.tags),
    }
    fields.update({k: v for k, v in (extra or {}).items() if k not in _RESERVED})
    text = constant.message if message is None else f"{constant.message} | {message}"
    logger.log(
        _level(constant.level), "%s %s", constant.code, text, extra=fields, exc_info=exc_info
    )


class LogConstantMixin:
    """Gives a class with a ``_logger`` a ``log_constant`` method."""

    _logger: logging.Logger

    def log_constant(
        self,
        constant: LogConstant,
        *,
        message: str | None = None,
        extra: Mapping[str, object] | None = None,
        exc_info: BaseException | tuple[Any, ...] | None = None,
    ) -> None:
        log_constant(self._logger, constant, message=message, extra=extra, exc_info=exc_info)


__all__ = ["LogConstantMixin", "log_constant"]
