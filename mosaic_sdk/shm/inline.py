"""In-process stepping for ``ShmVectorEnv(mode="inline")``, and how ``mode="auto"`` chooses."""

from __future__ import annotations

import copy
import functools
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from mosaic_sdk.shm.host_process import frame_shape
from mosaic_sdk.shm.packing import RowCodec
from mosaic_sdk.shm.stepper import SAME_STEP, SliceStepper

MODES = ("auto", "process", "inline")
INLINE_BELOW = 200e-6
PROBE_STEPS = 64
PROBE_SECONDS = 0.25
WARM_UP = 4
#: Work the host processes would take off the trainer per batch (seconds, the rule below) under
#: which ``auto`` steps inline, and above which it uses processes, without racing the two.
RACE_BETWEEN = (INLINE_BELOW / 8, INLINE_BELOW * 8)
#: Seconds ``auto`` spends timing both modes in turns, when it races them.
RACE_SECONDS = 0.3
RACE_STEPS = 4  # vector steps per mode per turn


def constructors(
    env_fns: Sequence[Callable[[], Any]] | str,
    num_envs: int | None,
    env_kwargs: dict[str, Any] | None,
    render_images: bool,
    caller: str = "ShmVectorEnv",
    arg: str = "env_fns",
) -> list[Callable[[], Any]]:
    """Env constructors, from a list of them or from an id and ``num_envs``; errors name the
    ``caller`` and its argument ``arg``."""
    if isinstance(env_fns, str):
        if num_envs is None or num_envs < 1:
            raise ValueError(f"{caller}({env_fns!r}): pass num_envs >= 1 with an env id")
        kwargs = dict(env_kwargs or {})
        if render_images:
            kwargs.setdefault("render_mode", "rgb_array")
        return [functools.partial(gym.make, env_fns, **kwargs)] * num_envs
    fns = list(env_fns)
    if not fns or not all(callable(f) for f in fns):
        raise ValueError(f"{caller}: {arg} must be a non-empty list of env constructors")
    if num_envs is not None and num_envs != len(fns):
        raise ValueError(f"num_envs={num_envs} but {len(fns)} env constructors were given")
    return fns


def step_cost(make: Callable[[], Any], steps: int = PROBE_STEPS) -> float:
    """Median seconds per ``step`` of one env built by ``make`` (seeded actions, autoreset).

    The first steps are not timed (gymnasium's env checker inspects the first call). The
    action space is copied before sampling, so envs built later draw what they would have.
    """
    env = make()
    try:
        space = copy.deepcopy(env.action_space)
        space.seed(0)
        env.reset(seed=0)
        actions = [space.sample() for _ in range(steps + WARM_UP)]
        times = []
        clock = time.perf_counter
        deadline = clock() + PROBE_SECONDS
        for k, action in enumerate(actions):
            start = clock()
            _, _, term, trunc, _ = env.step(action)
            if k >= WARM_UP:
                times.append(clock() - start)
            if term or trunc:
                env.reset()
            if clock() > deadline and times:
                break
        return float(np.median(times)) if times else PROBE_SECONDS
    finally:
        env.close()


@dataclass(frozen=True)
class AutoChoice:
    """What ``mode="auto"`` chose and why: ``step_cost`` (seconds per step of one env, None
    when not measured) and ``rates`` (vector steps per second of each mode, when it raced
    them: throwaway copies of the envs, stepped in turns)."""

    mode: str
    reason: str
    step_cost: float | None = None
    rates: dict[str, float] | None = None


