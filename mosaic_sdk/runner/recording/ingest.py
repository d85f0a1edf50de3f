"""From worker output to the rows of a :class:`LineBatch`: :class:`LineIngest` for stdout (a
line that cannot be read is kept as an ``invalid`` log line, never raised), :class:`StderrIngest`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, cast

import msgspec

from mosaic_sdk.runner.recording.series import SeriesIngest
from mosaic_sdk.runner.storage.records import EpisodeRow, StepRow, TelemetryValues
from mosaic_sdk.runner.storage.rows import LineBatch, finite_float
from mosaic_sdk.runner.storage.writer import StoreWriter
from mosaic_sdk.runner.supervision.lines import CutLine
from mosaic_sdk.telemetry import METRICS_EVENT
from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH, classify_line
from mosaic_sdk.telemetry.unfinished import is_unfinished

#: A step line of the fast path this short cannot nest deeper than MAX_JSON_DEPTH: each level
#: takes 2 characters, and the fields it must have take more that are no brackets.
_SHALLOW_STEP_LEN = 2 * MAX_JSON_DEPTH + len('"type":"step""episode_index":"step_index":,,')
#: The same bound for a metrics line (``"type":"lifecycle"``, ``"event":"metrics"``, a comma).
_SHALLOW_METRICS_LEN = 2 * MAX_JSON_DEPTH + len('"type":"lifecycle""event":"metrics",')

# The fast path parses with msgspec into a struct of the fields it reads (_Line): 0.6 us for a
# flood step line, against 3.5 us for json's C scanner. On what it accepts it gives what
# json.loads gives; what it refuses and json accepts (NaN, 1e400, a lone surrogate escape) goes
# to classify_line, as any other line does.

#: The columns of a step and an episode row between ``line_no`` and ``raw``, in order.
_STEP_FIELDS = StepRow._fields[2:9]
_EPISODE_FIELDS = EpisodeRow._fields[2:9]

#: Marks a field the line does not have (``"episode_index" in d`` of a dict).
_ABSENT: Any = msgspec.UNSET


class _Line(msgspec.Struct, gc=False):
    """The fields of a step or ``metrics`` line that the fast path reads (any other is checked
    as JSON and skipped); a missing one is None, but for the two a step line must have."""

    type: Any = None
    episode_index: Any = _ABSENT
    step_index: Any = _ABSENT
    seq: Any = None
    reward: Any = None
    terminated: Any = None
    truncated: Any = None
    ts_unix_ns: Any = None
    agent_id: Any = None
    event: Any = None
    payload: Any = None


_decode_line = msgspec.json.Decoder(_Line).decode


def _nests_too_deep(text: str) -> bool:
    """Whether ``text`` has more brackets than MAX_JSON_DEPTH (then it may nest too deep:
    classify_line decides)."""
    return text.count("[") + text.count("{") > MAX_JSON_DEPTH


#: ``json.dumps(payload, sort_keys=True, default=str)``, with one encoder made once.
_encode_with_checks = json.JSONEncoder(sort_keys=True, default=str).encode
# The same text from json's C encoder called directly (JSONEncoder.encode costs 2-3x the
# encoding of a metrics payload), without circular-reference markers: payloads are parsed JSON
# or the runner's own events; a cycle would raise RecursionError, which _payload_json catches.
try:
    _c_encoder = c_make_encoder(
        None, str, encode_basestring_ascii, None, ": ", ", ", True, False, True
    )
except TypeError:  # no C encoder (None), or one of another signature: JSONEncoder does it
    _c_encoder = None


def _encode_payload(payload: object) -> str:
    """``json.dumps(payload, sort_keys=True, default=str)`` (the same text, faster)."""
    if _c_encoder is None or type(payload) is not dict:
        return _encode_with_checks(payload)
    return "".join(_c_encoder(payload, 0))


def _payload_json(payload: object) -> str | None:
    """The stored text of an event's payload (None: none, or one JSON cannot write)."""
    try:
        return None if payload is None else _encode_payload(payload)
    except (ValueError, TypeError, RecursionError):
        return None


