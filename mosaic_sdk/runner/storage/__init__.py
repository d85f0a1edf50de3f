"""The runs' SQLite store: :mod:`.store` (``RunStore``), :mod:`.schema` (tables, ``connect``),
:mod:`.rows` (``LineBatch``, rows that always bind), :mod:`.writer` (``StoreWriter``, the
writer thread), :mod:`.paths` (where the store and run directories live), :mod:`.ids` (run
ids) and :mod:`.export` (``mosaic runs export``)."""

from mosaic_sdk.runner.storage.records import (
    SeriesColumns,
    SeriesCounts,
    SeriesInfo,
    SeriesPoints,
)

__all__ = ["SeriesColumns", "SeriesCounts", "SeriesInfo", "SeriesPoints"]
