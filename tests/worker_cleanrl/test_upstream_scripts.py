"""Upstream CleanRL 1.2.0 scripts, unmodified, under the worker on gymnasium 1.x (slow).

Each run: exit 0, episodes on the telemetry stream, FastLane frames read from this process.
The same runs without the compatibility layer crash (``final_observation`` gone,
``TransformObservation`` needing a space) or log no episode at all: that is what the layer
fixes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from worker_cleanrl.worker_runs import needs_upstream, run_worker, unique_run_id

pytestmark = [needs_upstream, pytest.mark.slow]

DQN_PARAMS = {"learning_starts": 500, "batch_size": 64, "buffer_size": 3000,
              "train_frequency": 10}  # fmt: skip
CASES = {
    "dqn-CartPole": ("dqn", "CartPole-v1", 3000, DQN_PARAMS),
    "dqn-MountainCar": ("dqn", "MountainCar-v0", 3000, DQN_PARAMS),
    "ppo_continuous-Pendulum": (
        "ppo_continuous_action", "Pendulum-v1", 2048,
        {"num_steps": 512, "update_epochs": 2},
    ),
}  # fmt: skip


def _config(case: str, compat: str) -> dict:
    algo, env_id, steps, params = CASES[case]
    return {
        "run_id": unique_run_id(case.lower()),
        "algo": algo,
        "env_id": env_id,
        "total_timesteps": steps,
        "seed": 1,
        "algo_params": params,
        "gym_compat": compat,
        "fastlane": True,
    }


@pytest.mark.parametrize("case", list(CASES))
def test_upstream_script_runs_with_telemetry_and_frames(runs: Path, case: str) -> None:
    result = run_worker(runs, _config(case, "auto"), watch_frames=True)
    assert result.returncode == 0, result.why()
    assert result.terminal() == "run_completed"
    assert len(result.episodes()) >= 5
    assert result.steps(), "step lines arrive"
    assert result.frames > 0, "FastLane frames arrive"
    # The script's own episode logging works again, in its log file, not on stdout.
    assert "episodic_return=" in result.log()
    assert all(ln.kind != "log" for ln in result.lines), "stdout carries telemetry only"
    started = result.events("run_started")[0]["payload"]
    assert started["gym_compat"] is True and started["module"].startswith("cleanrl.")
    analytics = result.analytics()
    assert analytics["status"] == "completed" and analytics["tensorboard_dirs"]


def test_without_the_layer_dqn_on_mountaincar_crashes_at_the_first_truncation(
    runs: Path,
) -> None:
    result = run_worker(runs, _config("dqn-MountainCar", "off"))
    assert result.returncode == 1
    assert result.terminal() == "run_failed"
    failed = result.events("run_failed")[0]["payload"]
    assert failed["error_type"] == "KeyError" and "final_observation" in failed["error"]
    assert "Traceback" in failed["traceback"]
    assert "KeyError: 'final_observation'" in failed["stderr_tail"]
    assert "global_step" not in failed["stderr_tail"]  # the script's prints stay in its log


def test_without_the_layer_dqn_on_cartpole_logs_no_episode(runs: Path) -> None:
    result = run_worker(runs, _config("dqn-CartPole", "off"))
    assert result.returncode == 0
    assert result.episodes(), "our telemetry still sees the episodes"
    assert "episodic_return=" not in result.log(), "but the script itself reports none"


def test_without_the_layer_ppo_continuous_crashes_on_transform_observation(
    runs: Path,
) -> None:
    result = run_worker(runs, _config("ppo_continuous-Pendulum", "off"))
    assert result.returncode == 1
    failed = result.events("run_failed")[0]["payload"]
    assert failed["error_type"] == "TypeError" and "observation_space" in failed["error"]


# Scripts that still `import gym` (gym 0.23's API) and run through the worker's gym layer.
# Budgets are tiny: a few dozen updates after learning starts, one thread for torch.
GYM_CASES = {
    "c51-CartPole": ("c51", "CartPole-v1", 500,
                     {"learning_starts": 400, "batch_size": 32, "buffer_size": 1000,
                      "train_frequency": 5, "target_network_frequency": 50}),
    "sac-Pendulum": ("sac_continuous_action", "Pendulum-v1", 430,
                     {"learning_starts": 400, "batch_size": 32, "buffer_size": 1000}),
    "td3-Pendulum": ("td3_continuous_action", "Pendulum-v1", 430,
                     {"learning_starts": 400, "batch_size": 32, "buffer_size": 1000}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(GYM_CASES))
def test_gym_script_runs_through_the_gym_layer_with_episodes_and_frames(
    runs: Path, case: str
) -> None:
    algo, env_id, steps, params = GYM_CASES[case]
    config = {"run_id": unique_run_id(case.lower()), "algo": algo, "env_id": env_id,
              "total_timesteps": steps, "seed": 1, "algo_params": params,
              "fastlane": True}  # fmt: skip
    result = run_worker(
        runs, config, watch_frames=True, timeout=400, extra_env={"OMP_NUM_THREADS": "1"}
    )
    assert result.returncode == 0, result.why()
    assert result.terminal() == "run_completed"
    finished = [e for e in result.episodes() if not e["metadata"].get("unfinished")]
    assert len(finished) >= 2, result.episodes()
    assert sum(e["steps"] for e in result.episodes()) == steps  # every frame of the budget
    assert result.steps() and result.frames > 0
    assert result.log().count("episodic_return=") == len(finished)  # the script's own view
    started = result.events("run_started")[0]["payload"]
    assert started["gym_compat"] is True and started["module"] == f"cleanrl.{algo}"
    completed = result.events("run_completed")[0]["payload"]
    assert completed["final_metrics"]["steps"] == steps
