"""The ray engine takes the local engine's spec: its trials (grid), its Optuna sampler with the
same seed, its objectives on any series, its pruner (Tune's schedulers, a stopped trial stored
``pruned``), and population-based training with linked generations. Against one real local
Ray instance for the module (2 CPUs, tiny trials). The specs of docs/guides/sweeps.md
(``both.toml``, ``pbt.toml``) run here, made smaller.

Marked ``ray``; skipped when Ray Tune is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.sweeps.driver import run_sweep
from mosaic_sdk.sweeps.search import OptunaSource
from mosaic_sdk.sweeps.spec import parse_spec

pytest.importorskip("ray.tune", reason="the ray extra is not installed")

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """One local instance for the module, on 127.0.0.1, in a short temp dir of its own; its
    processes see a MOSAIC_HOME of their own (the trials' run dirs are given per test)."""
    import ray
    from ray._private import ray_constants

    from mosaic_sdk.sweeps.ray_instance import end_instance

    temp = tempfile.mkdtemp(prefix="mr-")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "disabled")
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.delenv("RAY_ADDRESS", raising=False)
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        mp.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        mp.setenv("MOSAIC_HOME", os.path.join(temp, "home"))
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _temp_dir=temp,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
        )
        try:
            yield
        finally:
            ray.shutdown()
            end_instance(temp)
            shutil.rmtree(temp, ignore_errors=True)


def _sweep(spec: dict[str, Any], tmp_path: Path, engine: str = "ray") -> Any:
    return run_sweep(
        "example",
        spec,
        engine=engine,
        store=tmp_path / f"{engine}.sqlite",
        runs_dir=tmp_path / f"{engine}-runs",
        report=lambda _m: None,
    )


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "sweeps.md"


def guide_spec(name: str) -> dict[str, Any]:
    """The spec the guide writes to ``name`` (its ``cat > NAME <<'EOF'`` block)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    text = GUIDE.read_text(encoding="utf-8")
    [body] = re.findall(rf"cat > {re.escape(name)} <<'EOF'\n(.*?)\nEOF\n", text, re.S)
    return tomllib.loads(body)


LEARN = {
    "policy": "reinforce",
    "episodes": 3,
    "max_steps_per_episode": 20,
    "include_observations": False,
    "step_every": 100,
}


def test_a_grid_spec_makes_the_same_trials_and_metrics_on_both_engines(
    tmp_path: Path, ray_instance: None
) -> None:
    """Grid keys and draws (made with sample_seed), per seed: the same configs on both; the
    worker is deterministic, so each config's objective (a series, reduced) is the same too."""
    spec = {
        "base": LEARN,
        "sampler": "grid",
        "space": {
            "learning_rate": {"grid": [0.1, 1.0]},
            "gamma": {"uniform": [0.8, 0.99]},
        },
        "seeds": [1, 2],
        "trials_at_once": 2,
        "metric": {"name": "losses/entropy", "reduce": "mean", "mode": "min"},
    }
    local = _sweep(spec, tmp_path, "local")
    ray = _sweep(spec, tmp_path, "ray")

    def scored(result: Any) -> list[tuple[str, float]]:
        return sorted((json.dumps(t["params"], sort_keys=True), t["metric"]) for t in result.trials)

    assert [t["status"] for t in ray.trials] == ["completed"] * 4
    assert len({p for p, _ in scored(ray)}) == 4
    assert [p for p, _ in scored(ray)] == [p for p, _ in scored(local)]
    for (_, on_ray), (_, here) in zip(scored(ray), scored(local), strict=True):
        assert on_ray is not None and on_ray == pytest.approx(here)


def test_tpe_on_ray_asks_the_same_seeded_study_and_repeats_each_set_per_seed(
    tmp_path: Path, ray_instance: None
) -> None:
    raw = guide_spec("both.toml")  # the guide's spec for both engines (TPE, a pruner)
    assert raw["sampler"] == "tpe" and raw["seeds"] == [1, 2] and "pruner" in raw
    raw["samples"], raw["base"]["episodes"] = 3, 8  # smaller
    result = _sweep(raw, tmp_path)
    assert result.status == "completed"
    assert len(result.trials) == 6
    assert {t["status"] for t in result.trials} <= {"completed", "pruned"}
    by_rate: dict[float, list[int]] = {}
    for t in result.trials:
        by_rate.setdefault(t["params"]["learning_rate"], []).append(t["params"]["seed"])
        assert t["metric"] is not None
    assert sorted(map(sorted, by_rate.values())) == [[1, 2]] * 3  # each set once per seed
    # TPE's first draws are its seeded start-up sampler's: the local engine asks the same
    local = OptunaSource(parse_spec(raw), "tpe")
    asked = sorted(local.study.ask(local.dists).params["learning_rate"] for _ in range(3))
    assert sorted(by_rate) == pytest.approx(asked)


