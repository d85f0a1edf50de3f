"""Step and episode telemetry of every env an algorithm script makes.

:class:`EpisodeTelemetryWrapper` sits directly on the env ``gymnasium.make`` returned, under
every wrapper of the script, so it sees raw rewards (before ``NormalizeReward`` and friends).
It reports to a :class:`TelemetrySink`:

- in the worker process the sink writes step lines (every ``step_every``-th step of each
  episode, optionally at most ``step_rate`` per second over all envs; the step that ends an
  episode is always written) and one episode line per finished episode, and keeps the run's
  statistics (for heartbeats and ``analytics.json``). An episode's index is taken when it
  starts, so step lines and the episode line of one episode share it;
- in an env subprocess (``AsyncVectorEnv``) there is no telemetry stream: the wrapper puts
  its records into the step's ``info`` under :data:`INFO_KEY`, and
  :class:`VectorTelemetryRelay`, around the vector env in the worker process, writes them.
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
from gymnasium.vector import VectorWrapper

if TYPE_CHECKING:
    from mosaic_sdk.telemetry import TelemetryEmitter

INFO_KEY = "mosaic_telemetry"
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
        #: Finished episodes, and those the run's end cut off (in no count of episodes).
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

    @property
    def local(self) -> bool:
        """True in the worker process (writes lines); False in an env subprocess."""
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


class EpisodeTelemetryWrapper(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Reports steps and episodes of one env to a :class:`TelemetrySink` (API unchanged)."""

    def __init__(self, env: gymnasium.Env, sink: TelemetrySink, env_index: int, env_id: str):  # type: ignore[type-arg]
        super().__init__(env)
        self.sink = sink
        self.env_index = env_index
        self.env_id = env_id
        self._return = 0.0
        self._length = 0
        self._episode: int | None = None
        self._last: tuple[int, float, Any, Any] | None = None
        self._local = sink.local  # decided where the env was made (worker or subprocess)

    def reset(self, **kwargs: Any) -> Any:
        self._return, self._length = 0.0, 0
        self._episode = self.sink.new_episode_index()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        r = float(reward)
        self._return += r
        self._length += 1
        done = bool(terminated or truncated)
        sink = self.sink
        sink.total_steps += 1  # a lost increment under races only blurs a heartbeat
        due = sink.step_due(self._length - 1)
        if not (due or done):  # the common case: nothing to write
            self._last = (self._length - 1, r, action, obs)  # flushed by close() if unwritten
            return obs, reward, terminated, truncated, info
        local = self._local
        if self._episode is None:  # stepped without reset (the env checker does that)
            self._episode = sink.new_episode_index()
        episode = self._episode if local else (os.getpid(), self._episode)
        key = "episode_index" if local else "origin"
        records: list[dict[str, Any]] = []
        self._last = (self._length - 1, r, action, obs)
        if due or (done and sink.steps_enabled):
            self._last = None  # written: nothing to flush at close
            records.append(
                {
                    "kind": "step",
                    key: episode,
                    "step_index": self._length - 1,
                    "reward": r,
                    "terminated": bool(terminated),
                    "truncated": bool(truncated),
                    "action": _plain(action),
                    "observation": _plain(obs),
                    "metadata": {"env_index": self.env_index, "env_id": self.env_id},
                }
            )
        if done:
            metadata: dict[str, Any] = {"env_index": self.env_index, "env_id": self.env_id}
            if "curriculum_stage" in info:
                metadata["curriculum_stage"] = info["curriculum_stage"]
            records.append(
                {
                    "kind": "episode",
                    key: episode,
                    "total_reward": self._return,
                    "steps": self._length,
                    "terminated": bool(terminated),
                    "truncated": bool(truncated),
                    "metadata": metadata,
                }
            )
            self._return, self._length, self._episode = 0.0, 0, None
        if records:
            if local:
                deliver(sink, records)
            else:
                info = dict(info)
                info[INFO_KEY] = records
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        # The run ends mid-episode: report the partial episode as truncated and unfinished
        # (it does not count towards returns), so every step line has its episode line.
        if self._length and self._episode is not None and self._local:
            meta = {"env_index": self.env_index, "env_id": self.env_id}
            last: list[dict[str, Any]] = []
            if self._last is not None and self.sink.steps_enabled:
                index, reward, action, obs = self._last
                last.append(
                    {"kind": "step", "episode_index": self._episode, "step_index": index,
                     "reward": reward, "terminated": False, "truncated": True,
                     "action": _plain(action), "observation": _plain(obs), "metadata": meta}
                )  # fmt: skip
            deliver(
                self.sink,
                last
                + [
                    {
                        "kind": "episode",
                        "episode_index": self._episode,
                        "total_reward": self._return,
                        "steps": self._length,
                        "terminated": False,
                        "truncated": True,
                        "metadata": {"env_index": self.env_index, "env_id": self.env_id,
                                     "unfinished": True},
                    }
                ],
            )  # fmt: skip
            self._length = 0
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
    to the vector env beneath, so scripts see the API they built."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.env, name)


class VectorTelemetryRelay(ForwardingVectorWrapper):
    """Writes the telemetry records env subprocesses left in ``infos`` (AsyncVectorEnv)."""

    def __init__(self, env: Any, sink: TelemetrySink) -> None:
        super().__init__(env)
        self.sink = sink

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
        self._relay(infos)
        return obs, rewards, terminations, truncations, infos


__all__ = [
    "INFO_KEY",
    "EpisodeTelemetryWrapper",
    "ForwardingVectorWrapper",
    "TelemetrySink",
    "VectorTelemetryRelay",
    "deliver",
]
