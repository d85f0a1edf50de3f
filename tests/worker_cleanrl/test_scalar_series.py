"""A script's SummaryWriter scalars become series (metrics events), TensorBoard files or not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.instrument.scalar_series import ScalarSeries
from mosaic_sdk.runner.storage.store import RunStore
from tests.tensorboard_files import tensorboard_scalars
from worker_cleanrl.worker_runs import needs_upstream, run_worker, unique_run_id

Sent = list[tuple[dict[str, float], int]]


def _series(sent: Sent) -> ScalarSeries:
    return ScalarSeries(lambda values, step: sent.append((dict(values), step)))


def test_points_of_one_step_leave_as_one_event_and_none_is_lost() -> None:
    sent: Sent = []
    series = _series(sent)
    series.add("charts/learning_rate", 2.5e-4, 128)
    series.add("losses/value_loss", np.float32(0.5), 128)
    series.add("charts/episodic_return", np.array([9.0]), 128)  # one-element array
    assert sent == []  # held until the step is over
    series.add("charts/episodic_return", 11, 128)  # a second env ends at the same step
    series.add("charts/SPS", 900, 256)
    series.add("charts/skipped", "not a number", 256)
    series.add("charts/text_step", 1.0, "later")
    series.add("charts/step_none", 3.0, None)  # TensorBoard stores it at step 0
    series.flush()
    series.flush()
    assert sent == [
        ({"charts/learning_rate": 2.5e-4, "losses/value_loss": 0.5,
          "charts/episodic_return": 9.0}, 128),
        ({"charts/episodic_return": 11.0}, 128),
        ({"charts/SPS": 900.0}, 256),
        ({"charts/step_none": 3.0}, 0),
    ]  # fmt: skip
    assert series.points == 6


def _write_as_cleanrl_does(log_dir: Path) -> None:
    import torch
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(log_dir))
    writer.add_text("hyperparameters", "|param|value|")
    writer.add_scalar("losses/td_loss", torch.tensor(0.25, requires_grad=True), 100)
    writer.add_scalar("charts/SPS", 1000, global_step=100)
    writer.add_scalars("eval", {"return": 7.0, "length": 20}, 200)
    writer.add_histogram("weights", np.arange(10.0), 200)
    writer.close()


def test_summary_writer_scalars_become_series_beside_the_files(tmp_path: Path) -> None:
    sent: Sent = []
    undo = _series(sent).install()
    try:
        _write_as_cleanrl_does(tmp_path / "tb")
    finally:
        undo()
    assert sent == [
        ({"losses/td_loss": 0.25, "charts/SPS": 1000.0}, 100),
        ({"eval/return": 7.0, "eval/length": 20.0}, 200),
    ]
    files = tensorboard_scalars(tmp_path / "tb")
    assert files["losses/td_loss"] == [(100, 0.25)] and files["charts/SPS"] == [(100, 1000.0)]
    assert sorted(files["eval"]) == [(200, 7.0), (200, 20.0)]
    # restored: a writer made afterwards reports nothing
    _write_as_cleanrl_does(tmp_path / "after")
    assert len(sent) == 2 and tensorboard_scalars(tmp_path / "after")


def test_with_files_off_nothing_reaches_the_disk_and_the_series_still_flow(
    tmp_path: Path,
) -> None:
    sent: Sent = []
    series = ScalarSeries(lambda v, s: sent.append((dict(v), s)), write_files=False)
    undo = series.install()
    try:
        _write_as_cleanrl_does(tmp_path / "tb")
    finally:
        undo()
    assert not (tmp_path / "tb").exists()
    assert [step for _, step in sent] == [100, 200] and sent[1][0]["eval/return"] == 7.0


def _metrics(store_path: Path, run_id: str) -> dict[str, list[tuple[int, float]]]:
    """The run's series as the store keeps them (its one read API for viewers)."""
    with RunStore(store_path, readonly=True) as store:
        out = {}
        for info in store.series(run_id):
            points = store.series_points(run_id, info.name, info.agent_id)
            out[info.name] = list(zip(points.steps, points.values, strict=True))
    return out


