"""Where runs live: ``MOSAIC_HOME`` or the user's data directory.

- Linux and other Unix: ``$XDG_DATA_HOME/mosaic`` or ``~/.local/share/mosaic``
- macOS: ``~/Library/Application Support/mosaic``
- Windows: ``%LOCALAPPDATA%\\mosaic``

The default store is ``<home>/runs.sqlite``. Run directories (config, logs, artefacts) live
beside their store, in a directory named after it: ``<store's directory>/<store's name without
suffix>/<run_id>/`` (``<home>/runs/<run_id>/`` for the default store), so two stores never
share a run directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


class MosaicHomeError(ValueError):
    """``MOSAIC_HOME`` (or the home directory it defaults under) cannot be resolved."""


def mosaic_home() -> Path:
    """The directory of the default store and run directories; raises :class:`MosaicHomeError`
    when ``MOSAIC_HOME`` names an unknown user's home (``~nobody``) or no home is known."""
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


def default_store_path() -> Path:
    return mosaic_home() / "runs.sqlite"


def default_runs_dir() -> Path:
    return mosaic_home() / "runs"


def runs_dir_for(store: Path) -> Path:
    """The parent of the run directories of ``store``: ``runs.sqlite`` -> ``runs/`` beside it
    (``<name>.runs/`` for a store file without a suffix). Absolute, so the path recorded in the
    store finds the files from any working directory."""
    store = Path(store).absolute()
    name = store.stem if store.suffix else store.name + ".runs"
    return store.parent / name


__all__ = [
    "MosaicHomeError",
    "default_runs_dir",
    "default_store_path",
    "mosaic_home",
    "runs_dir_for",
]