def test_a_median_pruner_on_ray_stops_the_weak_trials_and_stores_them_pruned(
    tmp_path: Path, ray_instance: None
) -> None:
    spec = {
        "base": {
            "episodes": 30,
            "max_steps_per_episode": 50,
            "include_observations": False,
            "step_delay_ms": 2,
        },
        "sampler": "grid",
        "space": {"policy": {"grid": ["balance", "random"]}},
        "seeds": [1, 2, 3],
        "trials_at_once": 2,
        "metric": {"name": "return", "last": 5},
        "pruner": {"type": "median", "warmup": 2, "startup_trials": 1},
    }
    result = _sweep(spec, tmp_path)
    assert result.status == "completed"
    # one attempt each: Tune's median rule pauses a trial to yield time, and a paused trial
    # came back as a second run from scratch (its first stored pruned); it no longer pauses
    assert sorted(t["attempt"] for t in result.trials) == [1] * 6
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for t in result.trials:
        by_policy.setdefault(t["params"]["policy"], []).append(t)
    assert [t["status"] for t in by_policy["balance"]] == ["completed"] * 3
    pruned = [t for t in by_policy["random"] if t["status"] == "pruned"]
    assert pruned, by_policy["random"]
    with RunStore(tmp_path / "ray.sqlite", readonly=True) as runs:
        for t in pruned:  # stopped with the value and step, its run cancelled, lines kept
            assert t["run_status"] == "cancelled" and t["episodes"] < 30
            assert t["metric"] is not None and "pruned by the median pruner at step" in t["error"]
            step = int(t["error"].split("at step ")[1].split()[0])
            assert 2 <= step <= t["episodes"]
            assert runs.count_rows(t["run_id"])["episodes"] == t["episodes"]
            assert "run_cancelled" in [e["event"] for e in runs.events(t["run_id"])]


def test_pbt_on_ray_runs_generations_linked_to_the_checkpoints_they_resumed(
    tmp_path: Path, ray_instance: None
) -> None:
    spec = guide_spec("pbt.toml")  # the guide's, smaller: 2 trials of 3 episodes a generation
    assert spec["pbt"]["resume_key"] == "resume_from" and spec["base"]["policy"] == "reinforce"
    spec["samples"] = 2
    spec["base"].update(episodes=3, max_steps_per_episode=50)
    result = _sweep(spec, tmp_path)
    assert result.status == "completed"
    rows = sorted(result.trials, key=lambda t: (t["trial_key"], t["attempt"]))
    by_run = {t["run_id"]: t for t in rows}
    assert all(t["status"] == "completed" for t in rows)
    keys = {t["trial_key"] for t in rows}
    assert len(keys) == 2
    for key in keys:  # each trial: generations 1, 2, 3... (a clone goes on from its donor's
        # generation count, as Tune's PBT does: more or fewer runs than `generations`)
        attempts = [t["attempt"] for t in rows if t["trial_key"] == key]
        assert attempts == list(range(1, len(attempts) + 1)) and len(attempts) >= 2
    crossed = 0
    with RunStore(tmp_path / "ray.sqlite", readonly=True) as runs:
        for t in rows:
            loaded = [e for e in runs.events(t["run_id"]) if e["event"] == "checkpoint_loaded"]
            if t["attempt"] == 1:
                assert t["parent_run_id"] is None and loaded == []
                continue
            parent = by_run[t["parent_run_id"]]  # an earlier generation of this sweep
            assert parent["run_id"] != t["run_id"] and parent["ended_at"] <= t["started_at"]
            crossed += parent["trial_key"] != t["trial_key"]
            saved = [
                json.loads(e["payload_json"])["checkpoint_path"]
                for e in runs.events(parent["run_id"])
                if e["event"] == "checkpoint_saved"
            ][-1]
            [path] = [json.loads(e["payload_json"])["checkpoint_path"] for e in loaded]
            # its own last checkpoint, or the copy of its donor's, named after the donor's run
            assert path == saved or path.endswith(f"{parent['run_id']}-{Path(saved).name}")
    assert crossed >= 1  # the weaker trial resumed from the better one's checkpoint