def _mosaic_run_cleanrl(tmp_path: Path, capsys: Any, config: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code = main(["run", "cleanrl", "--config", str(path), "--store",
                 str(tmp_path / "runs.sqlite"), "--json", "--quiet"])  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["status"] == "completed", result
    return result


PPO_SERIES = ("losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl",
              "losses/clipfrac", "charts/learning_rate", "charts/SPS")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("tensorboard", ["1", "0"])
def test_a_ppo_run_stores_its_losses_as_series_at_their_global_steps(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, tensorboard: str
) -> None:
    monkeypatch.setenv("TRACK_TENSORBOARD", tensorboard)  # the platform's switch
    result = _mosaic_run_cleanrl(tmp_path, capsys, {
        "algo": "ppo", "env_id": "CartPole-v1", "total_timesteps": 1024, "seed": 1,
        "algo_params": {"num_envs": 2, "num_steps": 128, "update_epochs": 1}})  # fmt: skip
    series = _metrics(tmp_path / "runs.sqlite", result["run_id"])
    for name in PPO_SERIES:  # 1024 steps of 2 x 128 per update: 4 updates
        assert [step for step, _ in series[name]] == [256, 512, 768, 1024], name
    assert all(isinstance(v, float) for _, v in series["losses/value_loss"])
    logged = (Path(result["run_dir"]) / "algorithm.log").read_text().count("episodic_return=")
    assert len(series["charts/episodic_return"]) == logged > 0  # one point per episode logged
    tensorboard_dir = Path(result["run_dir"]) / "tensorboard"
    if tensorboard == "1":
        files = tensorboard_scalars(tensorboard_dir)
        assert [s for s, _ in files["losses/entropy"]] == [256, 512, 768, 1024]
        assert [v for _, v in files["losses/entropy"]] == pytest.approx(
            [v for _, v in series["losses/entropy"]], rel=1e-6
        )
    else:
        assert not tensorboard_dir.exists()


UPSTREAM = {
    "dqn": ("CartPole-v1", 600, {"learning_starts": 300, "buffer_size": 1000, "batch_size": 32,
                                 "train_frequency": 10},
            ("losses/td_loss", "losses/q_values", "charts/SPS")),
    "sac_continuous_action": ("Pendulum-v1", 400, {"learning_starts": 200, "batch_size": 32,
                                                   "buffer_size": 1000},
                              ("losses/qf_loss", "losses/actor_loss", "losses/alpha",
                               "charts/SPS")),
    "td3_continuous_action": ("Pendulum-v1", 400, {"learning_starts": 200, "batch_size": 32,
                                                   "buffer_size": 1000},
                              ("losses/qf1_loss", "losses/actor_loss", "charts/SPS")),
}  # fmt: skip


@needs_upstream
@pytest.mark.slow
@pytest.mark.parametrize("algo", list(UPSTREAM))
def test_upstream_scripts_report_their_scalars_as_series(runs: Path, algo: str) -> None:
    env_id, steps, params, names = UPSTREAM[algo]
    config = {"run_id": unique_run_id(algo), "algo": algo, "env_id": env_id,
              "total_timesteps": steps, "seed": 1, "algo_params": params}  # fmt: skip
    result = run_worker(runs, config, timeout=300)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    series: dict[str, list[int]] = {}
    for event in result.events("metrics"):
        for name in event["payload"]["values"]:
            series.setdefault(name, []).append(event["payload"]["step"])
    for name in names:  # every 100 steps once learning has started
        assert series[name] and all(s % 100 == 0 and s > params["learning_starts"]
                                    for s in series[name]), (name, series.get(name))  # fmt: skip
    assert len(series["charts/episodic_return"]) == result.log().count("episodic_return=") > 0
