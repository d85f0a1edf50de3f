"""Step and episode telemetry of every env a script makes, and the control safe point.

:class:`EpisodeTelemetryWrapper` sits directly on the env ``gymnasium.make`` returned, under
every wrapper of the script, so it sees raw rewards (before ``NormalizeReward`` and friends)
and the env's own ``reset`` calls (so a vector env's autoreset, next-step or same-step, is
seen as what it is: a reset). It reports to a :class:`TelemetrySink`:

- in the script's process the sink writes step lines (every ``step_every``-th step of each
  episode, optionally at most ``step_rate`` per second over all envs; the step that ends an
  episode is always written) and one episode line per finished episode, and keeps the run's
  statistics (for heartbeats and ``analytics.json``). An episode's index is taken when it
  starts, so step lines and the episode line of one episode share it;
- in an env subprocess (``AsyncVectorEnv``) there is no telemetry stream: the wrapper puts
  its records into the step's ``info`` under :data:`INFO_KEY`, and
  :class:`VectorTelemetryRelay`, around the vector env in the script's process, writes them.

A vector env that is not made of ``gymnasium.make`` envs (a ``vector_entry_point`` of
``gymnasium.make_vec``, such as CartPole's own vector env) is watched as a whole by
:class:`VectorEpisodeTelemetry`, which reads its ``autoreset_mode`` to tell a reset step from
an env step.

An episode still running when its env is closed (or when the run ends, see
:meth:`~mosaic_sdk.instrument.gym_patch.Instrumentation.uninstall`) is reported with
``truncated: true`` and ``metadata.unfinished: true``; it counts as an episode, not towards
the returns.

The outermost layer the script gets (a standalone env's wrapper, or the vector env's) calls
``sink.safe_point`` before each step, when one is set: the control channel's safe point,
where a paused run blocks and a stopped one ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorWrapper

if TYPE_CHECKING:
    from mosaic_sdk.telemetry import TelemetryEmitter

INFO_KEY = "mosaic_telemetry"
#: The wrapper method an ``AsyncVectorEnv``'s ``call`` reaches in each env subprocess.
UNFINISHED_CALL = "mosaic_unfinished_records"
_MAX_OBS_VALUES = 64


class TelemetrySink:
    """Where env telemetry goes, and the run's running statistics."""

    def __init__(
        self,
        emitter: TelemetryEmitter | None,
        *,
        steps: bool = True,
        step_every: int = 20,
        step_rate: float | None = None,
        owner_pid: int | None = None,
        return_window: int = 20,
    ) -> None:
        self.emitter = emitter
        self.steps_enabled = steps
        self.step_every = max(1, int(step_every))
        self.step_interval = 0.0 if not step_rate else 1.0 / step_rate
        self.owner_pid = os.getpid() if owner_pid is None else owner_pid
        self._lock = threading.Lock()
        self._next_step_at = 0.0
        self.episodes = 0
        self.unfinished = 0
        self._next_index = 0
        self._remote: dict[tuple[int, int], int] = {}
        self.total_steps = 0
        self.total_reward = 0.0
        self.returns: deque[float] = deque(maxlen=return_window)
        self.all_returns: list[float] = []
        #: Called with each episode record an env subprocess reported (curriculum counting).
        self.on_remote_episode: Callable[[dict[str, Any]], None] | None = None
        #: Called before each step of the envs the script steps (the control safe point);
        #: may block (paused) or raise (stopped).
        self.safe_point: Callable[[], None] | None = None

    @property
    def local(self) -> bool:
        """True in the script's process (writes lines); False in an env subprocess."""
        return self.emitter is not None and os.getpid() == self.owner_pid

    def new_episode_index(self) -> int:
        with self._lock:
            index = self._next_index
            self._next_index += 1
            return index

    def global_index(self, origin: tuple[int, int], finished: bool) -> int:
        """The run-wide index of an episode numbered ``origin`` (pid, local) in a subprocess."""
        key = (int(origin[0]), int(origin[1]))
        index = self._remote.get(key)
        if index is None:
            index = self._remote[key] = self.new_episode_index()
        if finished:
            self._remote.pop(key, None)
        return index

    def step_due(self, step_index: int) -> bool:
        if not self.steps_enabled or step_index % self.step_every:
            return False
        if not self.step_interval:
            return True
        now = time.monotonic()
        if now < self._next_step_at:
            return False
        self._next_step_at = now + self.step_interval
        return True

    def write_step(self, record: dict[str, Any]) -> None:
        assert self.emitter is not None
        self.emitter.step(
            record["episode_index"],
            record["step_index"],
            record["reward"],
            terminated=record["terminated"],
            truncated=record["truncated"],
            action=record.get("action"),
            observation=record.get("observation"),
            metadata=record.get("metadata"),
            force=True,
        )

    def write_episode(self, record: dict[str, Any]) -> None:
        index = record["episode_index"]
        # an episode the run's end cut off is in no count of episodes and no return (the
        # SDK's rule: docs/reference/telemetry.md, "Unfinished episodes")
        cut = bool((record.get("metadata") or {}).get("unfinished"))
        with self._lock:
            if cut:
                self.unfinished += 1
            else:
                self.episodes += 1
                self.total_reward += record["total_reward"]
                self.returns.append(record["total_reward"])
                self.all_returns.append(record["total_reward"])
        if self.emitter is not None:
            self.emitter.episode(
                index,
                record["total_reward"],
                record["steps"],
                terminated=record["terminated"],
                truncated=record["truncated"],
                metadata=record.get("metadata"),
                unfinished=cut,
            )

    def mean_return(self) -> float | None:
        return sum(self.returns) / len(self.returns) if self.returns else None

    def progress(self) -> dict[str, Any]:
        return {"episode": self.episodes, "step": self.total_steps}


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist() if value.size <= _MAX_OBS_VALUES else None
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (int, float, bool, str)):
        return value
    return None


