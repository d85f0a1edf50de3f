"""Learning curves of stored runs: reading them (numpy), grouping runs that differ only by
seed, and drawing them to PNG or SVG (matplotlib, the ``plot`` extra).

``mosaic runs plot`` is :func:`plot_runs`; the pieces are public for other views (a web page,
a sweep report) that draw curves themselves::

    from mosaic_sdk.plots import aggregate, group_by_seed, learning_curve, plot_runs

Names are loaded on first use: importing this package imports neither numpy nor matplotlib.
"""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

_LAZY = LazyExports(
    __name__,
    {
        "Band": "mosaic_sdk.plots.curves",
        "Curve": "mosaic_sdk.plots.curves",
        "CurveError": "mosaic_sdk.plots.curves",
        "Episodes": "mosaic_sdk.plots.curves",
        "X_AXES": "mosaic_sdk.plots.curves",
        "aggregate": "mosaic_sdk.plots.curves",
        "curve_from_episodes": "mosaic_sdk.plots.curves",
        "downsample": "mosaic_sdk.plots.curves",
        "learning_curve": "mosaic_sdk.plots.curves",
        "read_episodes": "mosaic_sdk.plots.curves",
        "smooth": "mosaic_sdk.plots.curves",
        "SeedGroup": "mosaic_sdk.plots.groups",
        "group_by_seed": "mosaic_sdk.plots.groups",
        "PlotResult": "mosaic_sdk.plots.figure",
        "plot_runs": "mosaic_sdk.plots.figure",
        "render": "mosaic_sdk.plots.figure",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

__all__ = _LAZY.all()
