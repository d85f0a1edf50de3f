"""Search that learns (mosaic_sdk.sweeps.search): Optuna's samplers proposing the local engine's
trials, the study kept next to the run store and resumed with the sweep, samplers refused up
front. The worker is tests/plugin_fixtures/bowl_worker.py (best at x = 0.7, y = 0.2)."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.plots.profiles import profile, profile_taus
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.runner.supervisor import resolve_worker
from mosaic_sdk.sweeps import search
from mosaic_sdk.sweeps.driver import check_engine, check_spec, run_sweep
from mosaic_sdk.sweeps.objective import reduce_values
from mosaic_sdk.sweeps.search import OptunaSource, check_sampler, resolve_sampler
from mosaic_sdk.sweeps.spec import Metric, SpecError, parse_spec
from mosaic_sdk.sweeps.stats import Estimate, prob_improvement, summarize
from mosaic_sdk.sweeps.store import SweepStore

BOWL_SPACE = {"x": {"uniform": [0.0, 1.0]}, "y": {"uniform": [0.0, 1.0]}}


@pytest.fixture
def bowl(plugin_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MOSAIC_PLUGINS", "bowl=bowl_worker:Bowl")
    return "bowl"


def test_the_default_sampler_is_tpe_for_draws_and_grid_otherwise() -> None:
    assert resolve_sampler(parse_spec({"space": BOWL_SPACE})) == "tpe"
    assert resolve_sampler(parse_spec({"space": {"x": {"grid": [0.1, 0.2]}}})) == "grid"
    assert resolve_sampler(parse_spec({"space": BOWL_SPACE}), "ray") == "tpe"  # the same
    assert resolve_sampler(parse_spec({"space": BOWL_SPACE, "sampler": "random"})) == "random"
    with pytest.raises(SpecError, match=r"sampler: 'bayes' is not one of tpe, cmaes, gp"):
        parse_spec({"sampler": "bayes"})


def test_a_sampler_that_cannot_run_here_is_refused_with_the_alternatives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = parse_spec({"space": BOWL_SPACE, "sampler": "gp"})
    monkeypatch.setitem(search.SAMPLER_NEEDS, "gp", ("optuna", "no_such_module_for_gp"))
    with pytest.raises(SpecError) as err:
        check_sampler(spec)
    [line] = err.value.errors
    assert line.startswith("sampler 'gp' needs no_such_module_for_gp, not installed here")
    assert "tpe" in line and "random" in line and "grid" in line
    assert check_sampler(parse_spec({"space": BOWL_SPACE, "sampler": "cmaes"}), "ray") == "cmaes"
    with pytest.raises(SpecError, match="'cmaes' searches uniform/loguniform keys"):
        check_sampler(parse_spec({"space": {"x": {"choice": [1, 2]}}, "sampler": "cmaes"}))


def test_tpe_sweep_asks_the_study_and_tells_it_the_mean_of_the_seeds(
    bowl: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.sqlite"
    sources: list[OptunaSource] = []
    real_init = OptunaSource.__init__

    def keep(self: OptunaSource, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        sources.append(self)

    monkeypatch.setattr(OptunaSource, "__init__", keep)
    result = run_sweep(
        bowl,
        {
            "base": {"episodes": 2},
            "space": {**BOWL_SPACE, "shift": {"grid": [0.0, 10.0]}},
            "samples": 3,
            "seeds": [1, 2],
            "trials_at_once": 2,
        },
        store=store,
        report=lambda _m: None,
    )
    assert result.status == "completed"
    assert len(result.trials) == 12  # 2 grid values x 3 samples = 6 parameter sets x 2 seeds
    assert {t["status"] for t in result.trials} == {"completed"}
    [source] = sources
    done = source.study.get_trials(deepcopy=False)
    assert len(done) == 6 and all(t.state.name == "COMPLETE" for t in done)
    by_key = {t["trial_key"]: t for t in result.trials}
    for ft in done:
        a, b = by_key[f"t{2 * ft.number:04d}"], by_key[f"t{2 * ft.number + 1:04d}"]
        assert {a["params"]["seed"], b["params"]["seed"]} == {1, 2}
        assert a["params"]["x"] == b["params"]["x"] == ft.params["x"]
        assert a["params"]["shift"] == [0.0, 10.0][ft.params["shift"]]
        assert ft.value == pytest.approx((a["metric"] + b["metric"]) / 2)
    with RunStore(store, readonly=True) as runs:
        sweep = SweepStore(runs).get_sweep(result.sweep_id)
    assert sweep["spec"]["sampler"] == "tpe"  # the default, stored for --resume


def test_resume_rebuilds_the_study_and_asks_again_the_sets_left_open(
    bowl: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.sqlite"
    raw = {
        "base": {"episodes": 2, "episode_delay_s": 0.2},
        "space": {**BOWL_SPACE, "shift": {"choice": [0.0, 5.0]}},
        "samples": 6,
        "seeds": [1, 2],
        "sampler": "random",
        "trials_at_once": 2,
    }
    lines: list[str] = []

    def interrupt_after_three(msg: str) -> None:
        lines.append(msg)
        if sum(m.startswith("trial ") for m in lines) == 3:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: running trials are cancelled

    first = run_sweep(bowl, raw, store=store, report=interrupt_after_three)
    assert first.status == "cancelled"
    cancelled = {t["trial_key"]: t["params"] for t in first.trials if t["status"] == "cancelled"}
    completed = {t["trial_key"]: t for t in first.trials if t["status"] == "completed"}
    assert cancelled and len(completed) >= 3, first.trials

    sources: list[OptunaSource] = []
    real_init = OptunaSource.__init__

    def keep(self: OptunaSource, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        sources.append(self)

    monkeypatch.setattr(OptunaSource, "__init__", keep)
    said: list[str] = []
    second = run_sweep(bowl, {}, store=store, resume=first.sweep_id, report=said.append)
    assert second.status == "completed"
    assert f"{len(completed)} of 12 trials finished; the search (random) resumes" in "\n".join(said)
    last = {}
    for t in sorted(second.trials, key=lambda t: t["attempt"]):
        last[t["trial_key"]] = t
    assert sorted(last) == [f"t{i:04d}" for i in range(12)]
    assert all(t["status"] == "completed" for t in last.values())
    for key, params in cancelled.items():  # run again with the parameters the study gave
        assert last[key]["params"] == params
    for key, t in completed.items():  # not run again
        assert last[key]["run_id"] == t["run_id"]
    [source] = sources
    trials = source.study.get_trials(deepcopy=False)
    assert len(trials) == 6 and all(t.state.name == "COMPLETE" for t in trials)
    for ft in trials:  # the rebuilt study holds every set with the mean of its seeds
        a, b = last[f"t{2 * ft.number:04d}"], last[f"t{2 * ft.number + 1:04d}"]
        assert a["params"]["x"] == b["params"]["x"] == ft.params["x"]
        assert a["params"]["shift"] == [0.0, 5.0][ft.params["shift"]]
        assert ft.value == pytest.approx((a["metric"] + b["metric"]) / 2)


def test_reduces_by_hand() -> None:
    xs, values = [1.0, 2.0, 4.0], [1.0, 3.0, 2.0]
    assert reduce_values(xs, values, Metric(last=2)) == 2.5  # (3 + 2) / 2
    assert reduce_values(xs, values, Metric(reduce="best")) == 3.0
    assert reduce_values(xs, values, Metric(reduce="best", mode="min")) == 1.0
    assert reduce_values(xs, values, Metric(reduce="mean")) == 2.0
    # trapezoids: (2 - 1) * (1 + 3) / 2 + (4 - 2) * (3 + 2) / 2 = 2 + 5
    assert reduce_values(xs, values, Metric(reduce="auc")) == 7.0
    assert reduce_values([5.0], [4.0], Metric(reduce="auc")) == 4.0
    assert reduce_values([], [], Metric()) is None


def test_a_metric_is_checked_up_front() -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({"metric": {"name": "", "reduce": "median", "agent": 3, "direction": "up"}})
    assert err.value.errors == [
        "metric.name: give return, steps (episode fields) or the name of a series the worker "
        "reports, e.g. 'losses/value' (got '')",
        "metric.mode: 'up' is not 'max' or 'min'",
        "metric.agent: give an agent id such as 'player_1' (got 3)",
        "metric.reduce: 'median' is not one of last_mean, best, mean, auc",
    ]
    spec = parse_spec({"metric": {"name": "losses/value", "direction": "min", "reduce": "auc"}})
    assert spec.metric == Metric("losses/value", 10, "min", None, "auc")
    assert spec.to_dict()["metric"] == {
        "name": "losses/value",
        "last": 10,
        "mode": "min",
        "reduce": "auc",
    }


def test_the_ray_engine_takes_the_local_engines_spec_and_refuses_what_tune_cannot(
    bowl: str, plugin_fixtures: Path
) -> None:
    """Checked before Ray is started (no Ray needed): objectives on a series, one agent,
    another reduce, learning samplers and pruners run on both engines; population-based
    training needs the ray engine, a worker that checkpoints and its resume key."""
    handle, spec = check_spec(
        bowl,
        {
            "space": BOWL_SPACE,
            "metric": {"name": "score", "agent": "player_1", "reduce": "auc"},
            "pruner": {"type": "asha"},
            "seeds": [1, 2],
        },
    )
    assert check_engine(spec, "ray", handle) == check_engine(spec, "local", handle) == "tpe"
    several = parse_spec({"space": BOWL_SPACE, "metric": TWO_OBJECTIVES, "sampler": "nsga2"})
    assert check_engine(several, "ray") == "nsga2"  # one seed: OptunaSearch takes both
    with pytest.raises(SpecError, match="give one seed, or run --engine local"):
        check_engine(parse_spec({**several.to_dict(), "seeds": [1, 2]}), "ray")
    pbt = {"space": {"x": {"grid": [0.1, 0.9]}}, "pbt": {"generations": 2}}
    with pytest.raises(SpecError, match="pbt: population-based training runs on --engine ray"):
        check_engine(parse_spec(pbt), "local")
    with pytest.raises(SpecError, match="pbt: worker 'bowl' does not declare supports_check"):
        bowl_handle, bowl_spec = check_spec(bowl, pbt)
        check_engine(bowl_spec, "ray", bowl_handle)
    example = resolve_worker("example")
    assert check_engine(parse_spec(pbt | {"space": {"gamma": {"grid": [0.9]}}}), "ray", example)
    with pytest.raises(SpecError, match="pbt.resume_key: worker 'example' has no config key"):
        bad_key = pbt | {"space": {"gamma": {"grid": [0.9]}}, "pbt": {"resume_key": "ckpt"}}
        check_engine(parse_spec(bad_key), "ray", example)
    with pytest.raises(SpecError, match="its first population is the spec's trials"):
        check_engine(parse_spec({**pbt, "sampler": "tpe"}), "ray")
    with pytest.raises(SpecError, match="pbt: PBT is the sweep's scheduler; drop \\[pruner\\]"):
        check_engine(parse_spec({**pbt, "pruner": "median"}), "ray")
    same = parse_spec({"space": pbt["space"], "scheduler": {"type": "pbt", "generations": 2}})
    assert same.pbt == parse_spec(pbt).pbt
    with pytest.raises(SpecError) as err:
        parse_spec({"space": {"x": {"grid": [1]}}, "pbt": {"mutations": ["y"], "when": 1}})
    assert err.value.errors == [
        "pbt: unknown key(s) when (known: type, generations, perturbation_interval, "
        "quantile_fraction, resample_probability, mutations, resume_key)",
        "pbt.mutations: 'y' not in the space (keys: x); a mutation perturbs a key of the space",
    ]


def test_objectives_on_a_series_and_on_one_agent(bowl: str, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    grid = {"x": {"grid": [0.2, 0.7]}, "y": {"grid": [0.2]}}
    # the series `score` of episodes 0..2 is value - 2, value - 1, value: best = last = value
    by_series = run_sweep(
        bowl,
        {
            "base": {"episodes": 3},
            "space": grid,
            "metric": {"name": "score", "reduce": "best"},
        },
        store=store,
        report=lambda _m: None,
    )
    assert [(t["params"]["x"], t["metric"]) for t in by_series.trials] == [
        (0.7, pytest.approx(0.0)),
        (0.2, pytest.approx(-25.0)),
    ]
    auc = run_sweep(
        bowl,
        {"base": {"episodes": 3}, "space": grid, "metric": {"name": "score", "reduce": "auc"}},
        store=store,
        report=lambda _m: None,
    )
    # steps 1, 2, 3; values v - 2, v - 1, v: (v - 1.5) + (v - 0.5) = 2v - 2
    assert sorted(t["metric"] for t in auc.trials) == [
        pytest.approx(2 * -25.0 - 2),
        pytest.approx(-2.0),
    ]
    loss = run_sweep(
        bowl,
        {"base": {"episodes": 2}, "space": grid, "metric": {"name": "loss", "mode": "min"}},
        store=store,
        report=lambda _m: None,
    )
    assert [t["params"]["x"] for t in loss.trials] == [0.7, 0.2]  # lowest loss first
    # a zero-sum game: all agents' returns average to 0; player_0's return finds the optimum
    zero_sum = {"base": {"episodes": 2, "two_players": True}, "space": grid}
    both = run_sweep(bowl, zero_sum, store=store, report=lambda _m: None)
    assert [t["metric"] for t in both.trials] == [0.0, 0.0]
    one = run_sweep(
        bowl,
        {**zero_sum, "metric": {"name": "return", "agent": "player_0"}},
        store=store,
        report=lambda _m: None,
    )
    assert [(t["params"]["x"], t["metric"]) for t in one.trials] == [
        (0.7, pytest.approx(0.0)),
        (0.2, pytest.approx(-25.0)),
    ]
    other = run_sweep(
        bowl,
        {**zero_sum, "metric": {"name": "score", "agent": "player_1", "mode": "min"}},
        store=store,
        report=lambda _m: None,
    )
    # player_1's score is minus the bowl's value: 0 at the optimum, 25 at x = 0.2; lowest first
    assert [(t["params"]["x"], t["metric"]) for t in other.trials] == [
        (0.7, pytest.approx(0.0)),
        (0.2, pytest.approx(25.0)),
    ]


def test_a_pruner_is_checked_up_front() -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({"pruner": {"type": "median", "warmup": -1, "interval": 0, "patience": 2}})
    assert err.value.errors == [
        "pruner: unknown key(s) patience (known: type, warmup, startup_trials, "
        "reduction_factor, max_resource, interval)",
        "pruner.interval: give seconds in (0, 3600] (got 0)",
        "pruner.warmup: give a whole number >= 0 (got -1)",
    ]
    with pytest.raises(SpecError, match=r"pruner: give \{type = 'median'\} \(or asha, hyperband"):
        parse_spec({"pruner": {"type": "patient"}})
    grid = parse_spec({"space": {"x": {"grid": [0.1]}}, "pruner": "median"})
    with pytest.raises(SpecError, match="pruner 'median' needs an Optuna sampler, not 'grid'"):
        check_sampler(grid)
    assert check_sampler(grid, "ray") == "grid"  # Tune's schedulers need no Optuna sampler


def test_the_median_pruner_stops_the_clearly_worse_half(bowl: str, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    said: list[str] = []
    result = run_sweep(
        bowl,
        {
            "base": {"episodes": 8, "episode_delay_s": 0.25},
            # half the space is 100 worse whatever x and y
            "space": {**BOWL_SPACE, "shift": {"choice": [0.0, -100.0]}},
            "samples": 12,
            "sampler": "random",
            "sample_seed": 3,
            "pruner": {"type": "median", "startup_trials": 2, "warmup": 1, "interval": 0.1},
            "trials_at_once": 2,
        },
        store=store,
        report=said.append,
    )
    assert result.status == "completed"
    pruned = [t for t in result.trials if t["status"] == "pruned"]
    worse = [t for t in result.trials if t["params"]["shift"] == -100.0]
    assert len(pruned) >= len(result.trials) / 3, [
        (t["status"], t["params"]) for t in result.trials
    ]
    # every trial of the worse half is stopped but those that ran before the rule had
    # enough trials to go by (the median of the sets that finished, by step)
    assert sum(t["status"] != "pruned" for t in worse) <= 2, [
        (t["status"], t["params"]) for t in result.trials
    ]
    best = result.trials[0]
    assert best["status"] == "completed" and best["params"]["shift"] == 0.0
    with RunStore(store, readonly=True) as runs:
        for t in pruned:
            match = re.fullmatch(
                r"pruned by the median pruner at step (\d+) \(return (\S+)\)", t["error"]
            )
            assert match, t["error"]
            step, value = int(match.group(1)), float(match.group(2))
            assert 1 <= step < 8 and t["metric"] == pytest.approx(value, rel=1e-3)
            run = runs.get_run(t["run_id"])
            assert run["status"] == "cancelled"  # stopped through the runner's stop path
            assert step <= run["counts"]["episodes"] < 8  # its lines are kept
    assert any("pruned by the median pruner" in line for line in said)


def test_statistics_against_cases_worked_by_hand() -> None:
    # IQM of 1..8: the middle half 3, 4, 5, 6 -> 4.5
    assert summarize([1, 2, 3, 4, 5, 6, 7, 8])["iqm"].value == 4.5
    # the mean of two scores 0 and 1: resampled means 0, 0.5, 1 with chances 1/4, 1/2, 1/4;
    # the 2.5% and 97.5% percentiles are 0 and 1
    s = summarize([0.0, 1.0])
    assert (s["mean"].value, s["mean"].low, s["mean"].high) == (0.5, 0.0, 1.0)
    assert summarize([2.0, 2.0, 2.0])["iqm"] == Estimate(2.0, 2.0, 2.0)
    # P(A > B), A = 3, 4 and B = 1, 3: of the 4 pairs 3>1, 4>1, 4>3 win and 3=3 is a half:
    # 3.5 / 4. Resampled, the lowest is A = 3, 3 against B = 3, 3 (0.5, chance 1/16 > 2.5%)
    # and the highest is 1 (A = 4, 4 or B = 1, 1: chance 7/16)
    assert prob_improvement([3, 4], [1, 3]) == Estimate(0.875, 0.5, 1.0)
    assert prob_improvement([5], [1]) == Estimate(1.0, 1.0, 1.0)
    # performance profile: the fraction of the scores 1, 3 above tau = 0, 1, 2, 3
    assert profile([1.0, 3.0], [0.0, 1.0, 2.0, 3.0]) == [1.0, 0.5, 0.5, 0.0]
    assert profile_taus({"a": [1.0, 3.0], "b": [2.0]}) == [0.9, 1.0, 2.0, 3.0]


def test_sweeps_show_groups_the_seeds_of_each_configuration(
    bowl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.sqlite"
    result = run_sweep(
        bowl,
        {
            "base": {"episodes": 1},
            "space": {"x": {"grid": [0.7, 0.2]}, "y": {"grid": [0.2]}},
            "seeds": [1, 2, 3],
        },
        store=store,
        report=lambda _m: None,
    )
    assert main(["sweeps", "show", result.sweep_id, "--store", str(store), "--json"]) == 0
    configs = json.loads(capsys.readouterr().out)["configurations"]
    assert [(c["params"]["x"], sorted(c["seeds"])) for c in configs] == [
        (0.7, [1, 2, 3]),
        (0.2, [1, 2, 3]),
    ]
    # the bowl ignores the seed: three equal scores, intervals of width 0
    iqm = configs[1]["iqm"]
    assert iqm["value"] == iqm["low"] == iqm["high"] == pytest.approx(-25.0)
    assert main(["sweeps", "show", result.sweep_id, "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "by configuration, seeds grouped" in text
    assert '{"x": 0.2, "y": 0.2}  3      -25 [-25, -25]' in text


def test_runs_compare_gives_the_probability_that_a_beats_b(
    bowl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.sqlite"

    def sweep(x: float, shifts: list[float]) -> str:
        return run_sweep(
            bowl,
            {
                "base": {"episodes": 1, "x": x, "y": 0.2},
                "space": {"shift": {"grid": shifts}},
                "sampler": "grid",
            },
            store=store,
            report=lambda _m: None,
        ).sweep_id

    # at the optimum (value 0), A scores 3, 4 and B 1, 3: P(A > B) = 3.5 / 4 (worked by hand
    # in test_statistics_against_cases_worked_by_hand)
    a, b = sweep(0.7, [3.0, 4.0]), sweep(0.7, [1.0, 3.0])
    assert main(["runs", "compare", a, b, "--store", str(store), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["a"]["scores"]) == pytest.approx([3.0, 4.0])
    assert sorted(out["b"]["scores"]) == pytest.approx([1.0, 3.0])
    assert out["p_a_beats_b"] == pytest.approx({"value": 0.875, "low": 0.5, "high": 1.0})
    # lower is better: A's 3, 4 beat B's 1, 3 in 0.5 of the 4 pairs (the tie 3 = 3)
    assert main(["runs", "compare", a, b, "--mode", "min", "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["p_a_beats_b"]["value"] == pytest.approx(0.125)
    with RunStore(store, readonly=True) as runs:
        first = SweepStore(runs).trials(a)[0]["run_id"]
    assert main(["runs", "compare", first, "*", "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "B: 4 runs matching *: 4 scores" in text and "P(A beats B) = " in text
    picture = tmp_path / "profiles.png"
    assert main(["runs", "compare", a, b, "--profile", str(picture), "--store", str(store)]) == 0
    assert f"performance profiles: {picture}" in capsys.readouterr().out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["runs", "compare", "nothing-like-this", a, "--store", str(store)]) == 2
    assert "'nothing-like-this' is no run id, glob of run ids or sweep id" in (
        capsys.readouterr().err
    )


TWO_OBJECTIVES = [{"name": "return"}, {"name": "cost", "mode": "min"}]


def test_several_objectives_give_a_pareto_front(
    bowl: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.sqlite"
    # return -36, -9, 0, -4 and cost 0.1, 0.4, 0.7, 0.9: x = 0.9 is beaten by x = 0.7 in both
    grid = run_sweep(
        bowl,
        {
            "base": {"episodes": 1, "y": 0.2},
            "space": {"x": {"grid": [0.1, 0.4, 0.7, 0.9]}},
            "metric": TWO_OBJECTIVES,
        },
        store=store,
        report=lambda _m: None,
    )
    assert main(["sweeps", "show", grid.sweep_id, "--store", str(store), "--json"]) == 0
    front = json.loads(capsys.readouterr().out)["pareto_front"]
    assert sorted((f["params"]["x"], f["values"][1]) for f in front) == [
        (0.1, 0.1),
        (0.4, 0.4),
        (0.7, 0.7),
    ]
    assert main(["sweeps", "show", grid.sweep_id, "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "Pareto front (3 trials no other completed trial beats in every objective: " in text
    assert "return (max), cost (min))" in text

    sources: list[OptunaSource] = []
    real_init = OptunaSource.__init__

    def keep(self: OptunaSource, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        sources.append(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(OptunaSource, "__init__", keep)
        nsga = run_sweep(
            bowl,
            {
                "base": {"episodes": 1},
                "space": BOWL_SPACE,
                "samples": 4,
                "sampler": "nsga2",
                "metric": TWO_OBJECTIVES,
            },
            store=store,
            report=lambda _m: None,
        )
    assert {t["status"] for t in nsga.trials} == {"completed"}
    [source] = sources
    by_key = {t["trial_key"]: t for t in nsga.trials}
    for ft in source.study.get_trials(deepcopy=False):
        trial = by_key[f"t{ft.number:04d}"]
        assert ft.values == pytest.approx([trial["metric"], trial["params"]["x"]])
    with pytest.raises(SpecError, match="several objectives cannot be pruned"):
        check_sampler(
            parse_spec({"space": BOWL_SPACE, "metric": TWO_OBJECTIVES, "pruner": "median"})
        )
