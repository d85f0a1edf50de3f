"""Pydantic models of the telemetry lines: the single definition of the JSONL schema.

``schema/telemetry.schema.json`` is generated from these models
(``python -m mosaic_sdk.telemetry.models > schema/telemetry.schema.json``); a test fails when
the file is stale. Imported lazily: the emitter does not need pydantic.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from mosaic_sdk.control.protocol import Reply
from mosaic_sdk.telemetry.emitter import SCHEMA_VERSION
from mosaic_sdk.telemetry.episode_index import METADATA_KEY

SCHEMA_ID = "https://mosaic-worker-sdk.invalid/schema/telemetry.schema.json"


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    run_id: str = Field(min_length=1)
    schema_version: Literal[1, 2, 3] = Field(
        description="Version of the schema the line was written with (2 added control_reply; "
        "3 put the episode index of step and episode lines into metadata.episode_index too)"
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


#: In version 3, step and episode lines carry ``metadata.episode_index`` (the platform's proxy
#: reads the index there and nowhere else); it must equal ``episode_index``, which JSON Schema
#: cannot say, the models can.
_INDEX_IN_METADATA: dict[str, Any] = {
    "if": {"properties": {"schema_version": {"const": 3}}, "required": ["schema_version"]},
    "then": {
        "required": ["metadata"],
        "properties": {
            "metadata": {"type": "object", "required": [METADATA_KEY]},
        },
    },
}


class _EpisodeIndexed(_Line):
    """A step or episode line: carries the episode index, in version 3 twice."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_INDEX_IN_METADATA)

    episode_index: int = Field(
        ge=0, description="The episode (0, 1, 2...); from version 3 also metadata.episode_index"
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="The worker's metadata; from version 3 with episode_index, equal to the "
        "line's (where the platform's telemetry proxy reads the episode index)",
    )
    agent_id: str | None = None
    episode_seed: int | None = Field(None, ge=0, lt=2**64)

    @model_validator(mode="after")
    def _index_in_metadata(self) -> _EpisodeIndexed:
        if self.schema_version < 3:
            return self
        given = (self.metadata or {}).get(METADATA_KEY)
        if given is None:
            raise ValueError(
                "a version-3 line needs metadata.episode_index (the platform's proxy reads "
                "the episode index only there)"
            )
        if type(given) is not int or given != self.episode_index:
            raise ValueError(
                f"metadata.episode_index is {given!r} but episode_index is {self.episode_index}"
            )
        return self


class StepLine(_EpisodeIndexed):
    """One environment step, in the field names the platform's telemetry proxy reads."""

    type: Literal["step"]
    step_index: int = Field(ge=0)
    reward: float
    terminated: bool
    truncated: bool
    action: Any = None
    observation: Any = None
    render_payload: Any = None
    frame_ref: str | None = None
    payload_version: int | None = Field(None, ge=0, lt=2**32)


class EpisodeLine(_EpisodeIndexed):
    """One finished episode."""

    type: Literal["episode"]
    total_reward: float
    steps: int = Field(ge=0)
    terminated: bool
    truncated: bool


class ControlReplyLine(_Line, Reply):
    """The answer to one control-protocol command (schema version 2; see mosaic_sdk.control)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["control_reply"]
    schema_version: Literal[2, 3] = Field(description="control_reply lines came with version 2")


TelemetryObject = Annotated[
    LifecycleLine | StepLine | EpisodeLine | ControlReplyLine, Field(discriminator="type")
]
_ADAPTER: TypeAdapter[TelemetryObject] = TypeAdapter(TelemetryObject)


def validate_object(data: Mapping[str, object]) -> list[str]:
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


def json_schema() -> dict[str, object]:
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
