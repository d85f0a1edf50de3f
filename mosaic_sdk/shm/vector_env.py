"""``ShmVectorEnv``: a ``gymnasium.vector.VectorEnv`` whose envs run behind the shm transport.

Drop-in for ``SyncVectorEnv`` / ``AsyncVectorEnv``::

    envs = ShmVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
    obs, infos = envs.reset(seed=42)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

or ``ShmVectorEnv("CartPole-v1", num_envs=8, num_workers=2)``, or
``ShmVectorEnv.attach(name)`` to drive an engine that is already serving a segment.

It takes gymnasium's arguments (``copy``, ``observation_mode``, ``autoreset_mode``) and follows
gymnasium's rules: the three autoreset modes, per-step infos (``final_obs``/``final_info``
under ``SAME_STEP``), seeding, ``call``/``get_attr``/``set_attr``, space consistency checks
and ``ClosedEnvironmentError``. Observations of fixed-size spaces travel in shared memory in
their own dtypes; other spaces and step infos travel pickled through the side areas (see
``docs/guides/shm_transport.md``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from mosaic_sdk.shm import spaces
from mosaic_sdk.shm import vector_rules as rules
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.host import EnvHostHandle, launch_env_host
from mosaic_sdk.shm.mapping import SegmentCorruptedError
from mosaic_sdk.shm.packing import RowCodec
from mosaic_sdk.shm.side import SideArea
from mosaic_sdk.shm.sync import TransportError

DEFAULT_SIDE_SIZE = 1 << 20


def _described(schema: Any) -> dict[str, Any]:
    """The engine's spaces: pickled (Python engines), else rebuilt from the wire specs."""
    if schema.spaces_pickle:
        return dict(pickle.loads(schema.spaces_pickle))
    if schema.observation_space is None or schema.action_space is None:
        raise ValueError(
            f"the engine describes its spaces neither pickled nor as wire specs "
            f"(observation_space={schema.observation_space}, action_space="
            f"{schema.action_space}); it must send one of them in GetSchemaResponse"
        )
    obs = spaces.from_spec(schema.observation_space)
    act = spaces.from_spec(schema.action_space)
    return {
        "observation_spaces": [obs] * schema.num_envs,
        "action_spaces": [act] * schema.num_envs,
        "metadata": dict(schema.metadata),
        "render_mode": "rgb_array" if schema.image else None,
        "autoreset_mode": AutoresetMode.NEXT_STEP.value,
    }


