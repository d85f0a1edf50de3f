"""Pydantic models of the telemetry lines: the single definition of the JSONL schema.

``schema/telemetry.schema.json`` is generated from these models
(``python -m mosaic_sdk.telemetry.models > schema/telemetry.schema.json``); a test fails when
the file is stale. Imported lazily: the emitter does not need pydantic.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mosaic_sdk.control.protocol import Reply
from mosaic_sdk.telemetry.emitter import SCHEMA_VERSION

SCHEMA_ID = "https://mosaic-worker-sdk.invalid/schema/telemetry.schema.json"


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(min_length=1)
    schema_version: Literal[1, 2] = Field(
        description="Version of the schema the line was written with (2 added control_reply)"
    )
    seq: int = Field(ge=1, description="Per-run line number, strictly increasing")
    ts_unix_ns: int = Field(ge=0, description="Wall-clock time of the line, ns since epoch")
    worker_id: str | None = None


class LifecycleLine(_Line):
    """run_started, run_completed, run_failed, run_cancelled, heartbeat, checkpoint_*."""

    type: Literal["lifecycle"]
    event: str = Field(min_length=1)
    payload: dict[str, Any]
    timestamp: float = Field(description="Unix seconds (the platform's lifecycle field)")


class StepLine(_Line):
    """One environment step, in the field names the platform's telemetry proxy reads."""

    type: Literal["step"]
    episode_index: int = Field(ge=0)
    step_index: int = Field(ge=0)
    reward: float
    terminated: bool
    truncated: bool
    action: Any = None
    observation: Any = None
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    render_payload: Any = None
    frame_ref: str | None = None
    episode_seed: int | None = None
    payload_version: int | None = None


class EpisodeLine(_Line):
    """One finished episode."""

    type: Literal["episode"]
    episode_index: int = Field(ge=0)
    total_reward: float
    steps: int = Field(ge=0)
    terminated: bool
    truncated: bool
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    episode_seed: int | None = None


class ControlReplyLine(_Line, Reply):
    """The answer to one control-protocol command (schema version 2; see mosaic_sdk.control)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["control_reply"]
    schema_version: Literal[2] = Field(description="control_reply lines came with version 2")


TelemetryObject = Annotated[
    LifecycleLine | StepLine | EpisodeLine | ControlReplyLine, Field(discriminator="type")
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(TelemetryObject)


def validate_object(data: dict[str, Any]) -> list[str]:
    """Return one message per schema violation of ``data`` ([] when it is valid)."""
    try:
        _ADAPTER.validate_python(data)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"][1:] or err["loc"]) or "line"
            out.append(f"{loc}: {err['msg']}")
        return out
    return []


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one telemetry line."""
    schema = _ADAPTER.json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"MOSAIC worker telemetry line, schema version {SCHEMA_VERSION}",
        **schema,
    }


def render_schema() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover - exercised by the schema freshness test
    sys.stdout.write(render_schema())
