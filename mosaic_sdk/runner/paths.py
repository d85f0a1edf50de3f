"""Where runs live: ``MOSAIC_HOME`` or the user's data directory.

- Linux and other Unix: ``$XDG_DATA_HOME/mosaic`` or ``~/.local/share/mosaic``
- macOS: ``~/Library/Application Support/mosaic``
- Windows: ``%LOCALAPPDATA%\\mosaic``

The default store is ``<home>/runs.sqlite``; run directories (config, logs, artefacts) are
``<home>/runs/<run_id>/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def mosaic_home() -> Path:
    override = os.environ.get("MOSAIC_HOME", "").strip()
    if override:
        return Path(override).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "mosaic"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mosaic"
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "mosaic"


def default_store_path() -> Path:
    return mosaic_home() / "runs.sqlite"


def default_runs_dir() -> Path:
    return mosaic_home() / "runs"


__all__ = ["default_runs_dir", "default_store_path", "mosaic_home"]
