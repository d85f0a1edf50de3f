"""The CleanRL worker's config: shapes that load, algo_params checked, flags built."""

from __future__ import annotations

from pathlib import Path

import pytest
from cleanrl_worker.config import CleanRLConfig
from cleanrl_worker.launch_args import build_argv
from cleanrl_worker.registry import resolve

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
    with pytest.raises(ConfigError, match="use the config field 'env_id'"):
        CleanRLConfig.from_dict({"run_id": "r1", "algo_params": {"env-id": "Acrobot-v1"}})


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
