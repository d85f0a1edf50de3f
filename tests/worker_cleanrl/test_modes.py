"""train / policy_eval / resume_training / curriculum, cancellation and the PPO's learning."""

from __future__ import annotations

import os
import signal
import statistics
from pathlib import Path

import pytest

from worker_cleanrl.worker_runs import run_worker, unique_run_id

SMALL = {"num_steps": 128, "update_epochs": 1}


def _train(runs: Path, steps: int = 1024, **extra: object):
    config = {"run_id": unique_run_id("train"), "algo": "ppo", "total_timesteps": steps,
              "seed": 2, "algo_params": dict(SMALL), **extra}  # fmt: skip
    result = run_worker(runs, config)
    assert result.returncode == 0, result.why()
    return result


def test_train_reports_checkpoints_and_analytics(runs: Path) -> None:
    result = _train(runs)
    assert result.terminal() == "run_completed"
    saved = result.events("checkpoint_saved")
    assert [e["payload"]["step"] for e in saved] == [1024]
    analytics = result.analytics()
    assert analytics["checkpoints"][0]["step"] == 1024
    # the episodes the budget cut off are in no count (the SDK's rule of unfinished episodes)
    finished = [e for e in result.episodes() if not e["metadata"].get("unfinished")]
    assert analytics["episodes"] == len(finished) > 0
    assert len(result.episodes()) > len(finished)  # the budget of 1024 steps cut some off
    completed = result.events("run_completed")[0]["payload"]
    assert completed["episodes"] == len(finished)
    assert analytics["schema"] == "mosaic.analytics/1" and analytics["worker_type"] == "cleanrl"
    assert analytics["mean_return"] is not None and analytics["extra"]["mode"] == "train"
    assert any("tensorboard" in d for d in analytics["tensorboard_dirs"])
    assert "checkpoint saved" in result.log()  # the script's prints land in the log


def test_resume_continues_the_step_counter(runs: Path) -> None:
    first = _train(runs, 1024)
    checkpoint = first.events("checkpoint_saved")[-1]["payload"]["checkpoint_path"]
    config = {"run_id": unique_run_id("resume"), "algo": "ppo", "mode": "resume_training",
              "policy_path": checkpoint, "total_timesteps": 1024, "seed": 2,
              "algo_params": dict(SMALL)}  # fmt: skip
    result = run_worker(runs, config)
    assert result.returncode == 0, result.why()
    loaded = result.events("checkpoint_loaded")[0]["payload"]
    assert loaded["step"] == 1024
    assert [e["payload"]["step"] for e in result.events("checkpoint_saved")] == [2048]
    assert "resumed from" in result.log() and "global_step=1024" in result.log()


def test_policy_eval_of_a_policy_trained_here(runs: Path) -> None:
    trained = _train(runs, 2048)
    checkpoint = trained.events("checkpoint_saved")[-1]["payload"]["checkpoint_path"]
    config = {"run_id": unique_run_id("eval"), "mode": "policy_eval", "policy_path": checkpoint,
              "eval_episodes": 4, "seed": 5, "fastlane": True}  # fmt: skip
    result = run_worker(runs, config, watch_frames=True)
    assert result.returncode == 0, result.why()
    episodes = result.episodes()
    assert len(episodes) == 4
    summary = result.events("run_completed")[0]["payload"]["final_metrics"]
    assert summary["returns"] == [e["total_reward"] for e in episodes]
    assert summary["mean_return"] == pytest.approx(statistics.fmean(summary["returns"]))
    pairs = zip(summary["discounted_returns"], summary["returns"], strict=True)
    assert all(d <= r for d, r in pairs)
    assert result.frames > 0
    assert result.analytics()["extra"]["evaluation"]["returns"] == summary["returns"]


def test_curriculum_switches_envs_and_keeps_streaming_across_frame_sizes(runs: Path) -> None:
    # Two FrozenLake maps with 16 states each: same spaces, frames 256x256 then 512x128.
    schedule = [
        {"env_id": "FrozenLake-v1", "env_kwargs": {"map_name": "4x4", "is_slippery": False},
         "until": "episodes>=30|steps>=100000"},
        {"env_id": "FrozenLake-v1",
         "env_kwargs": {"desc": ["SFFFFFFF", "FFFFFFFG"], "is_slippery": False}},
    ]  # fmt: skip
    config = {"run_id": unique_run_id("curr"), "algo": "ppo", "total_timesteps": 2048,
              "seed": 1, "curriculum_schedule": schedule, "fastlane": True,
              "fastlane_interval_ms": 0, "num_envs": 2,
              "algo_params": {"num_steps": 128}}  # fmt: skip
    result = run_worker(runs, config, watch_frames=True)
    assert result.returncode == 0, result.why()
    assert result.terminal() == "run_completed"
    stages = result.events("curriculum_stage")
    assert len(stages) == 1 and stages[0]["payload"]["to_stage"] == 1
    assert stages[0]["payload"]["completed"]["episodes"] >= 30
    finished = [e for e in result.episodes() if not e["metadata"].get("unfinished")]
    seen = {e["metadata"]["curriculum_stage"] for e in finished}
    assert seen == {0, 1}
    assert {(256, 256), (512, 128)} <= result.frame_sizes
    analytics = result.analytics()
    assert analytics["extra"]["mode"] == "curriculum"
    assert analytics["extra"]["curriculum"]["final"]["stage"] == 1


