"""The example worker's ``reinforce`` policy learns, and reports its loss and entropy as series."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from mosaic_worker_example.learner import Reinforce

from mosaic_sdk.telemetry import classify_line

LEARN = {"policy": "reinforce", "episodes": 200, "seed": 1, "step_every": 50,
         "include_observations": False}  # fmt: skip


def run_worker(config: dict, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"run_id": "learn", **config}))
    res = subprocess.run(
        [sys.executable, "-m", "mosaic_worker_example", "--config", str(path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "MOSAIC_RUN_DIR": str(tmp_path)},
    )  # fmt: skip
    return res, [classify_line(raw).data for raw in res.stdout.splitlines()]


def test_reinforce_on_cartpole_learns_within_200_episodes(tmp_path: Path) -> None:
    res, lines = run_worker(LEARN, tmp_path)
    assert res.returncode == 0, res.stderr
    returns = [x["total_reward"] for x in lines if x["type"] == "episode"]
    first, last = float(np.mean(returns[:20])), float(np.mean(returns[-20:]))
    assert len(returns) == 200
    assert last >= 3 * first and last - first >= 60, (first, last)
    metrics = [x["payload"] for x in lines if x.get("event") == "metrics"]
    assert len(metrics) == 200  # one update per episode
    steps = np.cumsum([x["steps"] for x in lines if x["type"] == "episode"]).tolist()
    assert [m["step"] for m in metrics] == steps  # at the run's env step after the episode
    entropy = [m["values"]["losses/entropy"] for m in metrics]
    assert entropy[0] == pytest.approx(math.log(2))  # the untrained policy is uniform
    assert np.mean(entropy[-20:]) < entropy[0]
    assert all(math.isfinite(m["values"]["losses/policy_loss"]) for m in metrics)


def test_the_same_seed_learns_the_same_way_and_the_fixed_policies_report_no_series(
    tmp_path: Path,
) -> None:
    config = {**LEARN, "episodes": 30}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, one = run_worker(config, tmp_path / "a")
    _, two = run_worker(config, tmp_path / "b")

    def learned(lines: list) -> list:
        return [(x["event"], x["payload"]) for x in lines if x.get("event") == "metrics"]

    assert learned(one) == learned(two) and len(learned(one)) == 30
    (tmp_path / "c").mkdir()
    res, lines = run_worker({"episodes": 2, "seed": 1}, tmp_path / "c")
    assert res.returncode == 0 and not learned(lines)


def test_an_env_with_continuous_actions_is_refused_with_the_reason(tmp_path: Path) -> None:
    res, lines = run_worker({"policy": "reinforce", "env_id": "Pendulum-v1"}, tmp_path)
    assert res.returncode != 0
    failed = [x for x in lines if x.get("event") == "run_failed"]
    assert failed and "needs a discrete action space" in failed[0]["payload"]["error"]


def test_observations_are_one_hot_and_an_update_favours_the_action_that_paid() -> None:
    learner = Reinforce(spaces.Discrete(4), spaces.Discrete(2), learning_rate=1.0, gamma=1.0,
                        seed=0)  # fmt: skip
    assert learner.features(2).tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]
    # state 1: the action that led to the larger return gains probability
    for _ in range(2):
        learner._features.append(learner.features(1))
    learner._actions += [0, 1]
    learner._rewards += [0.0, 1.0]  # returns 1, 1: equal, so no preference from these
    update = learner.update()
    assert update["losses/entropy"] == pytest.approx(math.log(2))
    before = learner.probabilities(learner.features(3))[1]
    learner._features += [learner.features(3), learner.features(0)]
    learner._actions += [1, 0]
    learner._rewards += [5.0, 0.0]  # returns 5 then 0: action 1 in state 3 was good
    learner.update()
    assert learner.probabilities(learner.features(3))[1] > before
    assert learner.update() == {}  # nothing played since


def test_a_run_resumed_from_a_checkpoint_starts_from_its_weights(tmp_path: Path) -> None:
    """The checkpoint holds the policy's weights; ``resume_from`` starts a run from them
    (population-based training resumes trials this way): the resumed run's first episodes
    play as the trained policy does, not as an untrained one."""
    (tmp_path / "train").mkdir()
    res, lines = run_worker({**LEARN, "episodes": 150}, tmp_path / "train")
    assert res.returncode == 0, res.stderr
    saved_events = [x for x in lines if x.get("event") == "checkpoint_saved"]
    [saved] = [x["payload"]["checkpoint_path"] for x in saved_events]
    weights = json.loads(Path(saved).read_text())["policy"]["weights"]
    assert np.abs(np.array(weights)).sum() > 0
    fresh, resumed = {**LEARN, "episodes": 10, "seed": 2}, tmp_path / "resumed"
    resumed.mkdir()
    (tmp_path / "fresh").mkdir()
    res, after = run_worker({**fresh, "resume_from": saved, "learning_rate": 1e-9}, resumed)
    assert res.returncode == 0, res.stderr
    loaded = [x["payload"] for x in after if x.get("event") == "checkpoint_loaded"]
    assert [p["checkpoint_path"] for p in loaded] == [saved]
    _, before = run_worker({**fresh, "learning_rate": 1e-9}, tmp_path / "fresh")

    def mean_return(lines: list) -> float:
        return float(np.mean([x["total_reward"] for x in lines if x["type"] == "episode"]))

    assert mean_return(after) >= 2 * mean_return(before), (mean_return(after), mean_return(before))
    first_entropy = [x["payload"]["values"]["losses/entropy"] for x in after
                     if x.get("event") == "metrics"][0]  # fmt: skip
    assert first_entropy < math.log(2) - 0.01  # not the untrained uniform policy


def test_resume_from_a_checkpoint_without_weights_fails_saying_why(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({"episode": 1, "step": 5, "returns": [5.0]}))
    res, lines = run_worker({**LEARN, "episodes": 2, "resume_from": str(path)}, tmp_path)
    assert res.returncode != 0
    failed = [x for x in lines if x.get("event") == "run_failed"]
    assert failed and "no policy weights" in failed[0]["payload"]["error"]
