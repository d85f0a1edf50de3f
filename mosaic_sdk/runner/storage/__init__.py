"""The runs' SQLite store: :mod:`.store` (``RunStore``), :mod:`.schema`, :mod:`.rows`,
:mod:`.writer` (the writer thread), :mod:`.paths`, :mod:`.ids` and :mod:`.export`."""

from mosaic_sdk.runner.storage.records import SeriesColumns, SeriesCounts, SeriesInfo, SeriesPoints

__all__ = ["SeriesColumns", "SeriesCounts", "SeriesInfo", "SeriesPoints"]
