"""Where runs live: under the SDK's per-user directory (:func:`mosaic_sdk.home.mosaic_home`:
``MOSAIC_HOME`` or the user's data directory).

The default store is ``<home>/runs.sqlite``. Run directories (config, logs, artefacts) live
beside their store, in a directory named after it: ``<store's directory>/<store's name without
suffix>/<run_id>/`` (``<home>/runs/<run_id>/`` for the default store), so two stores never
share a run directory.
"""

from __future__ import annotations

from pathlib import Path

from mosaic_sdk.home import MosaicHomeError, mosaic_home


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
