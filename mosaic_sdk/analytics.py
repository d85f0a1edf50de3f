"""``analytics.json``: the manifest a worker writes into its run directory when a run ends."""

from __future__ import annotations

import json
import math
import os
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

#: The file name, inside the run directory.
ANALYTICS_FILE = "analytics.json"
#: The version this SDK writes and reads.
ANALYTICS_SCHEMA = "mosaic.analytics/1"
SCHEMA_ID = "https://mosaic-worker-sdk.invalid/schema/analytics.schema.json"
RunStatus = Literal["completed", "failed", "cancelled"]


class AnalyticsError(ValueError):
    """``analytics.json`` is missing or not a valid manifest; the message says what to do."""


@dataclass(frozen=True)
class Checkpoint:
    """A file the run saved a policy to."""

    path: str = field(metadata={"doc": "Path of the file (absolute, or relative to the run dir)"})
    step: int | None = field(default=None, metadata={"doc": "Env step it was saved at"})


@dataclass(frozen=True)
class AgentReturns:
    """One agent's return summary in a multi-agent run (``extra.agent_returns.<agent>``)."""

    episodes: int = field(metadata={"doc": "The agent's episodes (its episode lines)"})
    mean_return: float | None = field(
        default=None, metadata={"doc": "Mean of its episode returns (null without episodes)"}
    )
    best_return: float | None = field(default=None, metadata={"doc": "Max of its returns"})
    last_return: float | None = field(default=None, metadata={"doc": "Its last return"})

    @classmethod
    def of(cls, returns: Iterable[float]) -> AgentReturns:
        """The summary of one agent's episode returns, in order (non-finite ones counted as
        episodes but left out of the numbers)."""
        kept = [float(r) for r in returns]
        finite = [r for r in kept if math.isfinite(r)]
        return cls(
            episodes=len(kept),
            mean_return=sum(finite) / len(finite) if finite else None,
            best_return=max(finite) if finite else None,
            last_return=finite[-1] if finite else None,
        )


#: The key of ``extra`` the SDK writes each agent's :class:`AgentReturns` under.
AGENT_RETURNS = "agent_returns"


