"""The ``sitecustomize`` patch of env subprocesses: who gets it, and what it does there.

Env subprocesses (the workers of an ``AsyncVectorEnv``) make their envs with their own
``gymnasium.make``, so they need the patch too; no other process does (TensorBoard helpers,
compile workers, a nested ``mosaic run``, anything the script or an env starts). The switch
therefore never sits in the worker's environment:

1. The worker builds the variables once (:func:`child_variables`) and hands them to its
   :class:`~mosaic_sdk.instrument.gym_patch.Instrumentation`.
2. While the patched ``AsyncVectorEnv`` runs the real constructor
   (:func:`exported_to_processes`), each ``multiprocessing`` process that thread starts
   starts with the variables in ``os.environ`` and ``PYTHONPATH`` led by the directory that
   holds only our ``sitecustomize`` (:func:`exported`); both are restored as soon as the
   start returns. The env thunk the constructor calls in this process, and other threads,
   see none of it. A child forked meanwhile (the ``fork`` start method) drops them at once:
   it has the patch in memory.
3. ``sitecustomize`` in a new interpreter calls :func:`subprocess_variables`, which removes
   the variables and the directory from its environment before anything else (so the env
   subprocess's own children start clean) and patches gymnasium only in a ``multiprocessing``
   child (``spawn``) or fork server (``forkserver``); the resource tracker that
   ``multiprocessing`` may start in the same moment is left alone. The patched code in the env
   subprocess passes the variables on to the env subprocesses *it* starts, the same way.
   A worker may name a function of its own (``setup``, ``module:function``), called there
   with the instrumentation before it is installed (the CleanRL worker's gymnasium 0.29
   layer and env families); its own variables share the prefix (:data:`PREFIX`).

Another thread that starts a process at the very moment of step 2 (the environment is shared
by the whole process) may pass the variables on: that process is not patched unless it is a
``multiprocessing`` child, and it removes them from its own environment.
"""

from __future__ import annotations