def choose_mode(
    mode: str,
    fns: Sequence[Callable[[], Any]],
    batch_envs: int,
    workers: int,
    process_only: bool,
    race: Callable[[], dict[str, float]] | None = None,
) -> AutoChoice:
    """What ``mode`` gives: for ``"auto"``, from the work host processes would take off the
    trainer per batch, ``saved = cost x batch_envs x (1 - 1 / workers)`` (nothing with one
    worker): inline below ``RACE_BETWEEN[0]``, processes above ``RACE_BETWEEN[1]``; in
    between, the faster in ``race()`` (steps per second of each mode), or without a race the
    side of ``INLINE_BELOW`` that ``saved`` is on.
    """
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {MODES}")
    if mode != "auto":
        return AutoChoice(mode, "asked for")
    if process_only:
        return AutoChoice("process", "num_workers, name or context asks for host processes")
    cost = step_cost(fns[0])
    saved = cost * batch_envs * (1.0 - 1.0 / max(1, workers))
    low, high = RACE_BETWEEN
    figures = f"{cost * 1e6:.1f} us per env step, {saved * 1e6:.0f} us saved per batch"
    if workers <= 1 or saved < low:
        return AutoChoice("inline", f"{figures} < {low * 1e6:.0f} us", cost)
    if saved > high:
        return AutoChoice("process", f"{figures} > {high * 1e6:.0f} us", cost)
    by_threshold = "process" if saved > INLINE_BELOW else "inline"
    threshold = f"{figures} (threshold {INLINE_BELOW * 1e6:.0f} us)"
    if race is None:
        return AutoChoice(by_threshold, threshold, cost)
    try:
        rates = race()
    except Exception as exc:  # the race never fails a construction: the rule decides
        return AutoChoice(by_threshold, f"{threshold}; the race failed: {exc!r}"[:300], cost)
    chosen = "process" if rates["process"] > rates["inline"] else "inline"
    reason = (
        f"measured {rates['inline']:.0f} steps/s inline, {rates['process']:.0f} with "
        f"{workers} host processes ({figures})"
    )
    return AutoChoice(chosen, reason, cost, rates)


def race_modes(
    build: Callable[[str], Any], seconds: float = RACE_SECONDS, steps: int = RACE_STEPS
) -> dict[str, float]:
    """Vector steps per second of ``build("inline")`` and ``build("process")`` (vector envs,
    closed here), each reset with seed 0 and stepped ``steps`` at a time in turns for about
    ``seconds``: the median turn of each."""
    envs: dict[str, Any] = {}
    try:
        for mode in ("inline", "process"):
            envs[mode] = build(mode)
        first = envs["inline"]
        space = copy.deepcopy(first.action_space)
        space.seed(0)
        actions = [space.sample() for _ in range(steps)]
        turns: dict[str, list[float]] = {mode: [] for mode in envs}
        for env in envs.values():
            env.reset(seed=0)
            for action in actions:  # warm-up, untimed
                env.step(action)
        clock = time.perf_counter
        deadline = clock() + seconds
        while len(turns["inline"]) < 3 or clock() < deadline:
            for mode, env in envs.items():
                start = clock()
                for action in actions:
                    env.step(action)
                turns[mode].append(clock() - start)
        return {mode: steps / max(statistics.median(t), 1e-9) for mode, t in turns.items()}
    finally:
        for env in envs.values():
            env.close()


class LocalArea:
    """A side area in the trainer's memory: holds one blob (no size limit), pickled as a
    stepper writes it, or the blob's dict itself from the direct path."""

    def __init__(self) -> None:
        self.data: bytes | dict[str, Any] | None = None

    def fits(self, data: bytes) -> bool:
        return True

    def write(self, data: bytes | dict[str, Any] | None) -> None:
        self.data = data

    def clear(self) -> None:
        self.data = None

    def read(self) -> bytes | dict[str, Any] | None:
        return self.data


