"""The patches a script runs under: every env it makes reports telemetry and frames.

:class:`Instrumentation` replaces, while installed, ``gymnasium.make`` (also where
``gymnasium.make_vec`` calls it), ``gymnasium.make_vec`` and
``gymnasium.vector.SyncVectorEnv`` / ``AsyncVectorEnv`` (scripts look these names up when
they call them, so the unmodified script picks them up):

- ``gymnasium.make`` asks for ``render_mode="rgb_array"`` when frames are forced
  (``render_frames``) and the script did not choose a render mode, and wraps the env with
  :class:`~mosaic_sdk.instrument.env_telemetry.EpisodeTelemetryWrapper`;
- a vector env is built from the (original, or what ``patches`` put there) class, then
  wrapped for FastLane as a whole (``single`` shows env ``slot``, ``grid`` tiles the first
  ``grid_limit`` envs); an env made outside a vector env is wrapped on its own. A transparent
  outer layer keeps attributes such as ``envs.envs`` and passes the control safe point;
- ``gymnasium.make_vec`` of an env with a ``vector_entry_point`` (an env that is a vector env
  of its own, not made of ``gymnasium.make`` envs) is watched as a whole
  (:class:`~mosaic_sdk.instrument.env_telemetry.VectorEpisodeTelemetry`).

FastLane: ``fastlane_hook(env, run_id, settings)`` wraps an env when ``fastlane_settings`` is
given: every env (``render_frames``, rendering is asked for), or with ``render_frames=False``
only the envs the script made with ``render_mode="rgb_array"`` itself.

``patches`` (functions that install something and return its undo) are installed first,
underneath (the CleanRL worker's gymnasium 0.29 layer). :meth:`Instrumentation.uninstall`
reports the episodes still running as unfinished, closes what the script left open (their
shared memory is released) and restores everything.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import gymnasium.envs.registration as registration

from mosaic_sdk.instrument.env_telemetry import (
    EpisodeTelemetryWrapper,
    ForwardingVectorWrapper,
    TelemetrySink,
    VectorEpisodeTelemetry,
    VectorTelemetryRelay,
)
from mosaic_sdk.instrument.subprocess_patch import PREFIX, SETUP, exported_to_processes

FastLaneHook = Callable[[Any, str, dict[str, Any]], Any]
#: Installs something and returns the function that undoes it.
Patch = Callable[[], Callable[[], None]]


class _VectorFactoryMeta(type):
    """Calling the class builds an instrumented vector env; ``isinstance`` still works."""

    _build: Callable[..., Any]
    _base: type

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._build(*args, **kwargs)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(getattr(obj, "unwrapped", obj), cls._base)


class Instrumentation:
    """Installs the patches for one run (see the module docstring)."""

    def __init__(
        self,
        sink: TelemetrySink,
        run_id: str,
        *,
        fastlane_settings: dict[str, Any] | None = None,
        fastlane_hook: FastLaneHook | None = None,
        patches: Sequence[Patch] = (),
        render_frames: bool | None = None,
        log: Callable[[str], None] | None = None,
        child_variables: Mapping[str, str] | None = None,
    ) -> None:
        self.sink = sink
        self.run_id = run_id
        self.fastlane_settings = fastlane_settings
        self.fastlane_hook = fastlane_hook
        self.patches = list(patches)
        self.render_frames = self.fastlane_on if render_frames is None else render_frames
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        #: What switches the patch on in env subprocesses (``subprocess_patch.child_variables``);
        #: exported only while an ``AsyncVectorEnv`` starts its workers. None: not at all.
        self.child_variables = dict(child_variables) if child_variables is not None else None
        self._undo: list[Callable[[], None]] = []
        self._local = threading.local()
        self._env_counter = 0
        self.fastlane_wrapped: list[Any] = []
        #: The envs handed to the script (the outermost layer of each), closed at the end.
        self.made: weakref.WeakSet[Any] = weakref.WeakSet()
        self.original_make = gymnasium.make
        self.original_make_vec = gymnasium.make_vec
        self._async_base: type = gymnasium.vector.AsyncVectorEnv
        self._fastlane_warned = False

    @property
    def fastlane_on(self) -> bool:
        return self.fastlane_settings is not None and self.fastlane_hook is not None

    # -- FastLane --------------------------------------------------------------------------
    def _fastlane(self, env: Any) -> Any:
        if not self.fastlane_on or os.getpid() != self.sink.owner_pid:
            return env  # env subprocesses never write frames: the script's process does
        if not self.render_frames and getattr(env, "render_mode", None) != "rgb_array":
            return env  # frames only of the envs that render them
        assert self.fastlane_hook is not None and self.fastlane_settings is not None
        try:
            wrapped = self.fastlane_hook(env, self.run_id, dict(self.fastlane_settings))
        except Exception as exc:  # noqa: BLE001 - frames are optional, training is not
            if not self._fastlane_warned:
                self._log(f"warning: FastLane disabled for this env: {type(exc).__name__}: {exc}")
                self._fastlane_warned = True
            return env
        if wrapped is None:
            if not self._fastlane_warned:
                self._log(
                    "warning: FastLane is on but no mosaic_fastlane_wrap_env provider answered"
                )
                self._fastlane_warned = True
            return env
        self.fastlane_wrapped.append(wrapped)
        return wrapped

    # -- the patched callables ------------------------------------------------------------
    def make(self, id: Any, *args: Any, **kwargs: Any) -> Any:
        """The patched ``gymnasium.make``."""
        if self.render_frames and kwargs.get("render_mode") is None:
            kwargs["render_mode"] = "rgb_array"
        env = self.original_make(id, *args, **kwargs)
        env_id = getattr(id, "id", id)
        position = getattr(self._local, "position", None)
        if position is not None:
            index = position
            self._local.position = position + 1
        else:
            index = self._env_counter
        self._env_counter += 1
        standalone = position is None
        local = self.sink.local
        env = EpisodeTelemetryWrapper(
            env, self.sink, index, str(env_id), outermost=standalone and local
        )
        if standalone:  # FastLane on its own
            env = self._fastlane(env)
            if local:
                self.made.add(env)
        return env

    def make_vec(self, id: Any, *args: Any, **kwargs: Any) -> Any:
        """The patched ``gymnasium.make_vec``: sync and async modes go through the patched
        vector classes and ``make``; a ``vector_entry_point`` env is watched as a whole."""
        if self.render_frames and kwargs.get("render_mode") is None:
            kwargs["render_mode"] = "rgb_array"
        envs = self.original_make_vec(id, *args, **kwargs)
        if isinstance(envs, ForwardingVectorWrapper):
            return envs  # built by the patched vector classes: instrumented already
        sink = self.sink
        watched = VectorEpisodeTelemetry(envs, sink, str(getattr(id, "id", id)))
        outer = ForwardingVectorWrapper(self._fastlane(watched), self._safe_point())
        if sink.local:
            self.made.add(outer)
        return outer

    def _safe_point(self) -> Callable[[], None] | None:
        """What the outermost layer calls before each step (None in an env subprocess)."""
        sink = self.sink
        if not sink.local:
            return None

        def safe_point() -> None:
            check = sink.safe_point
            if check is not None:
                check()

        return safe_point

    def _vector_factory(self, base: type, asynchronous: bool) -> type:
        inst = self

        def build(env_fns: Any, *args: Any, **kwargs: Any) -> Any:
            env_fns = list(env_fns)
            if not asynchronous:
                saved = getattr(inst._local, "position", None)
                inst._local.position = 0
                try:
                    envs = base(env_fns, *args, **kwargs)
                finally:
                    inst._local.position = saved
            else:
                if inst.child_variables is None:
                    envs = base(env_fns, *args, **kwargs)
                else:  # its workers, and only they, start with the patch switched on
                    with exported_to_processes(inst.child_variables):
                        envs = base(env_fns, *args, **kwargs)
                envs = VectorTelemetryRelay(envs, inst.sink)
            envs = inst._fastlane(envs)
            outer = ForwardingVectorWrapper(envs, inst._safe_point())
            if inst.sink.local:
                inst.made.add(outer)
            return outer

        name = "SyncVectorEnv" if not asynchronous else "AsyncVectorEnv"
        return _VectorFactoryMeta(name, (), {"_build": staticmethod(build), "_base": base})

    # -- install / uninstall --------------------------------------------------------------
    def install(self) -> Instrumentation:
        for patch in self.patches:
            self._undo.append(patch())
        vector = gymnasium.vector
        saved = (
            gymnasium.make,
            registration.make,
            gymnasium.make_vec,
            registration.make_vec,
            vector.SyncVectorEnv,
            vector.AsyncVectorEnv,
        )
        self.original_make, self.original_make_vec = saved[0], saved[2]
        sync_base, async_base = saved[4], saved[5]
        self._async_base = async_base
        gymnasium.make = registration.make = self.make  # type: ignore[assignment]
        gymnasium.make_vec = registration.make_vec = self.make_vec  # type: ignore[assignment]
        vector.SyncVectorEnv = self._vector_factory(sync_base, False)  # type: ignore[misc,assignment]
        vector.AsyncVectorEnv = self._vector_factory(async_base, True)  # type: ignore[misc,assignment]

        def restore() -> None:
            gymnasium.make, registration.make = saved[0], saved[1]  # type: ignore[assignment]
            gymnasium.make_vec, registration.make_vec = saved[2], saved[3]  # type: ignore[assignment]
            vector.SyncVectorEnv, vector.AsyncVectorEnv = saved[4], saved[5]  # type: ignore[misc]

        self._undo.append(restore)
        return self

    def close_fastlane(self) -> None:
        """Close every FastLane-wrapped env (idempotent; releases shared memory)."""
        while self.fastlane_wrapped:
            env = self.fastlane_wrapped.pop()
            self._close(env, {})

    def close_made(self, *, hurry: bool = False) -> None:
        """Close every env handed to the script that is still open: its running episodes are
        reported as unfinished first. ``hurry`` (the run was cancelled or failed): an
        ``AsyncVectorEnv`` that may be mid-step is ended, not asked."""
        for env in list(self.made):
            self.made.discard(env)
            is_vector = isinstance(env, ForwardingVectorWrapper)
            if _closed(env, is_vector):
                continue
            is_async = is_vector and isinstance(env.unwrapped, self._async_base)
            self._close(env, {"terminate": True} if hurry and is_async else {})

    def _close(self, env: Any, kwargs: dict[str, Any]) -> None:
        try:
            env.close(**kwargs)
        except Exception as exc:  # noqa: BLE001 - closing twice or a dead subprocess
            self._log(f"warning: closing an env: {type(exc).__name__}: {exc}")

    def uninstall(self, *, hurry: bool = False) -> None:
        self.close_made(hurry=hurry)
        self.close_fastlane()
        while self._undo:
            self._undo.pop()()

    def __enter__(self) -> Instrumentation:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()


def _closed(env: Any, is_vector: bool) -> bool:
    """Whether the script closed ``env`` already (a vector env says so; an env's telemetry
    wrapper, under whatever wraps it, does)."""
    if is_vector:
        return bool(getattr(env, "closed", False))
    try:
        return bool(env.get_wrapper_attr("mosaic_closed"))
    except AttributeError:
        return False


def named_function(spec: str) -> Callable[..., Any]:
    """The function ``module:attribute`` names (imported)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{spec!r} is not of the form module:function")
    obj: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def instrument_subprocess(
    variables: Mapping[str, str], environ: Mapping[str, str]
) -> Instrumentation:
    """Patch gymnasium in an env subprocess, from the variables the script's process handed
    it (:func:`mosaic_sdk.instrument.subprocess_patch.subprocess_variables`): records travel
    back in ``info``, no frames are written here; the worker's ``setup`` function, if named,
    runs before the patch is installed."""
    owner = int(variables.get(PREFIX + "PID", "0") or 0)
    rate = float(variables.get(PREFIX + "STEP_RATE", "0") or 0)
    every = int(variables.get(PREFIX + "STEP_EVERY", "20") or 20)
    steps = variables.get(PREFIX + "STEPS", "1") == "1"
    sink = TelemetrySink(
        None, steps=steps, step_every=every, step_rate=rate or None, owner_pid=owner
    )
    inst = Instrumentation(
        sink,
        environ.get("MOSAIC_RUN_ID", "subprocess"),
        render_frames=variables.get(PREFIX + "RENDER") == "1",
        child_variables=variables,
    )
    setup = variables.get(SETUP)
    if setup:
        named_function(setup)(inst, variables)
    return inst.install()


__all__ = [
    "FastLaneHook",
    "Instrumentation",
    "Patch",
    "instrument_subprocess",
    "named_function",
]
