"""The stand-in's ``gym_gui.logging_config``: ``configure_logging``."""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_installed: list[logging.Handler] = []
_choice: tuple[bool, bool] | None = None


def configure_logging(
    level: int = logging.INFO,
    *,
    stream: bool = True,
    log_to_file: bool = True,
    force: bool = False,
) -> None:
    """Configure the root logger once per process; again only with ``force``
    or other handler choices."""
    global _choice
    root = logging.getLogger()
    root.setLevel(level)
    if _choice == (stream, log_to_file) and not force:
        return
    for handler in _installed:
        root.removeHandler(handler)
        handler.close()
    _installed.clear()
    formatter = logging.Formatter(LOG_FORMAT)
    if stream:
        _installed.append(logging.StreamHandler(sys.stderr))
    if log_to_file:
        # Imported here: config_paths reads MOSAIC_HOME when imported; only file logging needs it.
        from mosaic_sdk.plugins.gym_gui_stand_in.config_paths import VAR_LOGS_DIR

        VAR_LOGS_DIR.mkdir(parents=True, exist_ok=True)
        _installed.append(logging.FileHandler(VAR_LOGS_DIR / "gym_gui.log", encoding="utf-8"))
    for handler in _installed:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    _choice = (stream, log_to_file)


__all__ = ["configure_logging"]
