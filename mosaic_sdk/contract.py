"""The worker contract: metadata, capabilities, configuration and launch command (pydantic v2)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from mosaic_sdk.job_descriptor import unwrap_job_descriptor
from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH, json_depth_exceeds

# --- vocabularies ---------------------------------------------------------------------------

#: How agents act: one agent stepping alone, several taking turns, several acting at once...
PARADIGMS: tuple[str, ...] = (
    "sequential",  # one agent, one env step at a time (classic single-agent RL)
    "turn_based",  # several agents acting in turn (AEC, board games)
    "simultaneous",  # several agents acting at once (parallel multi-agent)
    "hierarchical",  # options / manager-worker policies
    "population",  # population-based training
    "offline",  # learning from a fixed dataset
)

#: Environment families a worker can run.
ENV_FAMILIES: tuple[str, ...] = (
    "gymnasium",
    "atari",
    "box2d",
    "classic_control",
    "toy_text",  # gymnasium's toy-text envs: FrozenLake, Taxi, CliffWalking, Blackjack
    "mujoco",
    "dm_control",
    "minigrid",
    "babyai",
    "procgen",
    "pettingzoo",
    "meltingpot",
    "vizdoom",
    "custom",
)

#: Action space kinds (gymnasium space classes, lower-cased).
ACTION_SPACES: tuple[str, ...] = ("discrete", "continuous", "multi_discrete", "multi_binary")

#: Observation kinds.
OBSERVATION_SPACES: tuple[str, ...] = ("vector", "image", "discrete", "dict", "text", "graph")

VOCABULARIES: dict[str, tuple[str, ...]] = {
    "supported_paradigms": PARADIGMS,
    "env_families": ENV_FAMILIES,
    "action_spaces": ACTION_SPACES,
    "observation_spaces": OBSERVATION_SPACES,
}

# --- run ids --------------------------------------------------------------------------------

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def check_run_id(value: str) -> str:
    """Return ``value`` if it is a safe run id, else raise ``ValueError`` saying why.

    A run id is 1-128 characters of ``[A-Za-z0-9._-]`` not starting with ``.``: safe as a file
    name and inside a shared-memory name (``../x``, ``a/b`` and ``.hidden`` are refused).
    """
    if not isinstance(value, str):
        raise ValueError(f"run_id must be a string, got {type(value).__name__}")
    if RUN_ID_PATTERN.fullmatch(value):
        return value
    if not value:
        raise ValueError("run_id is empty; use 1-128 characters of A-Z a-z 0-9 . _ -")
    if len(value) > 128:
        raise ValueError(f"run_id is {len(value)} characters long; the limit is 128")
    bad = sorted({c for c in value if not re.fullmatch(r"[A-Za-z0-9._-]", c)})
    if bad:
        raise ValueError(
            f"run_id {value!r} contains {''.join(bad)!r}; use only A-Z a-z 0-9 . _ - "
            "(it becomes part of file and shared-memory names)"
        )
    raise ValueError(f"run_id {value!r} starts with '.'; start with a letter, digit, _ or -")


RunId = Annotated[str, AfterValidator(check_run_id)]

_AGENT_STREAM_TAIL = re.compile(r"-w[1-9][0-9]*")


def agent_stream_clash(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a run beside the agent streams of other runs, or None.

    The FastLane stream of agent N of run R is ``R-wN``
    (:func:`mosaic_sdk.fastlane.agent_stream_id`, the names the platform's grid reads), so a
    run whose own id ends in ``-w<N>`` (N >= 1) writes to the segment of agent N of the run
    named by the rest: one of the two writers is refused. The rule is the platform's, so such
    ids are refused where runs are started (the platform's own ids are ULIDs).
    """
    rest, sep, tail = run_id.rpartition("-w")
    if not sep or not rest or not _AGENT_STREAM_TAIL.fullmatch(sep + tail):
        return None
    return (
        f"run id {run_id!r} ends in '-w{tail}', the name of the FastLane stream of agent "
        f"{tail} of a run {rest!r} (agent streams are named <run_id>-w<N>, as the platform's "
        "grid reads them): the two runs would share one shared-memory segment; choose an id "
        f"that does not end in -w and a number (e.g. {rest + '_w' + tail!r})"
    )


