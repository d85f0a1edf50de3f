"""``ShmVectorEnv``: a ``gymnasium.vector.VectorEnv`` whose envs run behind the shm transport.

Drop-in for ``SyncVectorEnv`` / ``AsyncVectorEnv``::

    envs = ShmVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
    obs, infos = envs.reset(seed=42)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

or ``ShmVectorEnv("CartPole-v1", num_envs=8, num_workers=2)``, or
``ShmVectorEnv.attach(name)`` to drive an engine that is already serving a segment.

Autoreset is gymnasium's default, ``AutoresetMode.NEXT_STEP``: the step that ends an episode
returns its last observation with ``terminated``/``truncated`` set; the *next* ``step`` resets
that env (its action is ignored) and returns the first observation of the new episode with
reward 0 and both flags False. Infos: ``reset`` returns the envs' reset infos (they travel as
JSON through the command channel); ``step`` returns ``{}`` because per-step infos are not
carried by the hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from mosaic_sdk.shm import spaces
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.host import EnvHostHandle, launch_env_host
from mosaic_sdk.shm.sync import TransportError

try:  # gymnasium >= 1.1 names the autoreset modes; 1.0 only has next-step autoreset
    from gymnasium.vector import AutoresetMode

    NEXT_STEP: Any = AutoresetMode.NEXT_STEP
except ImportError:  # pragma: no cover - gymnasium 1.0
    NEXT_STEP = None


class ShmVectorEnv(VectorEnv):  # type: ignore[misc]
    """Vectorised envs stepped in lock-step over shared memory (see the module docstring).

    ``env_fns``: env constructors, or an env id with ``num_envs``. ``num_workers`` host
    processes each step a slice of the envs. ``copy=False`` returns observations that are views
    into shared memory (overwritten by the next step). ``render_images=True`` fills the image
    region so that ``render()`` returns every env's frame.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env[Any, Any]]] | str,
        num_envs: int | None = None,
        *,
        num_workers: int = 1,
        copy: bool = True,
        name: str | None = None,
        render_images: bool = False,
        env_kwargs: dict[str, Any] | None = None,
        context: str | None = None,
        spin: float | None = None,
        timeout: float | None = None,
    ) -> None:
        self._host: EnvHostHandle | None = None
        self._client: SharedMemoryClient | None = None
        self.closed = False
        self._host = launch_env_host(
            env_fns,
            num_envs,
            num_workers=num_workers,
            name=name,
            render_images=render_images,
            env_kwargs=env_kwargs,
            context=context,
            spin=spin,
        )
        try:
            self._setup(SharedMemoryClient(self._host.name, timeout=timeout, spin=spin), copy)
        except BaseException:
            self._host.close()
            raise

    @classmethod
    def attach(
        cls, name: str | None = None, *, copy: bool = True, timeout: float | None = None
    ) -> ShmVectorEnv:
        """Drive an engine already serving segment ``name`` (or ``$MOSAIC_SHM_NAME``)."""
        self = cls.__new__(cls)
        self._host = None
        self._client = None
        self.closed = False
        self._setup(SharedMemoryClient(name, timeout=timeout), copy)
        return self

    def _setup(self, client: SharedMemoryClient, copy: bool) -> None:
        self._client = client
        schema = client.get_schema()
        if schema.observation_space is None or schema.action_space is None:
            raise ValueError(f"engine of {client.name!r} did not describe its spaces")
        self.num_envs = schema.num_envs
        self.single_observation_space = spaces.from_spec(schema.observation_space)
        self.single_action_space = spaces.from_spec(schema.action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(schema.metadata)
        if NEXT_STEP is not None:
            self.metadata["autoreset_mode"] = NEXT_STEP
        self.render_mode = "rgb_array" if client.image is not None else None
        self.copy = copy
        self.schema = schema
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)

    @property
    def client(self) -> SharedMemoryClient:
        """The underlying transport client (views: ``client.obs``, ``client.rewards``, ...)."""
        if self._client is None:
            raise RuntimeError("ShmVectorEnv is closed")
        return self._client

    @property
    def segment_name(self) -> str:
        """Name of the shared-memory segment."""
        return self.client.name

    def _failure(self, exc: Exception) -> Exception:
        report = self._host.failure(wait=1.0) if self._host is not None else None
        if report:
            return RuntimeError(f"an env host process failed: {report.strip()}")
        return exc

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env (or those in ``options["reset_mask"]``), seeded like gymnasium."""
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"reset: {len(seeds)} seeds given for num_envs={n}")
        options = dict(options) if options else None
        ids = list(range(n))
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options.pop("reset_mask"), dtype=np.bool_)
            if mask.shape != (n,) or not mask.any():
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape ({n},) with a True"
                )
            ids = [int(i) for i in np.flatnonzero(mask)]
            seeds = [seeds[i] for i in ids]
            options = options or None
        try:
            _, env_infos = self.client.reset(ids, seeds, options)
        except TransportError as exc:
            raise self._failure(exc) from exc
        self._autoreset[ids] = False
        infos: dict[str, Any] = {}
        for i, info in zip(ids, env_infos, strict=True):
            infos = self._add_info(infos, info, i)
        return self._observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env; envs that finished on the previous step are reset instead."""
        client = self.client
        spaces.encode_batch(self.single_action_space, actions, client.actions)
        client.resets[:] = self._autoreset
        try:
            client.step()
        except TransportError as exc:
            raise self._failure(exc) from exc
        terminations = client.terminated.astype(np.bool_)
        truncations = client.truncated.astype(np.bool_)
        self._autoreset = terminations | truncations
        rewards = client.rewards.astype(np.float64)
        return self._observations(), rewards, terminations, truncations, {}

    def _observations(self) -> Any:
        return spaces.decode_batch(self.single_observation_space, self.client.obs, self.copy)

    def render(self) -> tuple[np.ndarray, ...] | None:
        """Each env's latest frame from the image region (needs ``render_images=True``)."""
        image = self.client.image
        if image is None:
            return None
        return tuple(image[i].copy() for i in range(self.num_envs))

    def close_extras(self, **kwargs: Any) -> None:
        """Shut the engine down (when we launched it), detach and unlink the segment."""
        client, self._client = self._client, None
        try:
            if client is not None:
                client.close(shutdown_engine=self._host is not None)
        finally:
            if self._host is not None:
                self._host.close()
                self._host = None

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:
                pass
