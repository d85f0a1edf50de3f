"""The CleanRL worker's config: shapes that load, algo_params checked, flags built."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mosaic_worker_cleanrl.config import CleanRLConfig
from mosaic_worker_cleanrl.launch_args import build_argv
from mosaic_worker_cleanrl.registry import resolve

from mosaic_sdk.contract import ConfigError


def test_flat_nested_and_platform_extras_shapes_load_the_same() -> None:
    flat = {"run_id": "r1", "algo": "ppo", "env_id": "CartPole-v1", "mode": "train",
            "algo_params": {"learning_rate": 0.001}}  # fmt: skip
    nested = {"run_id": "r1", "metadata": {"worker": {"config": {k: v for k, v in flat.items()
                                                                  if k != "run_id"}}}}  # fmt: skip
    extras = {"run_id": "r1", "algo": "ppo", "env_id": "CartPole-v1",
              "extras": {"mode": "train", "algo_params": {"learning_rate": 0.001}}}  # fmt: skip
    configs = [CleanRLConfig.from_dict(d) for d in (flat, nested, extras)]
    assert configs[0] == configs[1] == configs[2]
    assert configs[0].algo_params == {"learning_rate": 0.001}


def test_unknown_key_is_rejected_with_its_name() -> None:
    with pytest.raises(ConfigError, match="unknown key 'learning_rat'"):
        CleanRLConfig.from_dict({"run_id": "r1", "learning_rat": 3})
    with pytest.raises(ConfigError, match="unknown key 'bogus'"):
        CleanRLConfig.from_dict({"run_id": "r1", "extras": {"bogus": 1}})


def test_unknown_algo_param_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="ppo has no argument 'learning_rat'.*learning_rate"):
        CleanRLConfig.from_dict({"run_id": "r1", "algo_params": {"learning_rat": 0.1}})


def test_algo_param_of_the_wrong_type_is_an_error() -> None:
    with pytest.raises(ConfigError, match="num_steps expects an int, got str"):
        CleanRLConfig.from_dict({"run_id": "r1", "algo_params": {"num_steps": "many"}})
    with pytest.raises(ConfigError, match="anneal_lr expects a bool"):
        CleanRLConfig.from_dict({"run_id": "r1", "algo_params": {"anneal-lr": 1}})


def test_reserved_argument_in_algo_params_points_to_the_field() -> None:
    with pytest.raises(ConfigError, match="use the config field 'tensorboard_dir'"):
        CleanRLConfig.from_dict({"run_id": "r1", "algo_params": {"tensorboard-dir": "tb"}})


def test_algo_params_naming_a_config_field_set_it_or_must_agree_with_it() -> None:
    cfg = CleanRLConfig.from_dict({"run_id": "r1", "algo_params": {"env-id": "Acrobot-v1"}})
    assert cfg.env_id == "Acrobot-v1" and cfg.algo_params == {}
    with pytest.raises(ConfigError, match="algo_params.env_id is 'Acrobot-v1' but env_id is"):
        CleanRLConfig.from_dict(
            {"run_id": "r1", "env_id": "CartPole-v1", "algo_params": {"env_id": "Acrobot-v1"}}
        )


def test_unknown_algo_suggests_close_names() -> None:
    with pytest.raises(ConfigError, match="unknown algo 'dqm'.*dqn"):
        CleanRLConfig.from_dict({"run_id": "r1", "algo": "dqm"})


def test_modes_need_what_they_use() -> None:
    with pytest.raises(ConfigError, match="needs policy_path"):
        CleanRLConfig.from_dict({"run_id": "r1", "mode": "policy_eval"})
    with pytest.raises(ConfigError, match="resume_training continues checkpoints"):
        CleanRLConfig.from_dict(
            {"run_id": "r1", "mode": "resume_training", "policy_path": "x.pt", "algo": "dqn"}
        )
    cfg = CleanRLConfig.from_dict(
        {"run_id": "r1", "curriculum_schedule": [{"env_id": "CartPole-v1", "until": "steps>=5"}]}
    )
    assert cfg.mode == "curriculum"
    with pytest.raises(ConfigError, match="bad stage condition"):
        CleanRLConfig.from_dict(
            {"run_id": "r1", "curriculum_schedule": [{"env_id": "CartPole-v1", "until": "x<3"}]}
        )


def test_tyro_flags_for_our_ppo(tmp_path: Path) -> None:
    cfg = CleanRLConfig.from_dict(
        {"run_id": "r1", "seed": 4, "total_timesteps": 5000,
         "algo_params": {"learning-rate": 0.001, "anneal_lr": False, "target_kl": None}}
    )  # fmt: skip
    argv = build_argv(cfg, resolve("ppo"), tmp_path)
    assert "--learning-rate=0.001" in argv
    assert "--no-anneal-lr" in argv
    assert argv[argv.index("--target-kl") + 1] == "None"
    assert "--total-timesteps=5000" in argv and "--seed=4" in argv and "--no-cuda" in argv
    assert f"--checkpoint-dir={tmp_path / 'checkpoints'}" in argv


def test_raw_keeps_the_payload_as_received_and_stays_out_of_the_value() -> None:
    descriptor = {"run_id": "r1", "job": {"priority": 3},
                  "metadata": {"worker": {"config": {"algo": "ppo", "seed": 2,
                                                     "extras": {"mode": "train"}}}}}  # fmt: skip
    cfg = CleanRLConfig.from_dict(descriptor)
    assert cfg.raw == descriptor and cfg.raw is not descriptor
    descriptor["job"]["priority"] = 9
    assert cfg.raw["job"]["priority"] == 3, "a copy, not a view"
    assert "raw" not in cfg.to_dict() and "raw" not in CleanRLConfig.json_schema()["properties"]
    again = CleanRLConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.raw == cfg.to_dict()


def test_a_payload_cannot_set_raw_and_unknown_keys_stay_refused() -> None:
    for payload in ({"run_id": "r1", "raw": {}}, {"run_id": "r1", "extras": {"raw": 1}}):
        with pytest.raises(ConfigError, match="'raw' is not a config key"):
            CleanRLConfig.from_dict(payload)
    with pytest.raises(ConfigError, match="unknown key 'platform_thing'"):
        CleanRLConfig.from_dict({"run_id": "r1", "worker_id": "w1", "platform_thing": 1})


def test_worker_id_of_the_config_reaches_the_telemetry_unless_the_cli_gives_one(
    tmp_path: Path,
) -> None:
    import json
    import subprocess
    import sys

    from mosaic_worker_cleanrl.cli import with_config_worker_id

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "r1", "worker_id": "w-7", "env_id": "NoSuchEnv-v9"}))
    assert with_config_worker_id(["--config", str(path)])[-2:] == ["--worker-id", "w-7"]
    assert (
        with_config_worker_id(["--config", str(path), "--worker-id", "cli"]).count("--worker-id")
        == 1
    )
    # The dry-run check fails (unknown env): the run_failed line carries the config's id.
    env = {**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(path)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 2 and lines[-1]["event"] == "run_failed", out.stderr
    assert "NoSuchEnv-v9" in lines[-1]["payload"]["error"]
    assert all(line["worker_id"] == "w-7" for line in lines)