# --- metadata and capabilities -------------------------------------------------------------


class WorkerMetadata(BaseModel):
    """Who the worker is. ``name`` and ``version`` are required.

    ``upstream_library`` and ``upstream_version`` are ``Optional[str]`` as on the platform:
    ``None`` means "wraps no library" (or "version unknown"); an empty string is read as
    ``None`` too, so "not given" has one spelling in dumps and in ``mosaic workers show``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Human-readable name, e.g. 'CleanRL Worker'")
    version: str = Field(min_length=1, description="The worker's version (PEP 440)")
    description: str = ""
    author: str = ""
    homepage: str = ""
    upstream_library: str | None = Field(
        None, description="The RL library the worker wraps; None when it wraps none"
    )
    upstream_version: str | None = Field(
        None, description="The wrapped library's version; None when none or unknown"
    )
    license: str = Field("", description="SPDX license identifier, e.g. 'MIT'")

    @field_validator("upstream_library", "upstream_version", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value


class WorkerCapabilities(BaseModel):
    """What the worker can do. Only ``worker_type`` (the entry-point name) is required."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker_type: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    supported_paradigms: tuple[str, ...] = ("sequential",)
    env_families: tuple[str, ...] = ("gymnasium",)
    action_spaces: tuple[str, ...] = ("discrete",)
    observation_spaces: tuple[str, ...] = ("vector",)
    max_agents: int = Field(1, ge=1)
    supports_self_play: bool = False
    supports_population: bool = False
    supports_checkpointing: bool = False
    supports_pause_resume: bool = False
    step_numbering: Literal["per_agent", "per_ply"] = Field(
        "per_agent",
        description=(
            "How a multi-agent run numbers its step lines' step_index within an episode: "
            "'per_agent' counts each agent's own steps (0, 1, 2... per agent), 'per_ply' "
            "counts the plies of the episode across agents (a turn-based game's move number). "
            "The conformance checks judge pause/resume and counts accordingly"
        ),
    )
    supports_fastlane: bool = Field(
        False,
        description=(
            "Publishes FastLane frames when the launcher switches FastLane on "
            "(mosaic_sdk.fastlane.resolve_fastlane decides: MOSAIC_FASTLANE=1 or "
            "*_FASTLANE_ONLY=1, unless the video mode is off)"
        ),
    )
    control_protocol: int | None = None  # None: no protocol on stdin; 1: this protocol
    requires_gpu: bool = False
    gpu_memory_mb: int | None = Field(None, ge=0)
    cpu_cores: int = Field(1, ge=1)
    estimated_memory_mb: int = Field(512, ge=0)


def unknown_vocabulary(capabilities: WorkerCapabilities) -> dict[str, list[str]]:
    """Return, per vocabulary field, the values the SDK does not know (empty when all known)."""
    found = {
        name: [v for v in getattr(capabilities, name) if v not in known]
        for name, known in VOCABULARIES.items()
    }
    return {name: strange for name, strange in found.items() if strange}


# --- configuration ---------------------------------------------------------------------------