@dataclass(frozen=True)
class AnalyticsManifest:
    """The outcome of one run, as written to ``analytics.json``."""

    run_id: str = field(metadata={"doc": "The run's id (MOSAIC_RUN_ID)"})
    worker_type: str = field(metadata={"doc": "The worker's entry-point name"})
    status: RunStatus = field(metadata={"doc": "How the run ended"})
    episodes: int = field(metadata={"doc": "Episodes finished"})
    steps: int = field(metadata={"doc": "Env steps taken"})
    duration_seconds: float = field(metadata={"doc": "Wall time of the run"})
    env_id: str | None = field(default=None, metadata={"doc": "The env the run used"})
    algo: str | None = field(default=None, metadata={"doc": "Algorithm or policy name"})
    seed: int | None = field(default=None, metadata={"doc": "The run's seed"})
    returns: list[float | None] = field(
        default_factory=list,
        metadata={
            "doc": "Episode returns in order: all, or the most recent ones the worker kept "
            "(null for a return that was not a finite number)"
        },
    )
    mean_return: float | None = field(
        default=None, metadata={"doc": "Mean of `returns` (null without episodes)"}
    )
    best_return: float | None = field(default=None, metadata={"doc": "Max of `returns`"})
    last_return: float | None = field(default=None, metadata={"doc": "Last of `returns`"})
    checkpoints: list[Checkpoint] = field(
        default_factory=list, metadata={"doc": "Policies the run saved"}
    )
    tensorboard_dirs: list[str] = field(
        default_factory=list, metadata={"doc": "Directories holding TensorBoard event files"}
    )
    log: str | None = field(
        default=None, metadata={"doc": "A log file of the run, relative to the run dir"}
    )
    extra: dict[str, Any] = field(
        default_factory=dict,
        metadata={
            "doc": "Worker-specific data, under names the worker documents; `agent_returns` "
            "(written by the SDK): each agent's return summary in a multi-agent run"
        },
    )
    schema: str = field(default=ANALYTICS_SCHEMA, metadata={"doc": "Version of this format"})

    @classmethod
    def build(
        cls,
        *,
        run_id: str,
        worker_type: str,
        status: RunStatus,
        returns: Iterable[float],
        steps: int,
        duration_seconds: float,
        episodes: int | None = None,
        agent_returns: Mapping[str, Iterable[float]] | None = None,
        **more: Any,
    ) -> AnalyticsManifest:
        """A manifest whose return summary (mean, best, last) is computed from ``returns``.

        ``episodes`` defaults to ``len(returns)`` (pass it when ``returns`` is only a tail).
        ``agent_returns`` (a multi-agent run): each agent's episode returns in order; their
        summaries go to ``extra.agent_returns`` (:meth:`agent_summaries` reads them).
        """
        if agent_returns is not None:
            extra = dict(more.pop("extra", None) or {})
            extra[AGENT_RETURNS] = {
                str(agent): asdict(AgentReturns.of(own)) for agent, own in agent_returns.items()
            }
            more["extra"] = extra
        kept = [float(r) for r in returns]
        summary = AgentReturns.of(kept)
        checkpoints = [
            c if isinstance(c, Checkpoint) else Checkpoint(**c) for c in more.pop("checkpoints", [])
        ]
        return cls(
            run_id=run_id,
            worker_type=worker_type,
            status=status,
            episodes=summary.episodes if episodes is None else episodes,
            steps=steps,
            duration_seconds=round(float(duration_seconds), 6),
            returns=[r if math.isfinite(r) else None for r in kept],
            mean_return=summary.mean_return,
            best_return=summary.best_return,
            last_return=summary.last_return,
            checkpoints=checkpoints,
            **more,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict written to the file."""
        return asdict(self)

    def agent_summaries(self) -> dict[str, AgentReturns]:
        """Each agent's return summary (``extra.agent_returns``); empty for a single-agent
        run, or a manifest written without them."""
        found = self.extra.get(AGENT_RETURNS)
        if not isinstance(found, Mapping):
            return {}
        return {agent: AgentReturns(**summary) for agent, summary in found.items()}

    @classmethod
    def from_dict(cls, data: object, *, source: str = "analytics.json") -> AnalyticsManifest:
        """Check ``data`` against the model; raises :class:`AnalyticsError` naming each problem."""
        if not isinstance(data, Mapping):
            raise AnalyticsError(f"{source}: expected a JSON object, got {type(data).__name__}")
        schema = data.get("schema")
        if schema != ANALYTICS_SCHEMA:
            raise AnalyticsError(
                f"{source}: schema is {schema!r}, this SDK reads {ANALYTICS_SCHEMA!r}; the "
                "worker that wrote it uses another format (upgrade it to the SDK's "
                "mosaic_sdk.analytics.write_analytics)"
            )
        problems = _problems(cls, data, "")
        extra = data.get("extra")
        if isinstance(extra, Mapping) and AGENT_RETURNS in extra:
            problems += _agent_problems(extra[AGENT_RETURNS])
        if problems:
            raise AnalyticsError(f"{source} is not a valid manifest: " + "; ".join(problems))
        values = dict(data)
        values["checkpoints"] = [Checkpoint(**c) for c in data.get("checkpoints", [])]
        return cls(**values)


def write_analytics(run_dir: str | Path, manifest: AnalyticsManifest) -> Path:
    """Write ``manifest`` to ``run_dir/analytics.json`` atomically; returns the path.

    Non-finite numbers (NaN, inf) are refused with a ``ValueError``: JSON cannot hold them.
    """
    directory = Path(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ANALYTICS_FILE
    text = json.dumps(manifest.to_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n"
    tmp = path.with_name(f".{ANALYTICS_FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_analytics(run_dir: str | Path) -> AnalyticsManifest:
    """Read and check ``run_dir/analytics.json``.

    Raises :class:`AnalyticsError` when the file is missing (the run may still be going, or
    its worker writes none), is not JSON, has another ``schema``, or breaks the model; the
    message names the file and the problem.
    """
    path = Path(run_dir) / ANALYTICS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AnalyticsError(
            f"{path} does not exist: the worker writes it when the run ends (is the run still "
            "going, or does the worker write no manifest?)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AnalyticsError(f"{path} cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnalyticsError(
            f"{path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return AnalyticsManifest.from_dict(data, source=str(path))


# --- the model as types: used to check a file and to generate the JSON Schema -----------------


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, globalns=vars(sys.modules[__name__]))


def _problems(cls: type, data: Mapping[str, object], where: str) -> list[str]:
    hints = _hints(cls)
    known = {f.name for f in fields(cls)}
    problems = [f"{where}{k}: unknown field" for k in sorted(set(data) - known)]
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                problems.append(f"{where}{f.name}: missing")
            continue
        problems += _check(hints[f.name], data[f.name], f"{where}{f.name}")
    return problems


def _agent_problems(value: object) -> list[str]:
    where = f"extra.{AGENT_RETURNS}"
    if not isinstance(value, Mapping):
        return [f"{where}: expected an object {{agent: summary}}, got {type(value).__name__}"]
    problems = []
    for agent, summary in value.items():
        if not isinstance(summary, Mapping):
            problems.append(f"{where}.{agent}: expected an object")
        else:
            problems += _problems(AgentReturns, summary, f"{where}.{agent}.")
    return problems


def _check(tp: Any, value: object, where: str) -> list[str]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if any(not _check(a, value, where) for a in args):
            return []
        return [f"{where}: {value!r} is not {' or '.join(_name(a) for a in args)}"]
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {list(args)}"]
    if tp is type(None):
        return [] if value is None else [f"{where}: expected null"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [p for i, item in enumerate(value) for p in _check(args[0], item, f"{where}[{i}]")]
    if origin is dict:
        ok = isinstance(value, dict) and all(isinstance(k, str) for k in value)
        return [] if ok else [f"{where}: expected an object"]
    if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):
        if not isinstance(value, Mapping):
            return [f"{where}: expected an object"]
        return _problems(tp, value, f"{where}.")
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return [] if ok else [f"{where}: expected {_name(tp)}, got {value!r}"]


def _name(tp: Any) -> str:
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _json_type(tp: Any, defs: dict[str, object]) -> dict[str, object]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_json_type(a, defs) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _json_type(args[0], defs)}
    if origin is dict:
        return {"type": "object"}
    if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):
        defs[tp.__name__] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    return {"type": simple[tp]}


def _object_schema(cls: type, defs: dict[str, object]) -> dict[str, object]:
    hints = _hints(cls)
    props: dict[str, dict[str, object]] = {}
    required: list[str] = []
    for f in fields(cls):
        props[f.name] = {"description": f.metadata["doc"], **_json_type(hints[f.name], defs)}
        if f.default is MISSING and f.default_factory is MISSING:
            required.append(f.name)
    if cls is AnalyticsManifest:
        props["schema"]["const"] = ANALYTICS_SCHEMA
        required.append("schema")
        # extra is the worker's; the SDK's own key in it is described (and checked) here.
        props["extra"]["properties"] = {
            AGENT_RETURNS: {
                "description": "Each agent's return summary in a multi-agent run (by agent id)",
                "type": "object",
                "additionalProperties": _json_type(AgentReturns, defs),
            }
        }
    return {
        "additionalProperties": False,
        "description": (cls.__doc__ or "").strip(),
        "properties": props,
        "required": required,
        "title": cls.__name__,
        "type": "object",
    }


def analytics_json_schema() -> dict[str, object]:
    """The JSON Schema of ``analytics.json``, generated from :class:`AnalyticsManifest`."""
    defs: dict[str, object] = {}
    schema = _object_schema(AnalyticsManifest, defs)
    return {
        "$id": SCHEMA_ID,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "$defs": defs,
    }


def render_schema() -> str:
    """The text of ``schema/analytics.schema.json``."""
    return json.dumps(analytics_json_schema(), indent=2, sort_keys=True) + "\n"


__all__ = [
    "AGENT_RETURNS",
    "ANALYTICS_FILE",
    "ANALYTICS_SCHEMA",
    "AnalyticsError",
    "AgentReturns",
    "AnalyticsManifest",
    "Checkpoint",
    "analytics_json_schema",
    "read_analytics",
    "render_schema",
    "write_analytics",
]


if __name__ == "__main__":  # pragma: no cover - exercised by the schema freshness test
    sys.stdout.write(render_schema())