import multiprocessing.process
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Every variable of the patch starts with this (a worker's own ones too): all are consumed.
PREFIX = "MOSAIC_INSTRUMENT_"
SWITCH = PREFIX + "SITECUSTOMIZE"
#: ``module:function`` called in the env subprocess with (instrumentation, variables).
SETUP = PREFIX + "SETUP"
SITE_DIR = Path(__file__).resolve().parent / "_site"


def child_variables(
    *,
    render_frames: bool,
    owner_pid: int,
    steps: bool = True,
    step_every: int = 20,
    step_rate: float | None = None,
    setup: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The ``MOSAIC_INSTRUMENT_*`` variables that switch the patch on in an env subprocess;
    ``extra``: a worker's own (each name must start with :data:`PREFIX`)."""
    variables = {
        SWITCH: "1",
        PREFIX + "RENDER": "1" if render_frames else "0",
        PREFIX + "PID": str(owner_pid),
        PREFIX + "STEPS": "1" if steps else "0",
        PREFIX + "STEP_EVERY": str(step_every),
        PREFIX + "STEP_RATE": str(step_rate or 0),
    }
    if setup:
        variables[SETUP] = setup
    for key, value in (extra or {}).items():
        if not key.startswith(PREFIX):
            raise ValueError(f"{key}: a variable of the env-subprocess patch starts with {PREFIX}")
        variables[key] = str(value)
    return variables


def _without_site_dir(path: str) -> list[str]:
    return [p for p in path.split(os.pathsep) if p and Path(p).resolve() != SITE_DIR]


def site_pythonpath(environ: Mapping[str, str]) -> str:
    """``environ``'s ``PYTHONPATH`` led by the directory that holds only our
    ``sitecustomize`` (nothing else on it can shadow a module)."""
    return os.pathsep.join([str(SITE_DIR), *_without_site_dir(environ.get("PYTHONPATH", ""))])


def subprocess_environment(environ: Mapping[str, str], **options: object) -> dict[str, str]:
    """What a new interpreter needs in its environment to be patched: :func:`child_variables`
    (``options`` are its arguments) and :func:`site_pythonpath`."""
    return {"PYTHONPATH": site_pythonpath(environ), **child_variables(**options)}  # type: ignore[arg-type]


# -- the export window --------------------------------------------------------------------
_lock = threading.Lock()
_depth = 0
_saved: dict[str, str | None] | None = None


def _restore(saved: Mapping[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextmanager
def exported(variables: Mapping[str, str]) -> Iterator[None]:
    """``variables`` and our ``PYTHONPATH`` in ``os.environ`` for the duration of the block,
    then the environment as it was (nested and concurrent blocks share one export)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            env = {**variables, "PYTHONPATH": site_pythonpath(os.environ)}
            _saved = {key: os.environ.get(key) for key in env}
            os.environ.update(env)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                _restore(_saved)
                _saved = None


def _after_fork_in_child() -> None:
    """A process forked inside the window keeps the patch in memory, not the variables."""
    global _lock, _depth, _saved
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _saved is not None:
        _restore(_saved)
    _saved, _depth = None, 0
    _starting.variables = None


os.register_at_fork(after_in_child=_after_fork_in_child)

_starting = threading.local()
_start_patch_users = 0


def _start(self: Any) -> None:
    """``BaseProcess.start`` while some thread builds an ``AsyncVectorEnv``: a process that
    thread starts gets the variables; any other start is untouched."""
    variables = getattr(_starting, "variables", None)
    if variables is None:
        return _original_start(self)
    with exported(variables):
        return _original_start(self)


_original_start: Callable[[Any], None] = multiprocessing.process.BaseProcess.start


@contextmanager
def exported_to_processes(variables: Mapping[str, str]) -> Iterator[None]:
    """Every ``multiprocessing`` process this thread starts inside the block starts with
    ``variables`` and our ``PYTHONPATH`` (see :func:`exported`); nothing else this thread
    does meanwhile (the vector env calls an env thunk here too) sees them."""
    global _start_patch_users
    base = multiprocessing.process.BaseProcess
    with _lock:
        if _start_patch_users == 0:
            base.start = _start  # type: ignore[method-assign,assignment]
        _start_patch_users += 1
    previous = getattr(_starting, "variables", None)
    _starting.variables = dict(variables)
    try:
        yield
    finally:
        _starting.variables = previous
        with _lock:
            _start_patch_users -= 1
            if _start_patch_users == 0:
                base.start = _original_start  # type: ignore[method-assign,assignment]


# -- in the new interpreter ---------------------------------------------------------------
def consume(environ: MutableMapping[str, str]) -> dict[str, str]:
    """Remove the ``MOSAIC_INSTRUMENT_*`` variables and our directory on ``PYTHONPATH`` from
    ``environ``; returns the variables removed."""
    taken = {key: environ.pop(key) for key in [k for k in environ if k.startswith(PREFIX)]}
    if "PYTHONPATH" in environ:
        parts = _without_site_dir(environ["PYTHONPATH"])
        if parts:
            environ["PYTHONPATH"] = os.pathsep.join(parts)
        else:
            del environ["PYTHONPATH"]
    return taken


def started_by_multiprocessing(argv: Sequence[str]) -> bool:
    """Whether the interpreter's command line (``sys.orig_argv``) is a ``multiprocessing``
    child started with ``spawn`` or the ``forkserver`` server: how ``AsyncVectorEnv`` workers
    come to life (``fork`` needs no new interpreter)."""
    return "--multiprocessing-fork" in argv or any(
        arg.startswith("from multiprocessing.forkserver import") for arg in argv
    )


def subprocess_variables(
    environ: MutableMapping[str, str], argv: Sequence[str] | None = None
) -> dict[str, str] | None:
    """Run by ``sitecustomize`` at start-up: consume the variables (see the module docstring).
    Returns them when this is an env subprocess to patch
    (:func:`~mosaic_sdk.instrument.gym_patch.instrument_subprocess`); None when the switch is
    off, this is the worker process itself, or not a ``multiprocessing`` child."""
    if SWITCH not in environ:
        return None
    variables = consume(environ)
    if variables[SWITCH] != "1":
        return None
    owner = int(variables.get(PREFIX + "PID", "0") or 0)
    if owner == os.getpid():
        return None
    if not started_by_multiprocessing(sys.orig_argv if argv is None else argv):
        return None
    return variables


__all__ = [
    "PREFIX",
    "SETUP",
    "SITE_DIR",
    "SWITCH",
    "child_variables",
    "consume",
    "exported",
    "exported_to_processes",
    "site_pythonpath",
    "started_by_multiprocessing",
    "subprocess_environment",
    "subprocess_variables",
]