class ConfigError(ValueError):
    """A configuration did not validate. ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str], *, model: str = "config") -> None:
        self.errors = errors
        self.model = model
        super().__init__("; ".join(errors))


def _describe_error(err: Mapping[str, Any], known: list[str]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ())) or "config"
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        hint = f" (known keys: {', '.join(known)})" if known else ""
        return f"unknown key {loc!r}{hint}"
    if kind == "missing":
        return f"missing required key {loc!r}"
    shown = repr(err.get("input"))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    return f"{loc!r}: {msg} (got {shown})"


def format_validation_error(exc: ValidationError, model: type[BaseModel]) -> ConfigError:
    """Turn a pydantic ``ValidationError`` into a ``ConfigError`` whose lines name the fields."""
    known = sorted(model.model_fields)
    errors = exc.errors()
    unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
    lines = [_describe_error(e, known) for e in errors if e not in unknown]
    if len(unknown) > 1:  # one line for all of them: the known keys are listed once
        names = ", ".join(repr(".".join(str(p) for p in e.get("loc", ()))) for e in unknown)
        hint = f" (known keys: {', '.join(known)})" if known else ""
        lines.insert(0, f"unknown keys {names}{hint}")
    elif unknown:
        lines.insert(0, _describe_error(unknown[0], known))
    return ConfigError(lines, model=model.__name__)


def read_config_json(path: str | Path) -> dict[str, Any]:
    """Read a JSON config file and return its object (flat, or a job descriptor).

    Raises :class:`ConfigError` with one line that says what is wrong with the file: missing,
    a directory, not UTF-8, not JSON (with line and column), or not a JSON object. The worker
    CLI and ``mosaic run`` both read config files through it, so the user sees one wording.
    JSON nested deeper than :data:`~mosaic_sdk.telemetry.reader.MAX_JSON_DEPTH` levels is
    refused too (at any depth: the parser's own recursion limit is caught).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"config file {path} does not exist"]) from None
    except IsADirectoryError:
        raise ConfigError([f"config file {path} is a directory; pass a JSON file"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"config file {path} is not UTF-8 text; pass a JSON file"]) from None
    except OSError as exc:
        raise ConfigError([f"cannot read config file {path}: {exc.strerror}"]) from None

    too_deep = ConfigError(
        [
            f"config file {path} holds JSON nested deeper than {MAX_JSON_DEPTH} levels; "
            "a config needs far fewer (flatten it)"
        ]
    )
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [
                f"config file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg})"
            ]
        ) from None
    except RecursionError:  # deeper than the interpreter's stack allows
        raise too_deep from None
    if json_depth_exceeds(raw, MAX_JSON_DEPTH):
        raise too_deep
    if not isinstance(raw, Mapping):
        raise ConfigError(
            [f"config file {path} holds a JSON {type(raw).__name__}; a config is a JSON object"]
        )
    return dict(raw)


#: Keys the platform's trainer (its forms and its dispatcher) may write into any worker's flat
#: config besides ``run_id``, ``seed`` and ``worker_id``, with what they are there. A worker
#: that declares one as a field gets it; for every other worker it is accepted and ignored.
PLATFORM_CONFIG_KEYS: Mapping[str, str] = {
    "schema_id": "the platform's telemetry schema id (its dispatcher only logs it)",
    "schema_definition": "the platform's telemetry schema (its dispatcher only logs it)",
    "schema_version": "the platform's telemetry schema version",
    "agent_id": "the agent id of the platform's form (its proxy stamps it on step lines)",
    "notes": "free text of the platform's form",
}


def ignored_platform_keys(data: Any, model: type[WorkerConfig]) -> list[str]:
    """The keys of :data:`PLATFORM_CONFIG_KEYS` in the config ``data`` (flat or a job
    descriptor) that ``model`` does not declare: accepted, and unused by that worker."""
    if not isinstance(data, Mapping):
        return []
    flat = unwrap_job_descriptor(data)
    return [k for k in PLATFORM_CONFIG_KEYS if k in flat and k not in model.model_fields]


