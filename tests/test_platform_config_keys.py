"""What the platform's dispatcher writes into every worker's config is part of the SDK's base:
``worker_id`` is a field of every config, the platform's form keys are accepted and reported once
as ignored, and a run directory the daemon names but does not create is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import Field

from mosaic_sdk.contract import (
    PLATFORM_CONFIG_KEYS,
    ConfigError,
    WorkerConfig,
    WorkerConfigWithExtras,
    ignored_platform_keys,
)

#: The worker config file of the platform's dispatcher: a ULID run id, the form's worker id
#: and schema keys.
DISPATCHED = {
    "run_id": "01JDZQ3W9F8Y2K5V7N4M6P1R0T",
    "worker_id": "example-gpu-01",
    "schema_id": "telemetry.step.default",
    "schema_definition": {"fields": ["reward"]},
    "agent_id": "agent_1",
}


class Plain(WorkerConfig):
    episodes: int = 1


class WithAgent(WorkerConfig):
    agent_id: str | None = Field(None)


class Loose(WorkerConfigWithExtras):
    pass


def test_worker_id_is_a_field_of_every_config() -> None:
    assert Plain.from_dict(DISPATCHED).worker_id == "example-gpu-01"
    assert Plain.from_dict({"run_id": "r"}).worker_id is None
    assert "worker_id" in Plain.json_schema()["properties"]


def test_form_keys_are_accepted_and_named_as_ignored() -> None:
    config = Plain.from_dict(DISPATCHED)
    assert "schema_id" not in config.to_dict()
    assert Plain.from_dict(config.to_dict()) == config
    assert ignored_platform_keys(DISPATCHED, Plain) == [
        "schema_id",
        "schema_definition",
        "agent_id",
    ]
    nested = {"metadata": {"worker": {"config": DISPATCHED}}}
    assert Plain.from_dict(nested).run_id == DISPATCHED["run_id"]
    assert ignored_platform_keys(nested, Plain) == ["schema_id", "schema_definition", "agent_id"]


def test_a_worker_that_declares_a_form_key_gets_it() -> None:
    assert WithAgent.from_dict(DISPATCHED).agent_id == "agent_1"
    assert "agent_id" not in ignored_platform_keys(DISPATCHED, WithAgent)


def test_form_keys_do_not_land_in_extras_and_other_keys_are_still_refused() -> None:
    assert Loose.from_dict({**DISPATCHED, "mine": 1}).extras == {"mine": 1}
    with pytest.raises(ConfigError, match="nonsense"):
        Plain.from_dict({**DISPATCHED, "nonsense": 1})
    assert set(PLATFORM_CONFIG_KEYS) >= {"schema_id", "schema_definition"}


def _dispatched_run(
    tmp_path: Path, config: dict[str, object], *argv: str, module: str = "mosaic_worker_example"
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "worker-config.json"
    path.write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "MOSAIC_RUN_DIR")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["MOSAIC_RUN_DIR"] = str(tmp_path / "var" / "trainer" / "runs" / str(config["run_id"]))
    return subprocess.run(
        [sys.executable, "-m", module, "--config", str(path), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def test_the_example_takes_the_dispatchers_config_file(tmp_path: Path) -> None:
    config = {**DISPATCHED, "episodes": 2, "max_steps_per_episode": 3}
    res = _dispatched_run(
        tmp_path,
        config,
        "--grpc",
        "--grpc-target",
        "127.0.0.1:50055",
        "--worker-id",
        "example-gpu-01",
    )
    assert res.returncode == 0, res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert {x["worker_id"] for x in lines} == {"example-gpu-01"}
    notes = [x for x in res.stderr.splitlines() if "ignored" in x]
    assert notes == [
        "note: config keys of the platform this worker does not use, ignored: schema_id, "
        "schema_definition, agent_id"
    ]
    assert (tmp_path / "var" / "trainer" / "runs" / DISPATCHED["run_id"]).is_dir()


def test_the_configs_worker_id_names_the_lines_when_argv_gives_none(tmp_path: Path) -> None:
    res = _dispatched_run(tmp_path, {**DISPATCHED, "episodes": 1, "max_steps_per_episode": 2})
    assert res.returncode == 0, res.stderr
    assert {json.loads(x)["worker_id"] for x in res.stdout.splitlines()} == {"example-gpu-01"}


def test_a_freshly_baked_worker_takes_the_dispatchers_config_file(tmp_path: Path) -> None:
    from mosaic_sdk.scaffold import bake

    cookiecutter = tmp_path / "cookiecutter-config.yaml"
    cookiecutter.write_text(f'replay_dir: "{tmp_path / "replay"}"\n', encoding="utf-8")
    project = bake(tmp_path / "out", {"worker_name": "Baked"}, config_file=cookiecutter).project_dir
    path = tmp_path / "worker-config.json"
    path.write_text(json.dumps({**DISPATCHED, "episodes": 1, "max_steps_per_episode": 3}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([str(project), env.get("PYTHONPATH", "")])
    env["CUDA_VISIBLE_DEVICES"] = ""
    res = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_baked", "--config", str(path), "--grpc"]
        + ["--grpc-target", "127.0.0.1:50055", "--worker-id", "example-gpu-01"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert {json.loads(x)["worker_id"] for x in res.stdout.splitlines()} == {"example-gpu-01"}
    assert "ignored: schema_id, schema_definition, agent_id" in res.stderr


def test_the_multi_agent_example_takes_it_too(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    config = {**DISPATCHED, "episodes": 1, "max_cycles": 3}
    res = _dispatched_run(
        tmp_path, config, "--grpc", "--worker-id", "example-gpu-01",
        module="mosaic_worker_example.multiagent",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert {json.loads(x)["worker_id"] for x in res.stdout.splitlines()} == {"example-gpu-01"}
    assert "ignored: schema_id, schema_definition, agent_id" in res.stderr
