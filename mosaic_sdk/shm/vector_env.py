"""``ShmVectorEnv``: a ``gymnasium.vector.VectorEnv`` whose envs run behind the shm transport.

    envs = ShmVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)], batch_size=4)
    obs, infos = envs.reset(seed=42)  # or async_reset, then recv/send
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

``mode`` says where the envs run: host processes, this process, or ``"auto"`` (the faster).
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

from mosaic_sdk.shm import inline, spaces
from mosaic_sdk.shm import vector_rules as rules
from mosaic_sdk.shm.async_steps import RESET, AsyncSlices
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.host import EnvHostHandle, launch_env_host
from mosaic_sdk.shm.layout import MAX_WORKERS
from mosaic_sdk.shm.mapping import SegmentCorruptedError
from mosaic_sdk.shm.packing import RowCodec
from mosaic_sdk.shm.processes import cpus
from mosaic_sdk.shm.side import SideArea
from mosaic_sdk.shm.sync import TransportError
from mosaic_sdk.shm.vector_rules import AsyncUsageError

DEFAULT_SIDE_SIZE = 1 << 20
_NOTHING_SENT = (
    "recv() with no env stepping: call send(actions, env_ids) first (after reset() every env "
    "is idle; async_reset() makes recv() return the reset observations)"
)


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


def _auto_workers(num_envs: int, batch: int) -> int:
    """Host processes ``mode="auto"`` would start: one per CPU in lock-step, else what the
    batch allows (1 when no split fits: then only this process can serve such batches)."""
    if batch == num_envs:
        return min(cpus(), num_envs, MAX_WORKERS)
    try:
        return rules.num_workers(None, num_envs, batch)
    except ValueError:
        return 1


class ShmVectorEnv(VectorEnv):  # type: ignore[misc]
    """Vectorised envs stepped over shared memory, or in this process: a drop-in for
    ``SyncVectorEnv``/``AsyncVectorEnv`` that follows gymnasium's rules (or ``attach(name)``
    to an engine serving a segment). With ``batch_size < num_envs`` it steps asynchronously,
    as EnvPool does: ``async_reset``, then ``recv()`` the first done and ``send(actions,
    infos["env_id"])`` (``batch_size`` a multiple of the envs per worker).

    ``env_fns``: env constructors, or an env id with ``num_envs``. ``mode``: ``"process"``,
    ``"inline"`` or ``"auto"`` (``self.mode`` the choice, ``self.auto_choice`` its reason and
    figures: it races both modes on throwaway copies of the envs when the choice is close).
    ``num_workers`` host processes (default 1, or for async the most, up to 16, that divide
    the envs and the batch).
    ``copy=False`` returns views into shared memory (overwritten by the next step).
    ``render_images=True`` fills the image region ``render()`` reads. ``side_size``: bytes per
    side area, for infos and observations without a fixed row.
    """

    _host: EnvHostHandle | None = None
    _client: SharedMemoryClient | None = None
    _engine: Any = None
    auto_choice: inline.AutoChoice | None = None
    _pool: AsyncSlices | None = None
    closed = False

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env[Any, Any]]] | str,
        num_envs: int | None = None,
        *,
        copy: bool = True,
        observation_mode: str | tuple[gym.Space[Any], gym.Space[Any]] = "same",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        batch_size: int | None = None,
        mode: str = "auto",
        num_workers: int | None = None,
        context: str | None = None,
        name: str | None = None,
        render_images: bool = False,
        env_kwargs: dict[str, Any] | None = None,
        spin: float | None = None,
        timeout: float | None = None,
        side_size: int = DEFAULT_SIDE_SIZE,
    ) -> None:
        self._owner_pid = os.getpid()
        rules.check_observation_mode(observation_mode)
        reset_mode = AutoresetMode(autoreset_mode)
        fns = inline.constructors(env_fns, num_envs, env_kwargs, render_images)
        n = len(fns)
        batch = rules.batch_size(batch_size, n)
        process_only = num_workers is not None or name is not None or context is not None
        auto_workers = _auto_workers(n, batch)

        def race() -> dict[str, float]:
            return inline.race_modes(
                lambda m: ShmVectorEnv(
                    fns,
                    copy=copy,
                    observation_mode=observation_mode,
                    autoreset_mode=reset_mode,
                    mode=m,
                    num_workers=auto_workers if m == "process" else None,
                    render_images=render_images,
                    spin=spin,
                    timeout=timeout,
                    side_size=side_size,
                )
            )

        # lock-step only: the race times step(), not send/recv
        choice = inline.choose_mode(
            mode, fns, batch, auto_workers, process_only, race if batch == n else None
        )
        self.auto_choice = choice if mode == "auto" else None
        self.mode, self.step_cost = choice.mode, choice.step_cost
        self.batch_size = batch
        if self.mode == "inline":
            self._engine = engine = inline.InlineEngine(fns, reset_mode.value, render_images)
            try:
                self._setup(engine, copy, observation_mode, engine.described)
            except BaseException:
                self.close()
                raise
            return
        asynchronous = batch < n
        workers = rules.num_workers(num_workers, n, batch)
        if mode == "auto" and num_workers is None:
            workers = auto_workers
        self._host = launch_env_host(
            env_fns if isinstance(env_fns, str) else fns,
            num_envs,
            num_workers=workers,
            name=name,
            render_images=render_images,
            env_kwargs=env_kwargs,
            context=context,
            spin=spin,
            autoreset_mode=reset_mode.value,
            side_size=side_size,
            asynchronous=asynchronous,
        )
        try:
            reports = [pickle.loads(self._host.ready[w]) for w in sorted(self._host.ready)]
            obs_spaces = [s for r in reports for s in r["observation_spaces"]]
            act_spaces = [s for r in reports for s in r["action_spaces"]]
            client = SharedMemoryClient(self._host.name, timeout=timeout, spin=spin)
            self._client = client
            described = _described(client.get_schema())
            described["observation_spaces"] = obs_spaces
            described["action_spaces"] = act_spaces
            self._setup(client, copy, observation_mode, described)
        except BaseException:
            self.close()  # shuts the engine down, and stops and unlinks the hosts
            raise

    @classmethod
    def attach(
        cls,
        name: str | None = None,
        *,
        copy: bool = True,
        observation_mode: str | tuple[gym.Space[Any], gym.Space[Any]] = "same",
        timeout: float | None = None,
        batch_size: int | None = None,
    ) -> ShmVectorEnv:
        """Drive an engine already serving segment ``name`` (or ``$MOSAIC_SHM_NAME``).

        A Python engine sends its spaces pickled (attach only to engines you trust), others as
        ``SpaceSpec``s, packing rows as ``mosaic_sdk.shm.packing`` does (``NEXT_STEP``).
        ``batch_size``: for hosts launched ``asynchronous=True`` (default one worker's slice).
        """
        self = cls.__new__(cls)
        self._owner_pid = os.getpid()
        self.mode, self.step_cost, self.auto_choice = "process", None, None
        rules.check_observation_mode(observation_mode)
        client = SharedMemoryClient(name, timeout=timeout)
        self._client = client
        try:
            described = _described(client.get_schema())
            n = client.num_envs
            if described.get("asynchronous"):
                first = client._seg.worker_slice(0)
                per = first[1] - first[0]
                self.batch_size = rules.batch_size(per if batch_size is None else batch_size, n)
                rules.check_batch_fits(self.batch_size, n, client.layout.num_workers)
            else:
                self.batch_size = n
                if batch_size not in (None, n):
                    raise ValueError(
                        f"batch_size={batch_size}: the engine steps its {n} envs in lock-step; "
                        "launch it with asynchronous=True to receive smaller batches"
                    )
            self._setup(client, copy, observation_mode, described)
        except BaseException:
            self.close()
            raise
        return self

    def _setup(
        self,
        client: Any,
        copy: bool,
        observation_mode: Any,
        described: dict[str, Any],
    ) -> None:
        obs_spaces = described["observation_spaces"]
        act_spaces = described["action_spaces"]
        self.num_envs = len(obs_spaces)
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
        self._obs_codec = RowCodec(single_obs)
        self._act_codec = RowCodec(self.single_action_space)
        self._obs_views = self._obs_codec.leaf_views(client.obs)  # [] unless fixed
        self._act_views = self._act_codec.leaf_views(client.actions)
        self._env_obs: list[Any] = [None] * self.num_envs  # observations without a fixed row
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)
        # envs sent and not yet received, or reset by async_reset() and not yet received
        self._pending = np.zeros(self.num_envs, dtype=np.bool_)
        self._reset_queue: list[int] = []
        self._reset_infos: dict[str, Any] = {}
        self._last_ids = np.arange(self.num_envs, dtype=np.int64)
        self._was_reset = False
        self._lockstep_sent = False
        if isinstance(client, inline.InlineEngine):
            self.schema = None
            self._units = client.slices
            self._to_units: list[Any] = [a for a, _ in client.unit_areas]
            self._from_units: list[Any] = [b for _, b in client.unit_areas]
            self._whole = ([(0, self.num_envs)], [client.whole_areas[0]], [client.whole_areas[1]])
            self._unit_index = np.arange(self.num_envs)
            return
        self.schema = client.get_schema()
        seg = client._seg
        self._units = [seg.worker_slice(w) for w in range(self.schema.num_workers)]
        self._to_units = [SideArea(to_worker) for to_worker, _ in client.side]
        self._from_units = [SideArea(back) for _, back in client.side]
        self._whole = (self._units, self._to_units, self._from_units)
        self._unit_index = np.repeat(np.arange(len(self._units)), [e - b for b, e in self._units])
        if self.batch_size < self.num_envs:
            self._pool = AsyncSlices(seg, client._check, client.spin, client.timeout)

    # -- properties ---------------------------------------------------------------------------
    @property
    def client(self) -> SharedMemoryClient:
        """The underlying transport client (views: ``client.obs``, ``client.rewards``, ...)."""
        self._assert_is_running()
        if self._client is None:
            raise RuntimeError(
                f"ShmVectorEnv(mode={self.mode!r}) steps its envs in this process and has no "
                "transport client; create it with mode='process' to get one"
            )
        return self._client

    @property
    def _backend(self) -> Any:
        self._assert_is_running()
        return self._client if self._client is not None else self._engine

    @property
    def segment_name(self) -> str | None:
        """Name of the shared-memory segment (None when the envs run in this process)."""
        self._assert_is_running()
        return None if self._client is None else self._client.name

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]
        """Each sub-env's ``np_random_seed`` (as ``SyncVectorEnv`` returns it)."""
        return self.get_attr("np_random_seed")

    @property  # type: ignore[misc]
    def np_random(self) -> tuple[np.random.Generator, ...]:  # type: ignore[override]
        """Each sub-env's ``np_random`` (copies when the generators live in host processes)."""
        return self.get_attr("np_random")

    def _assert_is_running(self) -> None:
        if self.closed or (self._client is None and self._engine is None):
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
        """Reset every env (or those in ``options["reset_mask"]``), seeded like gymnasium;
        envs still stepping from ``send()`` are waited for and their results dropped."""
        backend = self._backend
        seeds = rules.reset_seeds(seed, self.num_envs)
        ids = list(range(self.num_envs))
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = rules.reset_mask(options, self.num_envs)
            ids = [int(i) for i in np.flatnonzero(mask)]
            seeds = [seeds[i] for i in ids]
        self._drain()
        try:
            result = backend.reset_detailed(ids, seeds, options)
        except TransportError as exc:
            raise self._failure(exc) from exc
        self._autoreset[ids] = False
        self._was_reset = True
        self._reset_queue = []
        self._last_ids = np.arange(self.num_envs, dtype=np.int64)
        infos: dict[str, Any] = {}
        for i, info in zip(ids, result["infos"], strict=True):
            infos = self._add_info(infos, info, i)
        if result["obs"] is not None:
            for i, obs in zip(ids, result["obs"], strict=True):
                self._env_obs[i] = obs
        return self._observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env, autoresetting as ``autoreset_mode`` says."""
        backend = self._backend
        if self._pending.any():
            raise AsyncUsageError(
                f"step() steps every env, but envs {np.flatnonzero(self._pending).tolist()} are "
                "still owed to recv() (sent, or reset by async_reset()): recv() them first, or "
                "reset()"
            )
        self._write_actions(actions, None)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            backend.resets[:] = self._autoreset
        try:
            if self._pool is not None:
                self._pool.send(range(len(self._units)))
                self._pool.wait(len(self._units))
            else:
                backend.step()
        except TransportError as exc:
            raise self._failure(exc) from exc
        terminations = backend.terminated.astype(np.bool_)
        truncations = backend.truncated.astype(np.bool_)
        rewards = backend.rewards.astype(np.float64)  # float32 in the lrbc layout
        slices, _, areas = self._whole
        infos = self._read_aside(slices, areas)
        self._autoreset = terminations | truncations
        self._last_ids = np.arange(self.num_envs, dtype=np.int64)
        return self._observations(), rewards, terminations, truncations, infos

    # -- asynchronous API (EnvPool / PufferLib style) -------------------------------------------
    def async_reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Reset every env (or those in ``options["reset_mask"]``); the next ``recv()`` calls
        return their first observations, ``batch_size`` at a time in env order (rewards 0, no
        termination, the reset infos). Envs outside the mask stay idle: ``send`` them."""
        mask = (options or {}).get("reset_mask")
        _, infos = self.reset(seed=seed, options=options)
        ids = list(range(self.num_envs)) if mask is None else np.flatnonzero(mask).tolist()
        self._reset_infos = infos
        self._pending[ids] = True
        self._reset_queue = ids

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Start stepping envs ``env_ids`` (default: those the last ``recv()`` returned) with
        ``actions`` (one per id, in the same order); returns at once. Under ``NEXT_STEP`` an env
        whose episode ended is reset instead (its action ignored), as ``step()`` does."""
        backend = self._backend
        ids = self._check_send(env_ids)
        self._write_actions(actions, ids)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            backend.resets[ids] = self._autoreset[ids] * RESET
        self._pending[ids] = True
        if self._pool is not None:
            try:
                self._pool.send(np.unique(self._unit_index[ids]).tolist())
            except TransportError as exc:
                raise self._failure(exc) from exc
        elif self._engine is not None:
            self._engine.submit(ids.tolist())
        else:
            self._lockstep_sent = True

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The ``batch_size`` envs that finished first (fewer when fewer were sent), as
        ``(obs, rewards, terminations, truncations, infos)`` with ``infos["env_id"]`` their
        ids; rows are in the order they finished, envs of one worker in id order."""
        backend = self._backend
        if self._reset_queue:
            ids = np.asarray(self._reset_queue[: self.batch_size], dtype=np.int64)
            del self._reset_queue[: len(ids)]
            infos = rules.select_infos(self._reset_infos, ids)
            terminations = np.zeros(len(ids), np.bool_)
            truncations, rewards = terminations.copy(), np.zeros(len(ids))
        else:
            try:
                units = self._collect()
            except TransportError as exc:
                raise self._failure(exc) from exc
            if self._engine is not None:  # a unit is one env
                ids = np.asarray(units, dtype=np.int64)
            else:
                ids = np.concatenate([np.arange(*self._units[u], dtype=np.int64) for u in units])
            terminations = backend.terminated[ids].astype(np.bool_)
            truncations = backend.truncated[ids].astype(np.bool_)
            rewards = backend.rewards[ids].astype(np.float64)  # float32 in the lrbc layout
            areas = [self._from_units[u] if self._from_units else None for u in units]
            infos = self._read_aside([self._units[u] for u in units], areas)
            self._autoreset[ids] = terminations | truncations
            infos = rules.select_infos(infos, ids)
        self._pending[ids] = False
        self._last_ids = ids
        infos["env_id"] = ids.copy()
        return self._observations(ids), rewards, terminations, truncations, infos

    def _collect(self) -> list[int]:
        """Units (worker slices, or single envs in this process) whose results are in."""
        if self._pool is not None:
            if not self._pool.in_flight and not self._pool.ready:
                raise AsyncUsageError(_NOTHING_SENT)
            per = self._units[0][1] - self._units[0][0]
            return self._pool.wait(self.batch_size // per)
        if self._engine is not None:
            if not self._engine.in_flight():
                raise AsyncUsageError(_NOTHING_SENT)
            return self._engine.collect(self.batch_size)
        if not self._lockstep_sent:
            raise AsyncUsageError(_NOTHING_SENT)
        self._lockstep_sent = False
        self.client.step()
        return list(range(len(self._units)))

    def _check_send(self, env_ids: Any) -> np.ndarray:
        if not self._was_reset:
            raise AsyncUsageError(
                "send() before the envs were reset: call reset() or async_reset() first"
            )
        ids = self._last_ids if env_ids is None else rules.env_ids(env_ids, self.num_envs)
        if self._pending[ids].any():
            busy = ids[self._pending[ids]].tolist()
            raise AsyncUsageError(
                f"send() for env ids {busy} that are still stepping (sent and not yet "
                "received, or owed by async_reset()): recv() them before sending them new "
                "actions"
            )
        if self._engine is None and self._pool is None and len(ids) != self.num_envs:
            raise AsyncUsageError(
                f"send() for {len(ids)} of {self.num_envs} envs, but batch_size="
                f"{self.batch_size} steps them all together: send every env, or create "
                "the ShmVectorEnv with batch_size < num_envs"
            )
        if self._engine is None:  # host processes step whole worker slices
            counts = np.bincount(self._unit_index[ids], minlength=len(self._units))
            for (b, e), count in zip(self._units, counts.tolist(), strict=True):
                if count and count != e - b:
                    part = sorted(i for i in ids.tolist() if b <= i < e)
                    raise AsyncUsageError(
                        f"send() for env ids {part} but their host process steps envs "
                        f"{b}..{e - 1} together: send the whole slice (the ids recv() "
                        "returned)"
                    )
        return ids

    def _drain(self) -> None:
        """Wait for envs still in flight and forget their results (before a reset)."""
        if self._pool is not None and (self._pool.in_flight or self._pool.ready):
            try:
                self._pool.wait(len(self._units))
            except TransportError as exc:
                raise self._failure(exc) from exc
            self._pool.ready.clear()
        if self._engine is not None:
            self._engine.sent.clear()
        self._lockstep_sent = False
        self._pending[:] = False

    # -- rows ---------------------------------------------------------------------------------
    def _write_actions(self, actions: Any, ids: np.ndarray | None) -> None:
        """Actions for every env (``ids`` None) or for ``ids``, one per id in that order."""
        if not self._act_codec.fixed:
            self._write_actions_aside(actions, None if ids is None else ids.tolist())
            return
        if ids is None:
            self._act_codec.write_batch(self._act_views, actions)
            return
        if len(self._act_views) == 1 and not self._act_codec.leaves[0].path:
            view = self._act_views[0]
            array = np.asarray(actions)
            if array.ndim == 0 or array.shape[0] != len(ids):
                raise ValueError(
                    f"send(): got actions of shape {array.shape} for {len(ids)} env ids; "
                    "pass one action per id, in the order of env_ids"
                )
            try:
                view[ids] = array.reshape((len(ids), *view.shape[1:]))
            except ValueError as exc:
                raise ValueError(
                    f"send(): actions of shape {array.shape} do not fit {len(ids)} envs of "
                    f"{self.single_action_space}: expected {(len(ids), *view.shape[1:])}"
                ) from exc
            return
        parts = [np.empty((len(ids), *v.shape[1:]), v.dtype) for v in self._act_views]
        self._act_codec.write_batch(parts, actions)
        for view, part in zip(self._act_views, parts, strict=True):
            view[ids] = part

    def _write_actions_aside(self, actions: Any, ids: list[int] | None) -> None:
        count = self.num_envs if ids is None else len(ids)
        items = list(iterate(batch_space(self.single_action_space, count), actions))
        if len(items) != count:
            raise ValueError(f"got {len(items)} actions for {count} envs")
        slices, areas, _ = self._whole if ids is None else (self._units, self._to_units, None)
        if not areas:
            raise ValueError(
                f"{self.single_action_space} actions have no fixed row and this engine has no "
                "side areas to carry them; it must be created with side_size > 0"
            )
        by_id = dict(zip(range(self.num_envs) if ids is None else ids, items, strict=True))
        for (begin, end), area in zip(slices, areas, strict=True):
            if begin in by_id:
                area.write(bytes(cloudpickle.dumps([by_id[i] for i in range(begin, end)])))

    def _read_aside(
        self, slices: Sequence[tuple[int, int]], areas: Sequence[Any]
    ) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        error: dict[str, Any] | None = None
        # an engine without side areas (side_size=0) has no step infos to give
        for (begin, _), area in zip(slices, areas, strict=False):
            data = area.read() if area is not None else None
            if data is None:
                continue
            blob = data if isinstance(data, dict) else pickle.loads(data)
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

    def _observations(self, ids: np.ndarray | None = None) -> Any:
        if self._obs_codec.fixed:
            if ids is None:
                return self._obs_codec.batch(self._obs_views, self.copy)
            return self._obs_codec.batch([v[ids] for v in self._obs_views], False)
        chosen = self._env_obs if ids is None else [self._env_obs[i] for i in ids.tolist()]
        out = create_empty_array(self.single_observation_space, len(chosen), fn=np.zeros)
        return concatenate(self.single_observation_space, chosen, out)  # type: ignore[arg-type]

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``get_wrapper_attr(name)`` of every env, called with the arguments when callable."""
        try:
            return tuple(self._backend.call(name, *args, **kwargs))
        except TransportError as exc:
            raise self._failure(exc) from exc

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set attribute ``name`` of every env (one value for all, or one per env)."""
        values = rules.set_attr_values(values, self.num_envs)
        self._backend.set_attr(name, values)

    def render(self) -> tuple[Any, ...] | None:
        """Each env's frame: from the image region when there is one, else by a call."""
        image = self._backend.image
        if image is None:
            return self.call("render")
        return tuple(image[i].copy() for i in range(self.num_envs))

    def close_extras(self, **kwargs: Any) -> None:
        """Shut the engine down (when we launched it), detach and unlink the segment; in
        this process, close the envs."""
        if os.getpid() != getattr(self, "_owner_pid", os.getpid()):
            return  # a forked child never touches its parent's envs
        client, self._client = self._client, None
        engine, self._engine = self._engine, None
        pool, self._pool = self._pool, None
        self._obs_views, self._act_views = [], []
        self._to_units, self._from_units, self._whole = [], [], ([], [], [])
        if pool is not None:
            pool.close()
        if engine is not None:
            engine.close()
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
