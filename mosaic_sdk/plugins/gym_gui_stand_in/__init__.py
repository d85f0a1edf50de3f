"""``gym_gui.core.worker`` for upstream-style workers when the MOSAIC GUI is not installed.

A worker written to the platform's guide imports ``WorkerMetadata`` and ``WorkerCapabilities``
from ``gym_gui.core.worker`` (and, in the platform's own workers, ``TelemetryEmitter``). Without
the GUI that import fails, so the worker could be neither listed nor run. The stand-in answers
it, and nothing else:

* :class:`GymGuiStandInFinder`, a meta-path finder, resolves exactly ``gym_gui``,
  ``gym_gui.core`` and ``gym_gui.core.worker``, and only when no other finder can import
  ``gym_gui``: an installed GUI always wins. ``gym_gui.core`` and ``gym_gui.core.worker`` are
  served only below the stand-in ``gym_gui``, and every other ``gym_gui.*`` name (e.g.
  ``gym_gui.fastlane``) still raises ``ModuleNotFoundError``, so a worker's own
  ``try: ... except ImportError`` fallbacks keep working.
* :func:`install_gym_gui_stand_in` puts the finder at the end of ``sys.meta_path`` (once).
  Discovery calls it before loading entry points.
* ``python -m mosaic_sdk.plugins.gym_gui_stand_in MODULE [ARG ...]`` installs it and runs
  ``MODULE`` as ``python -m MODULE [ARG ...]`` would, in the same process (same pid, so
  signals reach the worker itself). The upstream adapter launches workers this way; the finder
  never exists outside that process.

What the stand-in module provides is documented in its own docstring
(:mod:`mosaic_sdk.plugins.gym_gui_stand_in.core_worker`). This package imports only the
standard library and, when an emitter is made, :mod:`mosaic_sdk.telemetry`.
"""

from mosaic_sdk.plugins.gym_gui_stand_in.finder import (
    STAND_IN_MARK,
    STAND_IN_MODULES,
    GymGuiStandInFinder,
    install_gym_gui_stand_in,
    is_stand_in,
    uninstall_gym_gui_stand_in,
)

#: The launcher module: ``python -m LAUNCHER MODULE [ARG ...]``.
LAUNCHER = __name__

__all__ = [
    "LAUNCHER",
    "STAND_IN_MARK",
    "STAND_IN_MODULES",
    "GymGuiStandInFinder",
    "install_gym_gui_stand_in",
    "is_stand_in",
    "uninstall_gym_gui_stand_in",
]
