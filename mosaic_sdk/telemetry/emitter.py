"""The JSONL telemetry emitter a worker writes its stdout with."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TextIO

from mosaic_sdk.telemetry.encoding import dumps, encode_value
from mosaic_sdk.telemetry.episode_index import metadata_json, unsigned
from mosaic_sdk.telemetry.output import LineOutput, env_float
from mosaic_sdk.telemetry.unfinished import UNFINISHED_KEY

#: 3: step and episode lines carry ``metadata.episode_index`` (where the platform's proxy reads
#: the episode index), equal to ``episode_index``; step lines may carry ``payload_version``.
SCHEMA_VERSION = 3

LIFECYCLE_EVENTS: tuple[str, ...] = (
    "run_started",
    "run_completed",
    "run_failed",
    "run_cancelled",
    "heartbeat",
    "checkpoint_saved",
    "checkpoint_loaded",
    "paused",
    "resumed",
)
TERMINAL_EVENTS: tuple[str, ...] = ("run_completed", "run_failed", "run_cancelled")

#: The lifecycle event :meth:`TelemetryEmitter.metrics` writes: ``{"step": int, "values":
#: {name: number}, "agent_id": str}`` (``agent_id`` only when given).
METRICS_EVENT = "metrics"
#: The largest step of a series point: 2**53, the largest integer a float64 (a chart's column,
#: a JavaScript number) holds exactly with every integer below it. :meth:`TelemetryEmitter.metrics`
#: refuses steps outside 0 .. MAX_STEP, and the store refuses them in any worker's lines.
MAX_STEP = 2**53


class TelemetryEmitter(LineOutput):
    """Writes a run's telemetry as JSONL.

    Every line is one JSON object, compact, keys sorted, carrying ``schema_version``, a per-run
    ``seq`` that increases by one per line written, and ``ts_unix_ns``. Four kinds, one
    discriminator (``type``):

    - lifecycle: ``{"event": "run_started", "payload": {...}, "run_id": ..., "timestamp": <s>,
      "type": "lifecycle", ...}``, the platform emitter's shape plus the common fields;
    - step: ``"type": "step"`` with the fields the platform's telemetry proxy reads
      (``metadata.episode_index``, ``step_index``, ``action``, ``observation``, ``reward``,
      ``terminated``, ``truncated``, ``agent_id``, ``worker_id``, ``episode_seed``,
      ``payload_version``, ``render_payload``, ``frame_ref``), and the top-level
      ``episode_index`` the SDK reads (the same number: :mod:`mosaic_sdk.telemetry.episode_index`);
    - episode: ``"type": "episode"`` with ``episode_index`` (and ``metadata.episode_index``),
      ``total_reward``, ``steps``, ``terminated``, ``truncated``, ...

    Delivery (:mod:`mosaic_sdk.telemetry.output`): lifecycle lines are written and flushed at
    once, together with anything pending. Step and episode lines are batched and flushed when
    64 KiB are pending or, at the latest, ``flush_interval`` seconds after the first pending line
    (default 0.02 s, set by the argument or ``MOSAIC_TELEMETRY_FLUSH_MS``; ``0`` flushes every
    line). A daemon thread enforces the bound while the worker is busy elsewhere; ``close()``
    (also at interpreter exit) flushes the rest.

    Throttling of step lines: ``step_every=N`` keeps every Nth step line, ``max_step_rate=K`` at
    most K per second; the step that ends an episode is always kept, and so is any step emitted
    with ``force=True``. ``stats()`` counts what was written and dropped.

    Imports neither numpy nor pydantic; numpy values are encoded through their
    ``tolist()``.

    Thread-safe: any thread may emit; ``seq`` follows the order lines are written in.
    """

    def __init__(
        self,
        run_id: str,
        stream: TextIO | None = None,
        *,
        worker_id: str | None = None,
        agent_id: str | None = None,
        flush_interval: float | None = None,
        step_every: int | None = None,
        max_step_rate: float | None = None,
    ) -> None:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("TelemetryEmitter needs a non-empty run_id")
        self.run_id = run_id
        super().__init__(stream, flush_interval)
        if step_every is None:
            step_every = int(env_float("MOSAIC_TELEMETRY_STEP_EVERY", 1))
        if step_every < 1:
            raise ValueError("step_every must be >= 1")
        if max_step_rate is not None and max_step_rate <= 0:
            raise ValueError("max_step_rate must be > 0 steps per second")
        self.step_every = step_every
        self.max_step_rate = max_step_rate

        self._common = f'"run_id":{dumps(run_id)},"schema_version":{SCHEMA_VERSION},'
        self._agent = f'"agent_id":{dumps(agent_id)},' if agent_id is not None else ""
        self._worker = f',"worker_id":{dumps(worker_id)}' if worker_id is not None else ""
        self._worker_id = worker_id
        #: (episode index, its ``"metadata":...,`` text) of the last step without metadata.
        self._bare_metadata: tuple[int, str] = (-1, "")

        self._seq = 0
        #: The last terminal event written (run_completed / run_failed / run_cancelled).
        self.terminal_event: str | None = None
        self._steps_seen = 0
        self._steps_dropped = 0
        self._bucket = float(max_step_rate or 0.0)
        self._bucket_t = time.monotonic()

    # -- generic writing --------------------------------------------------------------------
    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def __enter__(self) -> TelemetryEmitter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> dict[str, int]:
        """Lines written, step lines seen and dropped by throttling, last ``seq``."""
        with self._lock:
            return {
                "lines": self._lines,
                "steps_seen": self._steps_seen,
                "steps_dropped": self._steps_dropped,
                "seq": self._seq,
            }

    # -- lifecycle --------------------------------------------------------------------------
    def lifecycle(self, event: str, payload: Mapping[str, Any] | None = None) -> int:
        """Write one lifecycle line and flush it; returns its ``seq``.

        ``event`` is one of :data:`LIFECYCLE_EVENTS` or a worker-specific name.
        """
        if not isinstance(event, str) or not event:
            raise ValueError("a lifecycle event needs a non-empty name")
        with self._lock:
            seq = self._lifecycle_locked(event, dict(payload or {}), urgent=True)
            if event in TERMINAL_EVENTS:
                self.terminal_event = event
            return seq

    def _lifecycle_locked(self, event: str, payload: dict[str, Any], urgent: bool) -> int:
        body = dumps(payload)  # before the seq: an unencodable payload leaves no gap
        seq = self._next_seq()
        now_ns = time.time_ns()
        line = (
            f'{{"event":{dumps(event)},"payload":{body},{self._common}"seq":{seq},'
            f'"timestamp":{now_ns / 1e9!r},"ts_unix_ns":{now_ns},"type":"lifecycle"'
            f"{self._worker}}}\n"
        )
        self._write_locked(line, urgent=urgent)
        return seq

    def run_started(
        self,
        *,
        worker_type: str,
        algo: str | None = None,
        env_id: str | None = None,
        seed: int | None = None,
        config: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> int:
        payload = {"worker_type": worker_type, "algo": algo, "env_id": env_id, "seed": seed}
        return self.lifecycle("run_started", {**payload, "config": dict(config or {}), **extra})

    def run_completed(
        self,
        *,
        episodes: int,
        total_reward: float,
        duration_seconds: float,
        final_metrics: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> int:
        payload: dict[str, Any] = {"episodes": episodes, "total_reward": total_reward}
        payload.update(duration_seconds=duration_seconds, final_metrics=dict(final_metrics or {}))
        return self.lifecycle("run_completed", {**payload, **extra})

    def run_failed(
        self,
        *,
        error: str,
        error_type: str | None = None,
        traceback: str | None = None,
        episode: int | None = None,
        step: int | None = None,
        **extra: Any,
    ) -> int:
        payload = {"error": error, "error_type": error_type, "traceback": traceback}
        return self.lifecycle("run_failed", {**payload, "episode": episode, "step": step, **extra})

    def run_cancelled(self, *, reason: str, completed_episodes: int, **extra: Any) -> int:
        payload = {"reason": reason, "completed_episodes": completed_episodes, **extra}
        return self.lifecycle("run_cancelled", payload)

    def heartbeat(self, **payload: Any) -> int:
        return self.lifecycle("heartbeat", payload)

    def checkpoint_saved(
        self,
        *,
        checkpoint_path: str,
        episode: int | None = None,
        step: int | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> int:
        return self._checkpoint("checkpoint_saved", checkpoint_path, episode, step, metrics)

    def checkpoint_loaded(
        self,
        *,
        checkpoint_path: str,
        episode: int | None = None,
        step: int | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> int:
        return self._checkpoint("checkpoint_loaded", checkpoint_path, episode, step, metrics)

    def _checkpoint(
        self,
        event: str,
        checkpoint_path: str,
        episode: int | None,
        step: int | None,
        metrics: Mapping[str, Any] | None,
    ) -> int:
        payload = {
            "checkpoint_path": str(checkpoint_path),
            "episode": episode,
            "step": step,
            "metrics": dict(metrics or {}),
        }
        return self.lifecycle(event, payload)

    def metrics(
        self,
        values: Mapping[str, Any],
        *,
        step: int,
        agent_id: str | None = None,
    ) -> int:
        """Report named numbers at ``step`` (one point of each series); returns the line's ``seq``.

        ``values`` maps a series name to a number, TensorBoard-style ``group/name``
        (``{"losses/value": 0.3, "charts/sps": 1200}``); nested mappings become dotted names
        when the run is stored. ``step`` is the x value of your choosing (env steps, updates),
        an integer from 0 to :data:`MAX_STEP` (2**53). ``agent_id`` gives per-agent series in
        multi-agent workers.

        Written as a ``metrics`` lifecycle event (:data:`METRICS_EVENT`) but batched like step
        lines rather than flushed at once, so reporting every update costs no extra write.
        NaN and infinity are written as ``NaN``/``Infinity`` and stored as such.
        """
        if not isinstance(values, Mapping):
            raise TypeError(f"metrics() takes a mapping of names to numbers, got {values!r}")
        if isinstance(step, bool) or not isinstance(step, int):
            step = int(step)  # numpy integers; a float step of 3.0 becomes 3
        if not 0 <= step <= MAX_STEP:
            raise ValueError(
                f"metrics() needs a step >= 0 and <= 2**53 (what a float64 holds exactly), "
                f"got {step!r}"
            )
        payload: dict[str, Any] = {"step": step, "values": dict(values)}
        if agent_id is not None:
            self._agent_field(agent_id)  # the same check as step and episode lines
            payload["agent_id"] = agent_id
        with self._lock:
            return self._lifecycle_locked(METRICS_EVENT, payload, urgent=False)

    # -- control replies and foreign dialects -----------------------------------------------
    def control_reply(self, fields: Mapping[str, Any]) -> int:
        """Write one ``control_reply`` line (``fields``: ``v``, ``id``, ``cmd``, ``ok``, ...)
        and flush it; returns its ``seq``."""
        with self._lock:
            seq = self._next_seq()
            line = {**fields, "run_id": self.run_id, "schema_version": SCHEMA_VERSION}
            line.update(seq=seq, ts_unix_ns=time.time_ns(), type="control_reply")
            if self._worker_id is not None:
                line["worker_id"] = self._worker_id
            self._write_locked(dumps(line) + "\n", urgent=True)
            return seq

    def write_foreign(self, obj: Mapping[str, Any]) -> None:
        """Write one JSON object exactly as given (no common fields, no ``seq``) and flush.

        For another wire dialect sharing stdout, such as the deployed CleanRL interactive
        dialect 1.0 (:mod:`mosaic_sdk.control.dialect`): ordered with the telemetry lines.
        """
        line = dumps(dict(obj)) + "\n"
        with self._lock:
            self._write_locked(line, urgent=True)

    # -- steps and episodes -----------------------------------------------------------------
    def _keep_step_locked(self) -> bool:
        self._steps_seen += 1
        if self.step_every > 1 and (self._steps_seen - 1) % self.step_every:
            return False
        rate = self.max_step_rate
        if rate is not None:
            now = time.monotonic()
            self._bucket = min(rate, self._bucket + (now - self._bucket_t) * rate)
            self._bucket_t = now
            if self._bucket < 1.0:
                return False
            self._bucket -= 1.0
        return True

    def _agent_field(self, agent_id: str | None) -> str:
        if agent_id is None:
            return self._agent
        if not isinstance(agent_id, str) or not agent_id:
            raise ValueError(f"agent_id must be a non-empty string, got {agent_id!r}")
        return f'"agent_id":{dumps(agent_id)},'

    def step(
        self,
        episode_index: int,
        step_index: int,
        reward: float,
        *,
        terminated: bool = False,
        truncated: bool = False,
        action: Any = None,
        observation: Any = None,
        metadata: Mapping[str, Any] | None = None,
        render_payload: Any = None,
        frame_ref: str | None = None,
        episode_seed: int | None = None,
        payload_version: int | None = None,
        agent_id: str | None = None,
        force: bool = False,
    ) -> bool:
        """Write one step line (subject to throttling); returns whether it was written.

        The episode index goes at the top and into ``metadata`` (where the platform's proxy
        reads it; :mod:`mosaic_sdk.telemetry.episode_index`). ``agent_id`` overrides the
        emitter's for this line. ``ValueError`` for values the proxy cannot take (a negative
        index, a seed or ``payload_version`` that is not an unsigned integer).
        """
        index = int(episode_index)
        step_no = int(step_index)
        if index < 0 or step_no < 0:
            raise ValueError(
                f"episode_index and step_index must be >= 0, got {episode_index!r}, {step_index!r}"
            )
        enc = encode_value
        head = f'"action":{enc(action)},' if action is not None else ""
        head += self._agent if agent_id is None else self._agent_field(agent_id)
        head += f'"episode_index":{index},'
        if episode_seed is not None:
            head += f'"episode_seed":{unsigned("episode_seed", episode_seed)},'
        if frame_ref is not None:
            head += f'"frame_ref":{dumps(frame_ref)},'
        if metadata:
            head += f'"metadata":{metadata_json(index, metadata)},'
        else:  # the same text for every step of an episode: made once per episode
            bare = self._bare_metadata
            if bare[0] != index:
                bare = self._bare_metadata = (index, f'"metadata":{metadata_json(index)},')
            head += bare[1]
        if observation is not None:
            head += f'"observation":{enc(observation)},'
        if payload_version is not None:
            head += f'"payload_version":{unsigned("payload_version", payload_version, 32)},'
        if render_payload is not None:
            head += f'"render_payload":{enc(render_payload)},'
        tail = (
            f'"step_index":{step_no},"terminated":{"true" if terminated else "false"},'
            f'"truncated":{"true" if truncated else "false"},'
        )
        reward_text = enc(float(reward) if type(reward) is not float else reward)
        with self._lock:
            keep = self._keep_step_locked() or force or terminated or truncated
            if not keep:
                self._steps_dropped += 1
                return False
            seq = self._next_seq()
            line = (
                f'{{{head}"reward":{reward_text},{self._common}"seq":{seq},{tail}'
                f'"ts_unix_ns":{time.time_ns()},"type":"step"{self._worker}}}\n'
            )
            self._write_locked(line, urgent=False)
        return True

    def episode(
        self,
        episode_index: int,
        total_reward: float,
        steps: int,
        *,
        terminated: bool = False,
        truncated: bool = False,
        metadata: Mapping[str, Any] | None = None,
        episode_seed: int | None = None,
        agent_id: str | None = None,
        unfinished: bool = False,
    ) -> int:
        """Write one episode line (never throttled); returns its ``seq``.

        ``metadata`` gets the episode index as ``episode_index`` (see :meth:`step`).
        ``unfinished=True``: the episode was cut off by the end of the run (see
        :mod:`mosaic_sdk.telemetry.unfinished`): the line says ``truncated: true`` and
        ``metadata.unfinished: true``, and counts in no episode count or return; a
        ``terminated`` episode is finished, so that is refused with a ``ValueError``.
        """
        index = int(episode_index)
        n_steps = int(steps)
        if index < 0 or n_steps < 0:
            raise ValueError(
                f"episode_index and steps must be >= 0, got {episode_index!r}, {steps!r}"
            )
        if unfinished:
            if terminated:
                raise ValueError(
                    "an unfinished episode cannot have terminated (a terminated episode is "
                    "finished): pass terminated=False, or unfinished=False"
                )
            truncated = True
            metadata = {**(metadata or {}), UNFINISHED_KEY: True}
        head = self._agent_field(agent_id) + f'"episode_index":{index},'
        if episode_seed is not None:
            head += f'"episode_seed":{unsigned("episode_seed", episode_seed)},'
        head += f'"metadata":{metadata_json(index, metadata)},'
        with self._lock:
            seq = self._next_seq()
            line = (
                f'{{{head}{self._common}"seq":{seq},"steps":{n_steps},'
                f'"terminated":{"true" if terminated else "false"},'
                f'"total_reward":{encode_value(float(total_reward))},'
                f'"truncated":{"true" if truncated else "false"},'
                f'"ts_unix_ns":{time.time_ns()},"type":"episode"{self._worker}}}\n'
            )
            self._write_locked(line, urgent=False)
            return seq