class InlineEngine:
    """The envs, stepped in this process over segment-shaped numpy regions.

    It runs the ``SliceStepper`` a host process runs, so both modes give the same results,
    and offers the part of ``SharedMemoryClient`` that ``ShmVectorEnv`` uses. For
    ``send``/``recv`` every env is its own unit, stepped in the order sent."""

    name = None

    def __init__(
        self, fns: Sequence[Callable[[], Any]], autoreset_mode: str, render_images: bool
    ) -> None:
        self.envs = [fn() for fn in fns]
        try:
            self._build(autoreset_mode, render_images)
        except BaseException:
            self.close()
            raise

    def _build(self, autoreset_mode: str, render_images: bool) -> None:
        envs = self.envs
        n = len(envs)
        first = envs[0]
        obs_codec = RowCodec(first.observation_space)
        act_codec = RowCodec(first.action_space)
        self.obs = np.zeros((n, obs_codec.words), np.float32)
        self.actions = np.zeros((n, act_codec.words), np.float32)
        self.rewards = np.zeros(n, np.float64)
        self.terminated = np.zeros(n, np.uint8)
        self.truncated = np.zeros(n, np.uint8)
        self.resets = np.zeros(n, np.uint8)
        shape = frame_shape(first) if render_images else None
        self.image = np.zeros((n, *shape), np.uint8) if shape else None
        self.whole_areas = (LocalArea(), LocalArea())
        self.whole = SliceStepper(
            self, envs, 0, render_images, 0, autoreset_mode, areas=self.whole_areas
        )
        self.slices = [(i, i + 1) for i in range(n)]
        self.unit_areas = [(LocalArea(), LocalArea()) for _ in range(n)]
        self.units = [
            SliceStepper(
                self, envs[i : i + 1], i, render_images, 0, autoreset_mode, areas=self.unit_areas[i]
            )
            for i in range(n)
        ]
        self.sent: deque[int] = deque()
        # The direct path: one observation leaf and one action leaf (Box, Discrete,
        # MultiDiscrete, MultiBinary), no final_obs to carry (NEXT_STEP or DISABLED), no
        # frames. It steps the envs as SliceStepper does, without its per-call batching.
        single = len(obs_codec.leaves) == 1 and len(act_codec.leaves) == 1
        self.direct = (
            obs_codec.fixed
            and act_codec.fixed
            and single
            and not obs_codec.leaves[0].path
            and not act_codec.leaves[0].path
            and autoreset_mode != SAME_STEP
            and self.image is None
        )
        if self.direct:
            self._obs_rows = obs_codec.leaf_views(self.obs)[0]
            self._act_rows = act_codec.leaf_views(self.actions)[0]
        metadata = dict(getattr(first, "metadata", {}) or {})
        metadata.pop("autoreset_mode", None)
        self.described: dict[str, Any] = {
            "observation_spaces": [env.observation_space for env in envs],
            "action_spaces": [env.action_space for env in envs],
            "metadata": metadata,
            "render_mode": getattr(first, "render_mode", None),
            "autoreset_mode": autoreset_mode,
        }

    # -- what ShmVectorEnv calls on a client ---------------------------------------------------
    @property
    def num_envs(self) -> int:
        return len(self.envs)

    def step(self) -> None:
        """Step every env (lock-step)."""
        if not self.direct:
            self.whole.step()
            return
        infos = self._step_direct(range(len(self.envs)))
        self.whole_areas[1].write({"infos": infos} if infos else None)

    def _step_direct(self, ids: Any) -> dict[int, list[dict[str, Any]]]:
        """Step (or, where the reset flag says so, reset) envs ``ids`` in that order."""
        envs, acts, rows = self.envs, self._act_rows, self._obs_rows
        rewards, terminated = self.rewards, self.terminated
        truncated, resets = self.truncated, self.resets
        copy_rows = acts.ndim > 1  # an env may keep its action: never a view of ours
        infos: dict[int, list[dict[str, Any]]] = {}
        for i in ids:
            env = envs[i]
            if resets[i] & 1:
                obs, info = env.reset()
                rewards[i], terminated[i], truncated[i] = 0.0, 0, 0
                resets[i] = 0
            else:
                action = acts[i].copy() if copy_rows else acts[i]
                obs, rewards[i], terminated[i], truncated[i], info = env.step(action)
            rows[i] = obs
            if info:
                infos[i] = [info]
        return infos

    def submit(self, units: Sequence[int]) -> None:
        """Queue envs to be stepped by the next ``collect`` calls, in this order."""
        self.sent.extend(units)

    def in_flight(self) -> int:
        return len(self.sent)

    def collect(self, count: int) -> list[int]:
        """Step the ``count`` envs sent first (or all queued, if fewer) and return them."""
        done: list[int] = []
        while self.sent and len(done) < count:
            done.append(self.sent.popleft())
        if self.direct:
            infos = self._step_direct(done)
            for unit in done:
                added = infos.get(unit)
                self.unit_areas[unit][1].write({"infos": {unit: added}} if added else None)
            return done
        for unit in done:
            self.units[unit].step()
            self.resets[unit] = 0
        return done

    def reset_detailed(
        self,
        env_ids: Sequence[int],
        seeds: Sequence[int | None],
        options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        infos, observations = self.whole.reset(list(env_ids), list(seeds), options)
        return {"infos": infos, "obs": observations}

    def call(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        return self.whole.call(name, args, kwargs)

    def set_attr(self, name: str, values: Sequence[Any]) -> None:
        self.whole.set_attr(name, values)

    def close(self, shutdown_engine: bool = True) -> None:
        envs, self.envs = self.envs, []
        for env in envs:
            env.close()