def test_curriculum_stages_with_different_spaces_fail_clearly(runs: Path) -> None:
    schedule = [{"env_id": "CartPole-v1", "steps": 100}, {"env_id": "Acrobot-v1"}]
    config = {"run_id": unique_run_id("badcurr"), "curriculum_schedule": schedule}
    result = run_worker(runs, config)
    assert result.returncode == 2  # refused before launch, like any invalid config
    assert "every stage needs the same spaces" in result.events("run_failed")[0]["payload"]["error"]
    assert not result.events("run_started")


def test_sigterm_cancels_mid_run(runs: Path) -> None:
    config = {"run_id": unique_run_id("cancel"), "algo": "ppo", "total_timesteps": 10_000_000,
              "seed": 1, "fastlane": True}  # fmt: skip
    sent = []
    children: list[str] = []

    def on_line(line, proc) -> None:
        if line.kind == "episode" and not sent:
            # The algorithm trains inside the worker process: no interpreter chain below it.
            for task in Path(f"/proc/{proc.pid}/task").iterdir():
                children.extend((task / "children").read_text().split())
            sent.append(True)
            os.kill(proc.pid, signal.SIGTERM)

    result = run_worker(runs, config, on_line=on_line)
    assert sent and children == []
    assert result.returncode == 143
    assert result.terminal() == "run_cancelled"
    assert result.events("run_cancelled")[0]["payload"]["reason"] == "SIGTERM"
    assert result.analytics()["status"] == "cancelled"
    assert not [n for n in os.listdir("/dev/shm") if config["run_id"] in n]


def test_dry_run_validates_without_training(runs: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "c.json"
    path.write_text('{"run_id": "dry", "algo": "ppo", "env_id": "NoSuchEnv-v9"}')
    proc = subprocess.run([sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(path),
                           "--dry-run"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "NoSuchEnv-v9" in proc.stderr
    path.write_text('{"run_id": "dry", "algo": "ppo", "algo_params": {"num_steps": 64}}')
    proc = subprocess.run([sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(path),
                           "--dry-run"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "mosaic_worker_cleanrl.algorithms.ppo" in proc.stderr and "--num-steps=64" in proc.stderr
    assert not (tmp_path / "dry").exists() and not list(tmp_path.glob("*.log"))


@pytest.mark.slow
def test_our_ppo_learns_cartpole_within_100k_steps(runs: Path) -> None:
    config = {"run_id": unique_run_id("learn"), "algo": "ppo", "env_id": "CartPole-v1",
              "total_timesteps": 100_000, "seed": 1, "telemetry_steps": False}  # fmt: skip
    result = run_worker(runs, config, timeout=600)
    assert result.returncode == 0, result.why()
    returns = [e["total_reward"] for e in result.episodes()]
    assert statistics.fmean(returns[-20:]) >= 150


def test_fastlane_grid_mode_tiles_the_envs_and_max_dim_downscales(runs: Path) -> None:
    config = {"run_id": unique_run_id("grid"), "algo": "ppo", "total_timesteps": 1024,
              "seed": 1, "num_envs": 4, "fastlane": True, "fastlane_video_mode": "grid",
              "fastlane_grid_limit": 4, "fastlane_interval_ms": 0,
              "algo_params": dict(SMALL)}  # fmt: skip
    result = run_worker(
        runs, config, watch_frames=True, extra_env={"CLEANRL_FASTLANE_MAX_DIM": "400"}
    )
    assert result.returncode == 0, result.why()
    assert result.frames > 0
    # Four 600x400 CartPole frames tile 2x2 into 1200x800, downscaled to fit 400.
    for width, height in result.frame_sizes:
        assert max(width, height) <= 400
        assert width / height == pytest.approx(1.5, rel=0.02)
    started = result.events("run_started")[0]["payload"]
    assert started["fastlane"]["video_mode"] == "grid" and started["fastlane"]["max_dim"] == 400
