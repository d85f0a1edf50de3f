"""A training script instrumented from outside: telemetry, frames, series and control for a
script that knows nothing of MOSAIC (``mosaic run train.py``; the CleanRL worker's scripts).

- :mod:`~mosaic_sdk.instrument.gym_patch`: ``gymnasium.make``, ``make_vec`` and the vector
  env classes patched, so every env reports its steps and episodes and, when it renders
  ``rgb_array``, its frames to FastLane (:class:`Instrumentation`);
- :mod:`~mosaic_sdk.instrument.env_telemetry`: the wrappers and the :class:`TelemetrySink`
  they report to; the control safe point inside ``env.step``;
- :mod:`~mosaic_sdk.instrument.subprocess_patch` and ``_site/sitecustomize.py``: the same
  patch in the env subprocesses of an ``AsyncVectorEnv``, and in no other process;
- :mod:`~mosaic_sdk.instrument.scalar_series`: ``SummaryWriter`` scalars (torch's and
  tensorboardX's) as series, the TensorBoard files still written (:class:`ScalarSeries`);
- :mod:`~mosaic_sdk.instrument.execution`: a script or module run as ``__main__`` in this
  process, and how it ended;
- :mod:`~mosaic_sdk.instrument.script_worker`: the built-in ``script`` worker that
  ``mosaic run path/to/train.py`` launches.

A worker's process imports this floor only (no pluggy, no runner). Importing the package is
cheap: each name is imported on first use (gymnasium and numpy come with the patches).
"""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

_LAZY = LazyExports(
    __name__,
    {
        "Instrumentation": "mosaic_sdk.instrument.gym_patch",
        "instrument_subprocess": "mosaic_sdk.instrument.gym_patch",
        "TelemetrySink": "mosaic_sdk.instrument.env_telemetry",
        "EpisodeTelemetryWrapper": "mosaic_sdk.instrument.env_telemetry",
        "VectorEpisodeTelemetry": "mosaic_sdk.instrument.env_telemetry",
        "ScalarSeries": "mosaic_sdk.instrument.scalar_series",
        "when_imported": "mosaic_sdk.instrument.import_hooks",
        "RunCancelled": "mosaic_sdk.instrument.execution",
        "ScriptTarget": "mosaic_sdk.instrument.execution",
        "execute": "mosaic_sdk.instrument.execution",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir
__all__ = _LAZY.all()