class WorkerConfig(BaseModel):
    """Base configuration every worker's config extends.

    ``run_id`` is required and safe for file and shared-memory names; ``seed`` is optional;
    ``worker_id`` is the platform's worker id (its dispatcher writes it into every config whose
    form names a worker). Subclasses add their own fields with defaults. Unknown keys are
    rejected with a message that names them, unless the subclass sets ``collect_extras = True``
    (they then land in ``extras``); the platform's form keys (:data:`PLATFORM_CONFIG_KEYS`)
    are dropped unless the subclass declares them. ``extras`` is the platform's own mapping of
    free-form options (its forms send one, e.g. ``{"fastlane_enabled": true}``, and its GUI
    reads it from the run's saved config): every config accepts and keeps it as given.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    #: When True, unknown keys are collected into ``extras`` instead of being an error.
    collect_extras: ClassVar[bool] = False

    run_id: RunId = Field(description="1-128 chars of [A-Za-z0-9._-], not starting with '.'")
    seed: int | None = Field(None, description="Seed for every random generator of the run")
    worker_id: str | None = Field(
        None,
        description="The platform's worker id: stamped on every telemetry line when the "
        "worker CLI gets no --worker-id (which wins)",
    )
    extras: dict[str, Any] = Field(
        default_factory=dict,
        description="The platform's extras mapping (its forms send one; its GUI reads "
        "fastlane_enabled and fastlane_only from it): kept as given",
    )

    @model_validator(mode="before")
    @classmethod
    def _gather_extras(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        known = set(cls.model_fields)
        if any(k in data and k not in known for k in PLATFORM_CONFIG_KEYS):
            data = {k: v for k, v in data.items() if k in known or k not in PLATFORM_CONFIG_KEYS}
        if not cls.collect_extras:
            return data
        data = dict(data)
        unknown = {k: data.pop(k) for k in list(data) if k not in known}
        if unknown:
            data["extras"] = {**dict(data.get("extras") or {}), **unknown}
        return data

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("collect_extras") and not any(
            "extras" in getattr(b, "__annotations__", {})
            for b in cls.__mro__
            if b is not WorkerConfig  # its extras are the platform's, kept apart
        ):
            raise TypeError(
                f"{cls.__name__} sets collect_extras = True but declares no 'extras' field; "
                "subclass WorkerConfigWithExtras instead"
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict; ``from_dict(to_dict(c)) == c``. ``worker_id`` is left out
        when unset and ``extras`` when empty, so the file a worker gets holds only keys
        someone gave it."""
        data = self.model_dump(mode="json")
        if data.get("worker_id") is None:
            data.pop("worker_id", None)
        if not data.get("extras"):
            data.pop("extras", None)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerConfig:
        """Build a config from the flat form or a job descriptor (``metadata.worker.config``).

        Raises :class:`ConfigError` with one line per problem, each naming its field.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(
                [f"a config must be a JSON object, got {type(data).__name__}"], model=cls.__name__
            )
        try:
            return cls.model_validate(unwrap_job_descriptor(data))
        except ValidationError as exc:
            raise format_validation_error(exc, cls) from None

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of this config model."""
        return cls.model_json_schema()


class WorkerConfigWithExtras(WorkerConfig):
    """A ``WorkerConfig`` that keeps unknown keys in ``extras`` instead of rejecting them.

    Use it only for workers that forward free-form options (the upstream style); a typed
    field is always the better contract.
    """

    collect_extras: ClassVar[bool] = True

    extras: dict[str, Any] = Field(
        default_factory=dict, description="Keys this worker does not declare, kept as given"
    )

    def to_dict(self) -> dict[str, Any]:
        """The flat form: extras go back to the top level, where they came from (a worker
        reading its config file sees the keys it was given); ``from_dict`` collects them
        again, so the round trip stays exact."""
        data = super().to_dict()
        extras = data.pop("extras", {})
        return {**extras, **data}

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of the flat form ``to_dict`` writes: keys the model does not
        declare are allowed (they are the extras)."""
        schema = cls.model_json_schema()
        schema["additionalProperties"] = True
        return schema


class LaunchCommand(BaseModel):
    """How the runner starts a worker: ``argv`` and variables added to the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


__all__ = [
    "ACTION_SPACES",
    "ENV_FAMILIES",
    "OBSERVATION_SPACES",
    "PARADIGMS",
    "PLATFORM_CONFIG_KEYS",
    "RUN_ID_PATTERN",
    "VOCABULARIES",
    "ConfigError",
    "LaunchCommand",
    "RunId",
    "WorkerCapabilities",
    "WorkerConfig",
    "WorkerConfigWithExtras",
    "WorkerMetadata",
    "agent_stream_clash",
    "check_run_id",
    "format_validation_error",
    "ignored_platform_keys",
    "read_config_json",
    "unknown_vocabulary",
    "unwrap_job_descriptor",
]
