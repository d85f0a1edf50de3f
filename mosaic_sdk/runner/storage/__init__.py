"""The runs' SQLite store: :mod:`.store` (``RunStore``), :mod:`.schema` (tables, ``connect``),
:mod:`.rows` (``LineBatch``, rows that always bind), :mod:`.writer` (``StoreWriter``, the
writer thread), :mod:`.paths` (where the store and run directories live), :mod:`.ids` (run
ids) and :mod:`.export` (``mosaic runs export``). Each module is also importable under its
old name, ``mosaic_sdk.runner.NAME`` (see :data:`mosaic_sdk.runner.MOVED`)."""

from mosaic_sdk.runner.storage.records import SeriesCounts, SeriesInfo, SeriesPoints

__all__ = ["SeriesCounts", "SeriesInfo", "SeriesPoints"]
