"""The patches an algorithm script runs under: every env it makes reports telemetry and frames.

:class:`Instrumentation` replaces, while installed, ``gymnasium.make`` and
``gymnasium.vector.SyncVectorEnv`` / ``AsyncVectorEnv`` (CleanRL scripts look these names up
when they call them, so the unmodified script picks them up):

- ``gymnasium.make`` asks for ``render_mode="rgb_array"`` when FastLane is on and the script
  did not choose a render mode, and wraps the env with
  :class:`~mosaic_worker_cleanrl.env_telemetry.EpisodeTelemetryWrapper`;
- a vector env is built from the (compatibility or original) class, then wrapped through the
  SDK's ``mosaic_fastlane_wrap_env`` hook as a whole (``single`` shows env ``slot``, ``grid``
  tiles the first ``grid_limit`` envs); an env made outside a vector env is wrapped through
  the hook on its own. A transparent outer layer keeps attributes such as ``envs.envs``.

With ``compat=True`` the gymnasium 0.29 compatibility layer
(:mod:`mosaic_worker_cleanrl.gym_compat`) is installed underneath.
:meth:`Instrumentation.uninstall` restores everything and closes the
FastLane wrappers the script left open (their shared memory is released).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium

from mosaic_worker_cleanrl.curriculum_remote import register_remote
from mosaic_worker_cleanrl.env_families import register_env_families
from mosaic_worker_cleanrl.env_telemetry import (
    EpisodeTelemetryWrapper,
    ForwardingVectorWrapper,
    TelemetrySink,
    VectorTelemetryRelay,
)
from mosaic_worker_cleanrl.gym_compat import install_compat
from mosaic_worker_cleanrl.legacy_gym import put_on_path
from mosaic_worker_cleanrl.subprocess_patch import exported_to_processes

FastLaneHook = Callable[[Any, str, dict[str, Any]], Any]


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
        compat: bool = False,
        render_frames: bool | None = None,
        log: Callable[[str], None] | None = None,
        child_variables: Mapping[str, str] | None = None,
    ) -> None:
        self.sink = sink
        self.run_id = run_id
        self.fastlane_settings = fastlane_settings
        self.fastlane_hook = fastlane_hook
        self.compat = compat
        self.render_frames = self.fastlane_on if render_frames is None else render_frames
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        #: What switches the patch on in env subprocesses (``subprocess_patch.child_variables``);
        #: exported only while an ``AsyncVectorEnv`` starts its workers. None: not at all.
        self.child_variables = dict(child_variables) if child_variables is not None else None
        self._undo: list[Callable[[], None]] = []
        self._local = threading.local()
        self._env_counter = 0
        self.fastlane_wrapped: list[Any] = []
        self.original_make = gymnasium.make
        self._fastlane_warned = False

    @property
    def fastlane_on(self) -> bool:
        return self.fastlane_settings is not None and self.fastlane_hook is not None

    # -- FastLane --------------------------------------------------------------------------
    def _fastlane(self, env: Any) -> Any:
        if not self.fastlane_on or os.getpid() != self.sink.owner_pid:
            return env  # env subprocesses never write frames: the worker process does
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
        env = EpisodeTelemetryWrapper(env, self.sink, index, str(env_id))
        if position is None:  # a standalone env: FastLane on its own
            env = self._fastlane(env)
        return env

    def _vector_factory(self, base: type, asynchronous: bool) -> type:
        inst = self

        def build(env_fns: Any, *args: Any, **kwargs: Any) -> Any:
            env_fns = list(env_fns)
            if not asynchronous:
                inst._local.position = 0
                try:
                    envs = base(env_fns, *args, **kwargs)
                finally:
                    inst._local.position = None
            else:
                if inst.child_variables is None:
                    envs = base(env_fns, *args, **kwargs)
                else:  # its workers, and only they, start with the patch switched on
                    with exported_to_processes(inst.child_variables):
                        envs = base(env_fns, *args, **kwargs)
                envs = VectorTelemetryRelay(envs, inst.sink)
            envs = inst._fastlane(envs)
            return ForwardingVectorWrapper(envs)

        name = "SyncVectorEnv" if not asynchronous else "AsyncVectorEnv"
        return _VectorFactoryMeta(name, (), {"_build": staticmethod(build), "_base": base})

    # -- install / uninstall --------------------------------------------------------------
    def install(self) -> Instrumentation:
        if self.compat:
            self._undo.append(install_compat())
        vector = gymnasium.vector
        saved = (gymnasium.make, vector.SyncVectorEnv, vector.AsyncVectorEnv)
        self.original_make = saved[0]
        sync_base, async_base = saved[1], saved[2]
        gymnasium.make = self.make  # type: ignore[assignment]
        vector.SyncVectorEnv = self._vector_factory(sync_base, False)  # type: ignore[misc]
        vector.AsyncVectorEnv = self._vector_factory(async_base, True)  # type: ignore[misc]

        def restore() -> None:
            gymnasium.make = saved[0]  # type: ignore[assignment]
            vector.SyncVectorEnv, vector.AsyncVectorEnv = saved[1], saved[2]  # type: ignore[misc]

        self._undo.append(restore)
        return self

    def close_fastlane(self) -> None:
        """Close every FastLane-wrapped env (idempotent; releases shared memory)."""
        while self.fastlane_wrapped:
            env = self.fastlane_wrapped.pop()
            try:
                env.close()
            except Exception as exc:  # noqa: BLE001 - closing twice or a dead subprocess
                self._log(f"warning: closing a FastLane env: {type(exc).__name__}: {exc}")

    def uninstall(self) -> None:
        self.close_fastlane()
        while self._undo:
            self._undo.pop()()

    def __enter__(self) -> Instrumentation:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()


def instrument_subprocess(
    variables: Mapping[str, str], environ: Mapping[str, str]
) -> Instrumentation:
    """Patch gymnasium in an env subprocess, from the variables the worker handed it
    (:func:`mosaic_worker_cleanrl.subprocess_patch.subprocess_variables`)."""
    owner = int(variables.get("CLEANRL_WORKER_PID", "0") or 0)
    compat = variables.get("CLEANRL_WORKER_GYM_COMPAT") == "1"
    if compat:  # the script's `import gym` in this process too (unpickling its env thunks)
        put_on_path()
    register_env_families()  # a spawned env subprocess starts with gymnasium's ids only

    rate = float(variables.get("CLEANRL_WORKER_STEP_RATE", "0") or 0)
    every = int(variables.get("CLEANRL_WORKER_STEP_EVERY", "20") or 20)
    steps = variables.get("CLEANRL_WORKER_STEPS", "1") == "1"
    sink = TelemetrySink(
        None, steps=steps, step_every=every, step_rate=rate or None, owner_pid=owner
    )
    inst = Instrumentation(
        sink,
        environ.get("MOSAIC_RUN_ID", "subprocess"),
        compat=compat,
        render_frames=variables.get("CLEANRL_WORKER_RENDER") == "1",
        child_variables=variables,
    )
    inst.install()
    stage_file = variables.get("CLEANRL_WORKER_CURRICULUM")
    if stage_file:  # the curriculum env id, reading the worker's stage file
        register_remote(stage_file, inst.original_make)
    return inst


__all__ = ["Instrumentation", "instrument_subprocess"]
