"""Where runs live: the default store is ``<home>/runs.sqlite`` (``mosaic_home()``); run
directories live beside their store, in a directory named after it (:func:`runs_dir_for`), so
two stores never share one."""

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