class ShmVectorEnv(VectorEnv):  # type: ignore[misc]
    """Vectorised envs stepped in lock-step over shared memory (see the module docstring).

    ``env_fns``: env constructors, or an env id with ``num_envs``. ``num_workers`` host
    processes each step a slice of the envs; ``context`` is their start method (``"fork"``,
    ``"forkserver"``, ``"spawn"``; default the platform's). ``copy=False`` returns
    observations that are views into shared memory (overwritten by the next step).
    ``render_images=True`` fills the image region so that ``render()`` returns every env's
    frame without a command round trip. ``side_size``: bytes per side area (per worker and
    direction) for step infos and observations of spaces without a fixed row.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env[Any, Any]]] | str,
        num_envs: int | None = None,
        *,
        copy: bool = True,
        observation_mode: str | tuple[gym.Space[Any], gym.Space[Any]] = "same",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        num_workers: int = 1,
        context: str | None = None,
        name: str | None = None,
        render_images: bool = False,
        env_kwargs: dict[str, Any] | None = None,
        spin: float | None = None,
        timeout: float | None = None,
        side_size: int = DEFAULT_SIDE_SIZE,
    ) -> None:
        self._owner_pid = os.getpid()
        self._host: EnvHostHandle | None = None
        self._client: SharedMemoryClient | None = None
        self.closed = False
        rules.check_observation_mode(observation_mode)
        mode = AutoresetMode(autoreset_mode)
        self._host = launch_env_host(
            env_fns,
            num_envs,
            num_workers=num_workers,
            name=name,
            render_images=render_images,
            env_kwargs=env_kwargs,
            context=context,
            spin=spin,
            autoreset_mode=mode.value,
            side_size=side_size,
        )
        try:
            reports = [pickle.loads(self._host.ready[w]) for w in sorted(self._host.ready)]
            obs_spaces = [s for r in reports for s in r["observation_spaces"]]
            act_spaces = [s for r in reports for s in r["action_spaces"]]
            client = SharedMemoryClient(self._host.name, timeout=timeout, spin=spin)
            self._setup(client, copy, observation_mode, obs_spaces, act_spaces)
        except BaseException:
            if self._client is not None:
                self._client.close(shutdown_engine=True)
                self._client = None
            self._host.close()
            self._host = None
            self.closed = True
            raise

    @classmethod
    def attach(
        cls,
        name: str | None = None,
        *,
        copy: bool = True,
        observation_mode: str | tuple[gym.Space[Any], gym.Space[Any]] = "same",
        timeout: float | None = None,
    ) -> ShmVectorEnv:
        """Drive an engine already serving segment ``name`` (or ``$MOSAIC_SHM_NAME``).

        A Python engine (``launch_env_host``) sends its spaces pickled: attach only to engines
        you trust. An engine in another language describes them as ``SpaceSpec`` wire specs
        and packs rows as ``mosaic_sdk.shm.packing`` does; it autoresets as ``NEXT_STEP``.
        """
        self = cls.__new__(cls)
        self._owner_pid = os.getpid()
        self._host = None
        self._client = None
        self.closed = False
        rules.check_observation_mode(observation_mode)
        self._setup(SharedMemoryClient(name, timeout=timeout), copy, observation_mode, None, None)
        return self

    def _setup(
        self,
        client: SharedMemoryClient,
        copy: bool,
        observation_mode: Any,
        obs_spaces: list[gym.Space[Any]] | None,
        act_spaces: list[gym.Space[Any]] | None,
    ) -> None:
        self._client = client
        schema = client.get_schema()
        described = _described(schema)
        self.num_envs = schema.num_envs
        obs_spaces = obs_spaces or described["observation_spaces"]
        act_spaces = act_spaces or described["action_spaces"]
        self.single_action_space = act_spaces[0]
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        single_obs, batched_obs = rules.observation_spaces(observation_mode, obs_spaces)
        self.single_observation_space, self.observation_space = single_obs, batched_obs
        rules.check_consistency(
            observation_mode, single_obs, self.single_action_space, obs_spaces, act_spaces
        )
        self.observation_mode = observation_mode
        self.autoreset_mode = AutoresetMode(described["autoreset_mode"])
        self.metadata = dict(described["metadata"])
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = described["render_mode"]
        self.copy = copy
        self.schema = schema
        self._obs_codec = RowCodec(single_obs)
        self._act_codec = RowCodec(self.single_action_space)
        self._obs_views = self._obs_codec.leaf_views(client.obs) if self._obs_codec.fixed else []
        self._act_views = (
            self._act_codec.leaf_views(client.actions) if self._act_codec.fixed else []
        )
        self._env_obs: list[Any] = [None] * self.num_envs  # observations without a fixed row
        self._slices = [client._seg.worker_slice(w) for w in range(schema.num_workers)]
        self._to_workers = [SideArea(to_worker) for to_worker, _ in client.side]
        self._from_workers = [SideArea(back) for _, back in client.side]
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)

    # -- properties ---------------------------------------------------------------------------
    @property
    def client(self) -> SharedMemoryClient:
        """The underlying transport client (views: ``client.obs``, ``client.rewards``, ...)."""
        self._assert_is_running()
        assert self._client is not None
        return self._client

    @property
    def segment_name(self) -> str:
        """Name of the shared-memory segment."""
        return self.client.name

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """Each sub-env's ``np_random_seed`` (as ``SyncVectorEnv`` returns it)."""
        return self.get_attr("np_random_seed")

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """Each sub-env's ``np_random`` (copies: the generators live in the host processes)."""
        return self.get_attr("np_random")

    def _assert_is_running(self) -> None:
        if self.closed or self._client is None:
            raise ClosedEnvironmentError(
                f"Trying to operate on `{type(self).__name__}`, after a call to `close()`."
            )

    def _failure(self, exc: Exception) -> Exception:
        if isinstance(exc, SegmentCorruptedError):
            return exc  # this side saw it: no host report can say more
        report = self._host.failure(wait=1.0) if self._host is not None else None
        if report:
            text = f"an env host process failed: {report.strip()}"
            if report.startswith(SegmentCorruptedError.__name__):
                return SegmentCorruptedError(text)
            return RuntimeError(text)
        return exc

    # -- gymnasium API ------------------------------------------------------------------------
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env (or those in ``options["reset_mask"]``), seeded like gymnasium."""
        client = self.client
        seeds = rules.reset_seeds(seed, self.num_envs)
        ids = list(range(self.num_envs))
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = rules.reset_mask(options, self.num_envs)
            ids = [int(i) for i in np.flatnonzero(mask)]
            seeds = [seeds[i] for i in ids]
        try:
            result = client.reset_detailed(ids, seeds, options)
        except TransportError as exc:
            raise self._failure(exc) from exc
        self._autoreset[ids] = False
        infos: dict[str, Any] = {}
        for i, info in zip(ids, result["infos"], strict=True):
            infos = self._add_info(infos, info, i)
        if result["obs"] is not None:
            for i, obs in zip(ids, result["obs"], strict=True):
                self._env_obs[i] = obs
        return self._observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env, autoresetting as ``autoreset_mode`` says."""
        client = self.client
        if self._act_codec.fixed:
            self._act_codec.write_batch(self._act_views, actions)
        else:
            self._write_actions_aside(client, actions)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            client.resets[:] = self._autoreset
        try:
            client.step()
        except TransportError as exc:
            raise self._failure(exc) from exc
        terminations = client.terminated.astype(np.bool_)
        truncations = client.truncated.astype(np.bool_)
        rewards = client.rewards.astype(np.float64)  # float32 in the lrbc layout
        infos = self._read_aside(client)
        self._autoreset = terminations | truncations
        return self._observations(), rewards, terminations, truncations, infos

    def _write_actions_aside(self, client: SharedMemoryClient, actions: Any) -> None:
        items = list(iterate(self.action_space, actions))
        if len(items) != self.num_envs:
            raise ValueError(f"got {len(items)} actions for {self.num_envs} envs")
        if not self._to_workers:
            raise ValueError(
                f"{self.single_action_space} actions have no fixed row and this engine has no "
                "side areas to carry them; it must be created with side_size > 0"
            )
        for (begin, end), area in zip(self._slices, self._to_workers, strict=True):
            area.write(bytes(cloudpickle.dumps(items[begin:end])))

    def _read_aside(self, client: SharedMemoryClient) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        error: dict[str, Any] | None = None
        # an engine without side areas (side_size=0) has no step infos to give
        for (begin, _), area in zip(self._slices, self._from_workers, strict=False):
            data = area.read()
            if data is None:
                continue
            blob = pickle.loads(data)
            if "error" in blob:
                error = error or blob
                continue
            for i, added in blob.get("infos", {}).items():
                for info in added:
                    infos = self._add_info(infos, info, i)
            for k, obs in enumerate(blob.get("obs") or []):
                self._env_obs[begin + k] = obs
        if error is not None:
            exc = error["error"]
            if hasattr(exc, "add_note"):
                exc.add_note(f"raised in an env host process:\n{error['traceback']}")
            raise exc
        return infos

    def _observations(self) -> Any:
        if self._obs_codec.fixed:
            return self._obs_codec.batch(self._obs_views, self.copy)
        out = create_empty_array(self.single_observation_space, self.num_envs, fn=np.zeros)
        return concatenate(self.single_observation_space, self._env_obs, out)  # type: ignore[arg-type]

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``get_wrapper_attr(name)`` of every env, called with the arguments when callable."""
        try:
            return tuple(self.client.call(name, *args, **kwargs))
        except TransportError as exc:
            raise self._failure(exc) from exc

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set attribute ``name`` of every env (one value for all, or one per env)."""
        values = rules.set_attr_values(values, self.num_envs)
        self.client.set_attr(name, values)

    def render(self) -> tuple[Any, ...] | None:
        """Each env's frame: from the image region when there is one, else by a call."""
        image = self.client.image
        if image is None:
            return self.call("render")
        return tuple(image[i].copy() for i in range(self.num_envs))

    def close_extras(self, **kwargs: Any) -> None:
        """Shut the engine down (when we launched it), detach and unlink the segment."""
        if os.getpid() != getattr(self, "_owner_pid", os.getpid()):
            return  # a forked child never touches its parent's envs
        client, self._client = self._client, None
        self._obs_views, self._act_views = [], []
        self._to_workers, self._from_workers = [], []
        try:
            if client is not None:
                client.close(shutdown_engine=self._host is not None)
        finally:
            if self._host is not None:
                self._host.close()
                self._host = None

    def __del__(self) -> None:
        if getattr(self, "closed", True) or os.getpid() != getattr(self, "_owner_pid", -1):
            return
        try:
            self.close()
        except Exception:
            pass
