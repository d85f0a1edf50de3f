"""The SDK's per-user directory: ``MOSAIC_HOME`` or the user's data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path


class MosaicHomeError(ValueError):
    """``MOSAIC_HOME`` (or the home directory it defaults under) cannot be resolved."""


def mosaic_home() -> Path:
    """The SDK's per-user directory; raises :class:`MosaicHomeError` when ``MOSAIC_HOME``
    names an unknown user's home (``~nobody``) or no home is known."""
    override = os.environ.get("MOSAIC_HOME", "").strip()
    if override:
        try:
            return Path(override).expanduser()
        except RuntimeError as exc:  # "~user" of no such user
            raise MosaicHomeError(
                f"MOSAIC_HOME={override} cannot be resolved ({exc}); set MOSAIC_HOME to a "
                "directory, e.g. MOSAIC_HOME=$HOME/mosaic, or pass --store and --runs-dir"
            ) from None
    try:
        return _platform_home()
    except RuntimeError as exc:  # no HOME and no password entry
        raise MosaicHomeError(
            f"no home directory to keep runs under ({exc}); set MOSAIC_HOME to a directory, "
            "or pass --store and --runs-dir"
        ) from None


def _platform_home() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "mosaic"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mosaic"
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "mosaic"