def step_record(
    key: str, episode: Any, index: int, reward: float, terminated: bool, truncated: bool,
    action: Any, obs: Any, metadata: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """One step line's record (``key``: ``episode_index``, or ``origin`` in a subprocess)."""
    return {
        "kind": "step",
        key: episode,
        "step_index": index,
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        "action": _plain(action),
        "observation": _plain(obs),
        "metadata": metadata,
    }


def episode_record(
    key: str, episode: Any, total: float, steps: int, terminated: bool, truncated: bool,
    metadata: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """One episode line's record (see :func:`step_record`)."""
    return {
        "kind": "episode",
        key: episode,
        "total_reward": total,
        "steps": steps,
        "terminated": terminated,
        "truncated": truncated,
        "metadata": metadata,
    }


class EpisodeTelemetryWrapper(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Reports steps and episodes of one env to a :class:`TelemetrySink` (API unchanged).

    ``outermost``: the script steps this env itself (not through a vector env), so its steps
    pass the sink's safe point."""

    def __init__(
        self,
        env: gymnasium.Env,  # type: ignore[type-arg]
        sink: TelemetrySink,
        env_index: int,
        env_id: str,
        *,
        outermost: bool = False,
    ) -> None:
        super().__init__(env)
        self.sink = sink
        self.env_index = env_index
        self.env_id = env_id
        self.outermost = outermost
        self._return = 0.0
        self._length = 0
        self._episode: int | None = None
        self._last: tuple[int, float, Any, Any] | None = None
        self._local = sink.local  # decided where the env was made (script or subprocess)
        #: Whether the env was closed (read through the wrappers above: ``get_wrapper_attr``).
        self.mosaic_closed = False

    def reset(self, **kwargs: Any) -> Any:
        self._return, self._length = 0.0, 0
        self._episode = self.sink.new_episode_index()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        if self.outermost and self.sink.safe_point is not None:
            self.sink.safe_point()
        obs, reward, terminated, truncated, info = self.env.step(action)
        r = float(reward)
        self._return += r
        self._length += 1
        done = bool(terminated or truncated)
        sink = self.sink
        sink.total_steps += 1  # a lost increment under races only blurs a heartbeat
        due = sink.step_due(self._length - 1)
        if not (due or done):  # the common case: nothing to write
            self._last = (self._length - 1, r, action, obs)  # flushed at the end if unwritten
            return obs, reward, terminated, truncated, info
        local = self._local
        if self._episode is None:  # stepped without reset (the env checker does that)
            self._episode = sink.new_episode_index()
        episode = self._episode if local else (os.getpid(), self._episode)
        key = "episode_index" if local else "origin"
        records: list[dict[str, Any]] = []
        self._last = (self._length - 1, r, action, obs)
        meta = {"env_index": self.env_index, "env_id": self.env_id}
        if due or (done and sink.steps_enabled):
            self._last = None  # written: nothing to flush at the end
            records.append(
                step_record(key, episode, self._length - 1, r, bool(terminated), bool(truncated),
                            action, obs, meta)
            )  # fmt: skip
        if done:
            metadata = dict(meta)
            if "curriculum_stage" in info:
                metadata["curriculum_stage"] = info["curriculum_stage"]
            records.append(
                episode_record(key, episode, self._return, self._length, bool(terminated),
                               bool(truncated), metadata)
            )  # fmt: skip
            self._return, self._length, self._episode = 0.0, 0, None
        if records:
            if local:
                deliver(sink, records)
            else:
                info = dict(info)
                info[INFO_KEY] = records
        return obs, reward, terminated, truncated, info

    def mosaic_unfinished_records(self) -> list[dict[str, Any]]:
        """The records of the episode running now, as unfinished (truncated, not counted in
        the returns), and its last step if no step line was written for it; the episode is
        over afterwards. Empty when none runs. An ``AsyncVectorEnv``'s ``call`` reaches this
        in each env subprocess (:data:`UNFINISHED_CALL`)."""
        if not self._length or self._episode is None:
            return []
        local = self._local
        key = "episode_index" if local else "origin"
        episode = self._episode if local else (os.getpid(), self._episode)
        meta = {"env_index": self.env_index, "env_id": self.env_id}
        records: list[dict[str, Any]] = []
        if self._last is not None and self.sink.steps_enabled:
            index, reward, action, obs = self._last
            records.append(step_record(key, episode, index, reward, False, True, action, obs, meta))
        records.append(
            episode_record(key, episode, self._return, self._length, False, True,
                           {**meta, "unfinished": True})
        )  # fmt: skip
        self._return, self._length, self._episode, self._last = 0.0, 0, None, None
        return records

    def close(self) -> None:
        # Closed mid-episode: report the partial episode as truncated and unfinished, so every
        # step line has its episode line (in an env subprocess the relay asked for it first).
        if self._local:
            deliver(self.sink, self.mosaic_unfinished_records())
        if not self.mosaic_closed:  # the env beneath is closed once, however often we are
            self.mosaic_closed = True
            super().close()


def deliver(sink: TelemetrySink, records: list[dict[str, Any]]) -> None:
    """Write records made by :class:`EpisodeTelemetryWrapper` through ``sink``."""
    for record in records:
        remote = "origin" in record
        if remote:
            record = dict(record)
            record["episode_index"] = sink.global_index(
                record.pop("origin"), record["kind"] == "episode"
            )
        if record["kind"] == "episode":
            sink.write_episode(record)
            if remote and sink.on_remote_episode is not None:
                sink.on_remote_episode(record)
        elif sink.emitter is not None:
            sink.write_step(record)


class ForwardingVectorWrapper(VectorWrapper):
    """A transparent layer that forwards unknown attributes (``envs.envs``, ``call`` ...)
    to the vector env beneath, so scripts see the API they built; with ``safe_point``, each
    step passes it first (the outermost layer the script steps)."""

    def __init__(self, env: Any, safe_point: Callable[[], None] | None = None) -> None:
        super().__init__(env)
        self._safe_point = safe_point

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.env, name)

    def step(self, actions: Any) -> Any:
        if self._safe_point is not None:
            self._safe_point()
        return self.env.step(actions)


class VectorTelemetryRelay(ForwardingVectorWrapper):
    """Writes the telemetry records env subprocesses left in ``infos`` (AsyncVectorEnv),
    counts their env steps (a step that only resets an env, next-step autoreset, is none),
    and at close asks each subprocess for its unfinished episode."""

    def __init__(self, env: Any, sink: TelemetrySink) -> None:
        super().__init__(env)
        self.sink = sink
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self._next_step = mode in (AutoresetMode.NEXT_STEP, "next_step", "NextStep")
        self._resetting = np.zeros(int(env.num_envs), dtype=bool)

    def reset(self, **kwargs: Any) -> Any:
        options = kwargs.get("options") or {}
        mask = options.get("reset_mask") if isinstance(options, dict) else None
        if mask is None:
            self._resetting[:] = False
        else:
            self._resetting &= ~np.asarray(mask, dtype=bool)
        return self.env.reset(**kwargs)

    def _relay(self, infos: dict[str, Any]) -> None:
        for source in (infos, infos.get("final_info")):
            if not isinstance(source, dict) or INFO_KEY not in source:
                continue
            mask = source.get("_" + INFO_KEY)
            for i, records in enumerate(source[INFO_KEY]):
                if records is not None and (mask is None or mask[i]):
                    deliver(self.sink, list(records))
        legacy = infos.get("final_info")
        if isinstance(legacy, np.ndarray):  # 0.29 shape from the compatibility layer
            for item in legacy:
                if isinstance(item, dict) and INFO_KEY in item:
                    deliver(self.sink, list(item[INFO_KEY]))

    def step(self, actions: Any) -> Any:
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        stepped = ~self._resetting
        self.sink.total_steps += int(stepped.sum())
        if self._next_step:
            self._resetting = (np.asarray(terminations) | np.asarray(truncations)) & stepped
        self._relay(infos)
        return obs, rewards, terminations, truncations, infos

    def collect_unfinished(self) -> None:
        """Report the episodes running in the env subprocesses now as unfinished (only while
        no step or reset is under way, and the subprocesses answer)."""
        env: Any = self.env
        state = getattr(getattr(env, "_state", None), "value", None)  # AsyncVectorEnv's
        if getattr(env, "closed", False) or state != "default":
            return
        try:
            answers = env.call(UNFINISHED_CALL)
        except Exception:  # noqa: BLE001 - a subprocess gone or an env without our wrapper
            return
        for records in answers:
            if isinstance(records, list):
                deliver(self.sink, records)

    def close(self, **kwargs: Any) -> None:
        if not kwargs.get("terminate"):
            self.collect_unfinished()
        self.env.close(**kwargs)


class VectorEpisodeTelemetry(ForwardingVectorWrapper):
    """Steps and episodes of a vector env watched as a whole (its envs are not ours to wrap:
    a ``vector_entry_point`` env). Rewards are the vector env's own; a step of env ``i`` that
    only resets it (``autoreset_mode`` next-step) is not an env step."""

    def __init__(
        self,
        env: Any,
        sink: TelemetrySink,
        env_id: str,
        safe_point: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(env, safe_point)
        self.sink = sink
        self.env_id = env_id
        n = int(env.num_envs)
        self._n = n
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self._next_step = mode in (AutoresetMode.NEXT_STEP, "next_step", "NextStep")
        self._returns = np.zeros(n, dtype=np.float64)
        self._lengths = np.zeros(n, dtype=np.int64)
        self._episodes: list[int | None] = [None] * n
        self._resetting = np.zeros(n, dtype=bool)

    def reset(self, **kwargs: Any) -> Any:
        options = kwargs.get("options") or {}
        mask = options.get("reset_mask") if isinstance(options, dict) else None
        chosen = range(self._n) if mask is None else np.flatnonzero(np.asarray(mask))
        for k in chosen:
            self._returns[k], self._lengths[k] = 0.0, 0
            self._episodes[int(k)] = self.sink.new_episode_index()
            self._resetting[k] = False
        return self.env.reset(**kwargs)

    def step(self, actions: Any) -> Any:
        if self._safe_point is not None:
            self._safe_point()
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        sink = self.sink
        live = ~self._resetting
        for reset in np.flatnonzero(self._resetting):  # these envs were reset by this step
            self._returns[reset], self._lengths[reset] = 0.0, 0
            self._episodes[int(reset)] = sink.new_episode_index()
        self._resetting[:] = False
        reward = np.asarray(rewards, dtype=np.float64)
        self._returns[live] += reward[live]
        self._lengths[live] += 1
        sink.total_steps += int(live.sum())
        done = (np.asarray(terminations) | np.asarray(truncations)) & live
        every = sink.step_every
        due = live & ((self._lengths - 1) % every == 0)
        if not sink.steps_enabled:
            due[:] = False
        for found in np.flatnonzero(due | done):
            i = int(found)
            if self._episodes[i] is None:
                self._episodes[i] = sink.new_episode_index()
            episode = self._episodes[i]
            meta = {"env_index": i, "env_id": self.env_id}
            term, trunc = bool(terminations[i]), bool(truncations[i])
            records = []
            if (due[i] and sink.step_due(int(self._lengths[i]) - 1)) or (
                done[i] and sink.steps_enabled
            ):
                records.append(
                    step_record("episode_index", episode, int(self._lengths[i]) - 1,
                                float(reward[i]), term, trunc, actions[i] if _indexable(actions)
                                else None, obs[i] if _indexable(obs) else None, meta)
                )  # fmt: skip
            if done[i]:
                records.append(
                    episode_record("episode_index", episode, float(self._returns[i]),
                                   int(self._lengths[i]), term, trunc, dict(meta))
                )  # fmt: skip
                self._returns[i], self._lengths[i] = 0.0, 0
                self._episodes[i] = None
                if self._next_step:
                    self._resetting[i] = True
                else:  # same-step: the next step already belongs to a new episode
                    self._episodes[i] = sink.new_episode_index()
            deliver(sink, records)
        return obs, rewards, terminations, truncations, infos

    def report_unfinished(self) -> None:
        """Report every episode running now as unfinished (the run ends, or the env closes)."""
        for found in np.flatnonzero(self._lengths > 0):
            i = int(found)
            episode = self._episodes[i]
            if episode is None:
                continue
            meta = {"env_index": i, "env_id": self.env_id, "unfinished": True}
            deliver(
                self.sink,
                [episode_record("episode_index", episode, float(self._returns[i]),
                                int(self._lengths[i]), False, True, meta)],
            )  # fmt: skip
            self._returns[i], self._lengths[i], self._episodes[i] = 0.0, 0, None

    def close(self, **kwargs: Any) -> None:
        self.report_unfinished()
        self.env.close(**kwargs)


def _indexable(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.ndim >= 1


__all__ = [
    "INFO_KEY",
    "UNFINISHED_CALL",
    "EpisodeTelemetryWrapper",
    "ForwardingVectorWrapper",
    "TelemetrySink",
    "VectorEpisodeTelemetry",
    "VectorTelemetryRelay",
    "deliver",
    "episode_record",
    "step_record",
]
