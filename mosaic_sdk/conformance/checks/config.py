"""Config: defaults validate, round-trip, job-descriptor form, JSON Schema, rejections."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed, CheckSkipped
from mosaic_sdk.conformance.subject import WorkerSubject

if TYPE_CHECKING:
    from mosaic_sdk.contract import WorkerConfig

UNKNOWN_KEY = "conformance_unknown_key"
WRONG_TYPE_VALUE: dict[str, Any] = {"not": "a scalar"}
HOSTILE_RUN_IDS: tuple[str, ...] = ("../escape", "a/b", ".hidden", "x" * 200, "", "run id")
SCALAR_TYPES = {"integer", "number", "boolean", "string"}


def _flat(subject: WorkerSubject) -> dict[str, Any]:
    return {**subject.conformance_config(), "run_id": subject.run_id("config")}


def _build(model: type[WorkerConfig], data: Any, what: str) -> WorkerConfig:
    try:
        return model.from_dict(data)
    except Exception as exc:  # noqa: BLE001
        raise CheckFailed(f"{what} does not validate: {exc}") from None


def _rejection(model: type[WorkerConfig], data: Any) -> str | None:
    """The message of the error ``from_dict(data)`` raises, or None when it accepts."""
    try:
        model.from_dict(data)
    except ValueError as exc:  # ConfigError and pydantic's ValidationError are ValueErrors
        return str(exc) or type(exc).__name__
    return None


@conformance_check(
    "config.defaults_validate",
    description="The model's defaults (with a run_id) and the conformance config validate",
    hint="Give every field of the config model a default, and make "
    "mosaic_worker_conformance_config return keys the model knows",
    levels=(SDK,),
)
def defaults_validate(subject: WorkerSubject) -> str | None:
    model = subject.config_model()
    _build(model, {"run_id": subject.run_id("config")}, "the defaults ({'run_id': ...})")
    _build(model, _flat(subject), "the conformance config")
    return None


@conformance_check(
    "config.round_trip",
    description="from_dict(to_dict(x)) == x, and to_dict() is plain JSON",
    hint="Keep to_dict() the model's JSON dump and from_dict() its validation; avoid fields "
    "whose JSON form does not load back to the same value",
    levels=(SDK,),
)
def round_trip(subject: WorkerSubject) -> str | None:
    model = subject.config_model()
    config = _build(model, _flat(subject), "the conformance config")
    data = config.to_dict()
    try:
        text = json.dumps(data)
    except (TypeError, ValueError) as exc:
        raise CheckFailed(f"to_dict() is not JSON-serialisable: {exc}") from None
    again = _build(model, json.loads(text), "to_dict() of the conformance config")
    if again != config:
        fields = type(config).model_fields
        diff = [k for k in fields if getattr(again, k, None) != getattr(config, k, None)]
        raise CheckFailed(f"from_dict(to_dict(x)) != x (fields that differ: {', '.join(diff)})")
    return None


@conformance_check(
    "config.job_descriptor",
    description="The config nested under metadata.worker.config of a job descriptor loads",
    hint="Build configs with WorkerConfig.from_dict (it unwraps job descriptors); do not "
    "override it without calling unwrap_job_descriptor",
    levels=(SDK,),
)
def job_descriptor(subject: WorkerSubject) -> str | None:
    model = subject.config_model()
    flat = _build(model, _flat(subject), "the conformance config")
    descriptor = {
        "run_id": subject.run_id("config"),
        "metadata": {"worker": {"config": dict(subject.conformance_config())}},
    }
    nested = _build(model, descriptor, "the job-descriptor form")
    if nested != flat:
        raise CheckFailed("the job-descriptor form loads to a different config than the flat form")
    return None


@conformance_check(
    "config.json_schema_valid",
    description="The config's JSON Schema is a valid schema and accepts to_dict() of a config",
    hint="Let WorkerConfig.json_schema() come from the pydantic model; give custom types a "
    "JSON Schema (pydantic's __get_pydantic_json_schema__)",
    levels=(SDK,),
)
def json_schema_valid(subject: WorkerSubject) -> str | None:
    try:
        import jsonschema  # optional dependency (the conformance extra)
    except ImportError:
        raise CheckSkipped(
            "jsonschema is not installed (pip install 'mosaic-worker-sdk[conformance]')"
        ) from None
    model = subject.config_model()
    try:
        schema = model.json_schema()
    except Exception as exc:  # noqa: BLE001
        raise CheckFailed(f"json_schema() failed: {type(exc).__name__}: {exc}") from None
    validator_cls = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise CheckFailed(f"json_schema() is not a valid JSON Schema: {exc.message}") from None
    config = _build(model, _flat(subject), "the conformance config")
    errors = list(validator_cls(schema).iter_errors(config.to_dict()))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "config"
        raise CheckFailed(
            f"the schema rejects to_dict() of a valid config at {where}: {errors[0].message}"
        )
    return None


@conformance_check(
    "config.rejects_unknown_key",
    description="An unknown key is rejected with a message that names it",
    hint="Keep the WorkerConfig default (extra='forbid'); do not set extra='ignore' or 'allow'",
    levels=(SDK,),
)
def rejects_unknown_key(subject: WorkerSubject) -> str | None:
    model = subject.config_model()
    if getattr(model, "collect_extras", False):
        raise CheckSkipped("the model collects unknown keys in 'extras' (collect_extras = True)")
    message = _rejection(model, {**_flat(subject), UNKNOWN_KEY: 1})
    if message is None:
        raise CheckFailed(f"a config with the unknown key {UNKNOWN_KEY!r} was accepted")
    if UNKNOWN_KEY not in message:
        raise CheckFailed(f"the error does not name the unknown key {UNKNOWN_KEY!r}: {message}")
    return None


def scalar_fields(model: type[WorkerConfig]) -> list[str]:
    """Fields whose JSON Schema type is a scalar (or a scalar or null): seed first."""
    properties = model.model_json_schema().get("properties", {})
    names = []
    for name, prop in properties.items():
        if name == "run_id":
            continue
        options = prop.get("anyOf", [prop])
        types = {o.get("type") for o in options} - {"null"}
        if types and types <= SCALAR_TYPES and "enum" not in prop:
            names.append(name)
    names.sort(key=lambda n: n != "seed")
    return names


@conformance_check(
    "config.rejects_wrong_type",
    description="A value of the wrong type is rejected with a message that names the field",
    hint="Type every config field (int, float, bool, str, Literal...) and let from_dict "
    "report pydantic's errors through ConfigError",
    levels=(SDK,),
)
def rejects_wrong_type(subject: WorkerSubject) -> str | None:
    model = subject.config_model()
    fields = scalar_fields(model)[:4]
    if not fields:
        raise CheckSkipped("the config model has no scalar field besides run_id")
    accepted, unnamed = [], []
    for name in fields:
        message = _rejection(model, {**_flat(subject), name: WRONG_TYPE_VALUE})
        if message is None:
            accepted.append(name)
        elif name not in message:
            unnamed.append(f"{name}: {message}")
    if accepted:
        raise CheckFailed(
            f"an object was accepted as the value of {', '.join(accepted)}", details=accepted
        )
    if unnamed:
        raise CheckFailed(f"the error does not name the field ({unnamed[0]})", details=unnamed)
    return f"tried {', '.join(fields)}"


@conformance_check(
    "config.rejects_hostile_run_id",
    description="A run_id that is unsafe in file and shared-memory names is rejected",
    hint="Keep run_id typed as mosaic_sdk.contract.RunId (inherit it from WorkerConfig)",
    levels=(SDK,),
)
def rejects_hostile_run_id(subject: WorkerSubject) -> str | None:
    model = subject.config_model()
    base = subject.conformance_config()
    accepted = [r for r in HOSTILE_RUN_IDS if _rejection(model, {**base, "run_id": r}) is None]
    if accepted:
        raise CheckFailed(
            "these run ids were accepted: " + ", ".join(repr(r[:40]) for r in accepted),
            details=accepted,
        )
    return None
