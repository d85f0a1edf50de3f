"""The ``gym_gui`` names the platform's workers import, for when the MOSAIC GUI is not installed.

A worker written to the platform's guide imports ``WorkerMetadata`` and ``WorkerCapabilities``
from ``gym_gui.core.worker``; the platform's own workers (its ``3rd_party/workers``) import
much more: the emitter, analytics manifest, CLI and config loader of ``gym_gui.core.worker``,
log constants (``gym_gui.logging_config``), the ``var`` paths (``gym_gui.config.paths``), the
FastLane writer (``gym_gui.fastlane``) and its variable names (``gym_gui.telemetry.semconv``).
Without the GUI those imports fail, so such a worker could be neither listed nor run. The
stand-in answers them with working code, and nothing else:

* :class:`GymGuiStandInFinder`, a meta-path finder, resolves exactly the names in
  :data:`SERVED` (``gym_gui``, ``gym_gui.core``, ``gym_gui.core.worker``,
  ``gym_gui.logging_config`` with ``log_constants`` and ``helpers``, ``gym_gui.config`` with
  ``paths``, ``gym_gui.fastlane`` with ``buffer``, ``tiling`` and ``worker_helpers``,
  ``gym_gui.telemetry`` with ``semconv``, and ``gym_gui.services.trainer.proto`` with
  ``trainer_pb2`` and ``trainer_pb2_grpc``: the trainer's ``RegisterWorker`` call, which the
  CleanRL worker imports), and only when no other finder can import ``gym_gui``: an installed
  GUI always wins. A name below ``gym_gui`` is served only below the stand-in ``gym_gui``, and
  every other ``gym_gui.*`` name (the GUI's presenters, validators, other services, wrappers,
  ...) still raises ``ModuleNotFoundError``, so a worker's own
  ``try: ... except ImportError`` fallbacks keep working.
* Each served module is a fresh module holding the public names of one module of this package
  (``core_worker``, ``log_constants``, ``logging_helpers``, ``logging_setup``,
  ``config_paths``, ``fastlane``, ``fastlane_buffer``, ``fastlane_tiling``,
  ``fastlane_helpers``, ``semconv``, ``trainer_messages``, ``trainer_stub``), whose
  docstrings say what each provides and how it
  differs from the platform's.
* :func:`install_gym_gui_stand_in` puts the finder at the end of ``sys.meta_path`` (once).
  Discovery calls it before loading entry points.
* ``python -m mosaic_sdk.plugins.gym_gui_stand_in MODULE [ARG ...]`` installs it and runs
  ``MODULE`` as ``python -m MODULE [ARG ...]`` would, in the same process (same pid, so
  signals reach the worker itself). The upstream adapter launches workers this way; the finder
  never exists outside that process.

Cost: ``gym_gui.core.worker``, ``gym_gui.logging_config``, ``gym_gui.config.paths`` and
``gym_gui.telemetry.semconv`` import only the standard library (the emitter imports
:mod:`mosaic_sdk.telemetry` when one is made); ``gym_gui.fastlane`` imports the SDK's FastLane
and numpy; the trainer's messages import ``protobuf`` and ``grpcio``.
"""

from mosaic_sdk.plugins.gym_gui_stand_in.finder import (
    SERVED,
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
    "SERVED",
    "STAND_IN_MARK",
    "STAND_IN_MODULES",
    "GymGuiStandInFinder",
    "install_gym_gui_stand_in",
    "is_stand_in",
    "uninstall_gym_gui_stand_in",
]
