"""The worker contract: models, vocabularies, run ids, config round trips and errors."""

from __future__ import annotations

import json

import pytest
from pydantic import Field, ValidationError

from mosaic_sdk.contract import (
    ACTION_SPACES,
    ENV_FAMILIES,
    OBSERVATION_SPACES,
    PARADIGMS,
    ConfigError,
    WorkerCapabilities,
    WorkerConfig,
    WorkerConfigWithExtras,
    WorkerMetadata,
    agent_stream_clash,
    check_run_id,
    unknown_vocabulary,
)


class DemoConfig(WorkerConfig):
    env_id: str = "CartPole-v1"
    episodes: int = Field(3, ge=1)
    lr: float = 3e-4


UPSTREAM_CAPABILITY_FIELDS = {
    "worker_type",
    "supported_paradigms",
    "env_families",
    "action_spaces",
    "observation_spaces",
    "max_agents",
    "supports_self_play",
    "supports_population",
    "supports_checkpointing",
    "supports_pause_resume",
    "requires_gpu",
    "gpu_memory_mb",
    "cpu_cores",
    "estimated_memory_mb",
}
UPSTREAM_METADATA_FIELDS = {
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "upstream_library",
    "upstream_version",
    "license",
}


def test_models_carry_every_upstream_field() -> None:
    assert UPSTREAM_METADATA_FIELDS <= set(WorkerMetadata.model_fields)
    assert UPSTREAM_CAPABILITY_FIELDS <= set(WorkerCapabilities.model_fields)


def test_only_worker_type_is_required_among_capabilities() -> None:
    required = {n for n, f in WorkerCapabilities.model_fields.items() if f.is_required()}
    assert required == {"worker_type"}
    caps = WorkerCapabilities(worker_type="demo")
    assert caps.max_agents == 1 and caps.supported_paradigms == ("sequential",)


def test_vocabularies_are_published_and_unknown_values_are_reported() -> None:
    assert "sequential" in PARADIGMS and "gymnasium" in ENV_FAMILIES
    assert "discrete" in ACTION_SPACES and "image" in OBSERVATION_SPACES
    caps = WorkerCapabilities(worker_type="demo", env_families=("gymnasium", "quantum_chess"))
    assert unknown_vocabulary(caps) == {"env_families": ["quantum_chess"]}
    assert unknown_vocabulary(WorkerCapabilities(worker_type="demo")) == {}


@pytest.mark.parametrize("good", ["a", "r42", "01HZY-abc_def.1", "A" * 128, "-x", "_x"])
def test_safe_run_ids_are_accepted(good: str) -> None:
    assert check_run_id(good) == good


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("../x", "'/'"),
        ("a/b", "'/'"),
        (".hidden", "starts with '.'"),
        ("", "empty"),
        ("A" * 129, "129 characters"),
        ("a b", "' '"),
        ("é", "'é'"),
    ],
)
def test_hostile_run_ids_are_rejected_with_a_reason(bad: str, says: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        check_run_id(bad)
    assert says in str(info.value)
    with pytest.raises(ConfigError) as cfg:
        DemoConfig.from_dict({"run_id": bad})
    assert "run_id" in str(cfg.value)


def test_round_trip_is_exact() -> None:
    cfg = DemoConfig.from_dict({"run_id": "r1", "seed": 5, "episodes": 7, "lr": 0.1})
    data = cfg.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert DemoConfig.from_dict(data) == cfg
    assert DemoConfig.from_dict(data).to_dict() == data


def test_nested_job_descriptor_form_loads() -> None:
    descriptor = {
        "run_id": "job-7",
        "metadata": {"worker": {"config": {"episodes": 2, "seed": 1}}},
    }
    cfg = DemoConfig.from_dict(descriptor)
    assert (cfg.run_id, cfg.episodes, cfg.seed) == ("job-7", 2, 1)
    nested_id = {"metadata": {"worker": {"config": {"run_id": "inner", "episodes": 4}}}}
    assert DemoConfig.from_dict(nested_id).run_id == "inner"


def test_unknown_key_is_an_error_naming_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        DemoConfig.from_dict({"run_id": "r", "episdoes": 3})
    assert "'episdoes'" in str(info.value)
    assert "episodes" in str(info.value)  # the known keys are listed


def test_several_unknown_keys_are_one_line_listing_the_known_keys_once() -> None:
    """It used to repeat the whole list of known keys once per unknown key."""
    with pytest.raises(ConfigError) as info:
        DemoConfig.from_dict({"run_id": "r", "episdoes": 3, "sed": 1, "episodes": "x"})
    text = str(info.value)
    assert "unknown keys 'episdoes', 'sed' (known keys: " in text
    assert text.count("(known keys: ") == 1
    assert info.value.errors is not None and len(info.value.errors) == 2  # + the bad episodes


def test_wrong_type_names_the_field_and_the_value() -> None:
    with pytest.raises(ConfigError) as info:
        DemoConfig.from_dict({"run_id": "r", "episodes": "many"})
    assert "'episodes'" in str(info.value) and "'many'" in str(info.value)
    assert info.value.errors and len(info.value.errors) == 1


def test_missing_run_id_and_non_object_config_are_clear() -> None:
    with pytest.raises(ConfigError, match="missing required key 'run_id'"):
        DemoConfig.from_dict({"episodes": 1})
    with pytest.raises(ConfigError, match="must be a JSON object"):
        DemoConfig.from_dict([1, 2])  # type: ignore[arg-type]


def test_extras_are_opt_in() -> None:
    class Loose(WorkerConfigWithExtras):
        known: int = 1

    cfg = Loose.from_dict({"run_id": "r", "whatever": {"a": 1}, "known": 2})
    assert cfg.extras == {"whatever": {"a": 1}} and cfg.known == 2
    # written back flat, as it came (a worker reading its config file finds its keys)
    assert cfg.to_dict() == {"run_id": "r", "seed": None, "known": 2, "whatever": {"a": 1}}
    assert Loose.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(TypeError, match="collect_extras"):

        class Broken(WorkerConfig):
            collect_extras = True


def test_json_schema_is_available_for_any_config() -> None:
    schema = DemoConfig.json_schema()
    assert schema["required"] == ["run_id"]
    assert {"run_id", "seed", "env_id", "episodes", "lr"} <= set(schema["properties"])
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)


def test_models_reject_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ValidationError):
        WorkerMetadata(name="x", version="1", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        WorkerCapabilities(worker_type="has space")
    with pytest.raises(ValidationError):
        WorkerCapabilities(worker_type="x", max_agents=0)


@pytest.mark.parametrize(
    ("run_id", "clashes"),
    [
        ("run-42-w1", True),
        ("run-42-w12", True),
        ("a-w1-w3", True),
        ("run-42", False),
        ("run-42-w0", False),  # agent streams count from 1
        ("run-42-w01", False),  # and never with a leading zero
        ("run-42-w1x", False),
        ("run-42_w1", False),
        ("-w1", False),  # no run is named ''
        ("run-42-W1", False),
        ("01JABCDEFGHJKMNPQRSTVWXYZ0", False),
    ],
)
def test_a_run_id_that_names_another_run_s_agent_stream(run_id: str, clashes: bool) -> None:
    from mosaic_sdk.fastlane import agent_stream_id

    why = agent_stream_clash(run_id)
    assert (why is not None) == clashes
    if clashes:
        rest, _, n = run_id.rpartition("-w")
        assert agent_stream_id(rest, int(n) - 1) == run_id  # it is that stream's very name
        assert f"agent {n} of a run {rest!r}" in why
