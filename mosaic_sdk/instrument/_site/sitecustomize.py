"""Patch gymnasium in the env subprocesses of an instrumented script's ``AsyncVectorEnv``.

This directory holds only this module. The patched ``AsyncVectorEnv`` puts the directory on
``PYTHONPATH`` and sets ``MOSAIC_INSTRUMENT_SITECUSTOMIZE=1`` only while it starts its workers
(``mosaic_sdk.instrument.subprocess_patch``); every other process the script starts never
loads this module. The module first loads the ``sitecustomize`` it shadows (Debian and
others ship one). With the switch it removes the variables from its environment (its own
children start clean) and, in a ``multiprocessing`` child, patches ``gymnasium.make`` as in
the script's process, except that telemetry records travel back in ``info`` (the script's
process writes them) and no FastLane frames are written here.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_shadowed() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` after this directory, if any."""
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _patch_gymnasium() -> None:
    # Imported here, not at the top: every process started with the switch runs this file,
    # and only an env subprocess pays for gymnasium and the instrumentation.
    from mosaic_sdk.instrument.subprocess_patch import subprocess_variables

    variables = subprocess_variables(os.environ)
    if variables is not None:
        # only in an instrumented process (every Python start runs this file)
        from mosaic_sdk.instrument.gym_patch import instrument_subprocess

        instrument_subprocess(variables, os.environ)


try:
    _load_shadowed()
finally:
    if "MOSAIC_INSTRUMENT_SITECUSTOMIZE" in os.environ:
        try:
            _patch_gymnasium()
        except Exception as exc:  # noqa: BLE001 - never break interpreter start-up
            print(
                f"mosaic_sdk.instrument sitecustomize: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