class LineIngest:
    """Classifies stdout lines of one run into batch rows and keeps the live counters;
    :meth:`add` returns the lifecycle lines but ``metrics`` (those are batched like steps)."""

    def __init__(
        self, run_id: str, on_control_reply: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self.run_id = run_id
        #: Called with every ``control_reply`` line (stored like any other line as well).
        self.on_control_reply = on_control_reply
        self.line_no = 0
        self.steps = 0
        #: Sum of the ``steps`` of the episode lines: env steps when step lines are throttled.
        self.episode_steps = 0
        #: Finished episodes (episode lines but those flagged unfinished), and the others.
        self.episodes = 0
        self.unfinished_episodes = 0
        self.events = 0
        self.log_lines = 0
        self.invalid_lines = 0
        self.recent_returns: list[float] = []
        #: A multi-agent run's episode lines and latest returns, by agent (the live view
        #: tells the agents apart: their blend reads 0 in a zero-sum game).
        self.agent_episodes: dict[str, int] = {}
        self.agent_returns: dict[str, list[float]] = {}
        self.last_event: str | None = None
        self.terminal_event: dict[str, Any] | None = None
        #: The run's series: their numbering, and the points and refusals so far.
        self.series = SeriesIngest(run_id)

    @property
    def env_steps(self) -> int:
        """Environment steps so far: the step lines, or the episodes' step counts when the
        worker throttles its step lines (whichever is larger)."""
        return max(self.steps, self.episode_steps)

    def add(
        self, batch: LineBatch, raws: list[bytes], partial_last: bool = False
    ) -> list[dict[str, Any]]:
        """Add ``raws`` to ``batch``; returns the lifecycle events among them, in order."""
        run_id = self.run_id
        steps, episodes = batch.steps, batch.episodes
        lifecycle: list[dict[str, Any]] = []
        line_no = self.line_no
        steps_before, episodes_before = len(steps), len(episodes)
        cut_before = self.unfinished_episodes
        # the line number of the last line (the one that may be partial)
        last = line_no + len(raws) if partial_last else -1
        decode = _decode_line
        absent = _ABSENT
        for raw in raws:
            line_no += 1
            if type(raw) is CutLine:  # longer than the maximum: kept as text, never parsed
                text = raw.decode("utf-8", "replace")
                kind = "invalid" if text.lstrip()[:1] in ("{", "[") else "log"
                self._log(batch, line_no, kind, line_no == last, raw.note(), text)
                continue
            # Fast path: step and metrics lines in our field names; others go to classify_line.
            text = raw.decode("utf-8", "replace")
            if text[-1:] == "\r":
                text = text[:-1]
            # (a text ending with "}" has a first character, and a second unless it is "}")
            if text[-1:] == "}" and text[0] == "{" and text[1] == '"':
                try:
                    line = decode(text)
                except Exception:  # noqa: BLE001 - classify_line below says what is wrong
                    line = None
                # a line that may nest too deep goes to classify_line, which checks its depth
                if line is None:
                    pass
                elif line.type == "step":
                    if (
                        line.episode_index is not absent
                        and line.step_index is not absent
                        # an agent_id that is not text: classify_line makes the line invalid
                        and ((agent := line.agent_id) is None or type(agent) is str)
                        and (len(text) <= _SHALLOW_STEP_LEN or not _nests_too_deep(text))
                    ):
                        steps.append(
                            (
                                run_id,
                                line_no,
                                line.seq,
                                line.episode_index,
                                line.step_index,
                                line.reward,
                                line.terminated,
                                line.truncated,
                                line.ts_unix_ns,
                                text,
                                agent,
                            )
                        )
                        continue
                elif (
                    line.type == "lifecycle"
                    and line.event == METRICS_EVENT
                    and (len(text) <= _SHALLOW_METRICS_LEN or not _nests_too_deep(text))
                ):
                    # a metrics line (batched by the emitter like step lines, as frequent)
                    self._metrics(batch, line_no, line.seq, line.ts_unix_ns, line.payload, text)
                    continue
            try:
                self._classified(batch, line_no, text, line_no == last, lifecycle)
            except Exception as exc:  # noqa: BLE001 - whatever a line does, keep it
                error = f"mosaic run could not read this line: {type(exc).__name__}: {exc}"
                self._log(batch, line_no, "invalid", line_no == last, error[:500], text)
        self.steps += len(steps) - steps_before
        self.episodes += len(episodes) - episodes_before - (self.unfinished_episodes - cut_before)
        batch.lines += len(raws)
        self.line_no = line_no
        if len(self.recent_returns) > 200:
            del self.recent_returns[:-100]
        for own in self.agent_returns.values():
            if len(own) > 200:
                del own[:-100]
        return lifecycle

    @property
    def games(self) -> int | None:
        """A multi-agent run's games so far (the most episode lines of one agent); None for a
        single-agent run."""
        return max(self.agent_episodes.values()) if self.agent_episodes else None

    def _classified(
        self,
        batch: LineBatch,
        line_no: int,
        text: str,
        partial: bool,
        lifecycle: list[dict[str, Any]],
    ) -> None:
        """Add one line that is not on the fast path (adds its row last: raising before that
        leaves the batch as it was)."""
        item = classify_line(text)
        kind = item.kind
        d = item.data
        if d is not None and self.on_control_reply is not None and d.get("type") == "control_reply":
            self.on_control_reply(d)
        if kind == "step":
            batch.steps.append(self._row(d, line_no, item.text, _STEP_FIELDS))
        elif kind == "episode":
            # an episode the run's end cut off: stored flagged, in no count or return but
            # the env steps (docs/reference/telemetry.md, "Unfinished episodes")
            cut = is_unfinished(d)
            row = self._row(d, line_no, item.text, _EPISODE_FIELDS)
            batch.episodes.append((*row, int(cut)))
            n_steps = d.get("steps")
            if type(n_steps) is int and n_steps > 0:
                self.episode_steps += n_steps
            if cut:
                self.unfinished_episodes += 1
                return
            value = finite_float(d.get("total_reward"))
            if value is not None:
                self.recent_returns.append(value)
                batch.last_return = value
            agent = d.get("agent_id")
            if isinstance(agent, str):
                self.agent_episodes[agent] = self.agent_episodes.get(agent, 0) + 1
                if value is not None:
                    self.agent_returns.setdefault(agent, []).append(value)
        elif kind == "lifecycle":
            if d.get("event") == METRICS_EVENT:
                self._metrics(
                    batch, line_no, d.get("seq"), d.get("ts_unix_ns"), d.get("payload"), item.text
                )
                return
            name = self._lifecycle(batch, line_no, d, item.text, synthesised=False)
            try:
                self.series.lifecycle(batch, line_no, name, d)
            except Exception:  # noqa: BLE001 - the event is stored; its points are refused
                self.series.refused += 1
                batch.refused += 1
            lifecycle.append(d)
        else:
            self._log(batch, line_no, kind, partial, item.error, item.text)

    def _log(
        self, batch: LineBatch, line_no: int, kind: str, partial: bool, error: str | None, text: str
    ) -> None:
        """A stdout line stored as a log line (``kind``: ``log`` or ``invalid``)."""
        batch.logs.append((self.run_id, "stdout", line_no, kind, int(partial), error, text))
        invalid = kind == "invalid"
        batch.invalid += invalid
        self.invalid_lines += invalid
        self.log_lines += 1

    def _row(
        self, d: dict[str, Any], line_no: int, text: str, fields: tuple[str, ...]
    ) -> TelemetryValues:
        """A step or episode row: ``fields`` of ``d`` between the line number and the text."""
        return cast(
            TelemetryValues,
            (self.run_id, line_no, *map(d.get, fields), text, d.get("agent_id")),
        )

    def _metrics(
        self, batch: LineBatch, line_no: int, seq: Any, ts: Any, payload: Any, text: str
    ) -> None:
        """A ``metrics`` line: stored as an event, its values as series points; batched like
        step lines, not handed back as a lifecycle line."""
        batch.events.append(
            (self.run_id, line_no, seq, METRICS_EVENT, ts, 0, _payload_json(payload), text)
        )
        self.events += 1
        try:
            self.series.metrics(batch, line_no, payload, ts)
        except Exception:  # noqa: BLE001 - the event is stored; its points are refused
            self.series.refused += 1
            batch.refused += 1

    def _lifecycle(
        self, batch: LineBatch, line_no: int, d: dict[str, Any], text: str, synthesised: bool
    ) -> str:
        event = d.get("event")
        name = event if isinstance(event, str) and event else "unknown"
        batch.events.append(
            (
                self.run_id,
                line_no,
                d.get("seq"),
                name,
                d.get("ts_unix_ns"),
                1 if synthesised else 0,
                _payload_json(d.get("payload")),
                text,
            )
        )
        self.events += 1
        if name != METRICS_EVENT:
            self.last_event = name
        if name in ("run_completed", "run_failed", "run_cancelled"):
            self.terminal_event = d
        return name

    def add_synthesised(self, batch: LineBatch, event: dict[str, Any]) -> None:
        """Add an event the runner made up (numbered after the worker's last line)."""
        self.line_no += 1
        text = json.dumps(event, sort_keys=True, separators=(",", ":"), default=str)
        self._lifecycle(batch, self.line_no, event, text, synthesised=True)


class StderrIngest:
    """Receives the worker's stderr lines (on the stderr thread) and queues them as log rows."""

    def __init__(self, run_id: str, writer: StoreWriter) -> None:
        self.run_id = run_id
        self.writer = writer
        self.line_no = 0

    def __call__(self, raws: list[bytes], partial: bool) -> None:
        batch = LineBatch()
        for raw in raws:
            self.line_no += 1
            text = raw.decode("utf-8", "replace").rstrip("\r")
            note = raw.note() if type(raw) is CutLine else None
            batch.logs.append(
                (self.run_id, "stderr", self.line_no, "log", int(partial), note, text)
            )
        batch.stderr = len(raws)
        self.writer.submit(batch)
