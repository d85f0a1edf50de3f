"""The sweep spec: parsing, shorthands, expansion and the check against the worker's model."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path

import pytest
from mosaic_worker_example.config import ExampleConfig

from mosaic_sdk.sweeps.spec import (
    SpecError,
    apply_shorthands,
    check_against_model,
    expand_trials,
    load_spec,
    parse_seeds,
    parse_spec,
    trial_config,
)


def test_seeds_shorthand_ranges_and_lists() -> None:
    assert parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert parse_seeds("1-3,7") == [1, 2, 3, 7]
    with pytest.raises(SpecError, match="'5-1'"):
        parse_seeds("5-1")
    with pytest.raises(SpecError, match="'x'"):
        parse_seeds("1,x")


def test_grid_shorthand_parses_json_values_and_refuses_a_bare_key() -> None:
    raw = apply_shorthands({}, ["episodes=2,3", "policy=random,balance"], "1-2")
    assert raw["space"] == {
        "episodes": {"grid": [2, 3]},
        "policy": {"grid": ["random", "balance"]},
    }
    assert parse_spec(raw).seeds == [1, 2]
    with pytest.raises(SpecError, match="key=v1,v2"):
        apply_shorthands({}, ["episodes"])


def test_expansion_is_a_product_of_grids_draws_and_seeds_and_repeatable() -> None:
    spec = parse_spec(
        {
            "base": {"episodes": 2},
            "space": {
                "policy": {"grid": ["random", "balance"]},
                "step_delay_ms": {"uniform": [0.0, 1.0]},
                "heartbeat_interval": {"loguniform": [0.01, 10.0]},
                "max_steps_per_episode": {"choice": [5, 7]},
            },
            "samples": 3,
            "seeds": "1-2",
            "sample_seed": 42,
        }
    )
    trials = expand_trials(spec)
    assert len(trials) == 2 * 3 * 2
    assert [t.key for t in trials] == [f"t{i:04d}" for i in range(12)]
    assert expand_trials(spec) == trials  # same spec, same trials: --resume relies on it
    for t in trials:
        assert t.params["policy"] in ("random", "balance")
        assert 0.0 <= t.params["step_delay_ms"] <= 1.0
        assert 0.01 <= t.params["heartbeat_interval"] <= 10.0
        assert t.params["max_steps_per_episode"] in (5, 7)
        assert t.params["seed"] in (1, 2)
    # seeds repeat one draw: the two seeds of a sample share every other parameter
    a, b = trials[0].params, trials[1].params
    assert {**a, "seed": 0} == {**b, "seed": 0} and a["seed"] != b["seed"]
    draws = {round(math.log(t.params["heartbeat_interval"]), 6) for t in trials}
    assert len(draws) == 6  # one draw per sample, shared by its seeds
    assert trial_config(spec, trials[0].params)["episodes"] == 2


def test_every_spec_problem_is_named_at_once() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(
            {
                "space": {
                    "a": {"uniform": [2, 1]},
                    "b": {"loguniform": [0, 1]},
                    "c": {"normal": [0, 1]},
                    "seed": {"grid": [1]},
                },
                "metric": {"name": 7, "mode": "up", "last": 0},
                "scheduler": {"type": "asha"},
                "trials_at_once": 0,
                "sample": 3,
            }
        )
    text = "\n".join(info.value.errors)
    for needle in (
        "space.a.uniform",
        "space.b.loguniform: low must be > 0",
        "space.c:",
        "space.seed",
        "metric.name: give return, steps (episode fields) or the name of a series",
        "metric.mode: 'up'",
        "metric.last",
        "scheduler.max_t",
        "trials_at_once",
        "unknown key(s) sample",
    ):
        assert needle in text, needle


def test_each_bad_value_is_named_against_the_worker_config_model() -> None:
    spec = parse_spec(
        {
            "base": {"episodes": 2},
            "space": {
                "episodes": {"grid": [1, 0, 3]},
                "policy": {"choice": ["random", "greedy"]},
                "step_delay_ms": {"uniform": [-1.0, 1.0]},
                "nope": {"grid": [1]},
            },
        }
    )
    with pytest.raises(SpecError) as info:
        check_against_model(spec, ExampleConfig)
    errors = info.value.errors
    assert any(e.startswith("space.episodes.grid value 0:") for e in errors), errors
    assert any(e.startswith("space.policy.choice value 'greedy':") for e in errors), errors
    assert any(e.startswith("space.step_delay_ms.uniform value -1.0:") for e in errors), errors
    assert any(e.startswith("space.nope.grid value 1:") and "nope" in e for e in errors), errors
    good = ("space.episodes.grid value 3:", "space.policy.choice value 'random':")
    assert not any(e.startswith(good) for e in errors), errors
    with pytest.raises(SpecError, match="base: 'episodes'"):
        check_against_model(parse_spec({"base": {"episodes": -1}}), ExampleConfig)


def test_toml_and_json_files_read_alike(tmp_path: Path) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text(
        'seeds = "1-2"\n[base]\nepisodes = 2\n[space]\npolicy = {grid = ["random"]}\n'
        '[metric]\nname = "return"\nlast = 3\nmode = "max"\n'
    )
    js = tmp_path / "s.json"
    js.write_text(json.dumps(load_spec(toml)))
    assert parse_spec(load_spec(toml)) == parse_spec(load_spec(js))
    bad = tmp_path / "bad.toml"
    bad.write_text("[base\n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.json")


def test_the_guides_toml_spec_is_a_valid_spec_for_the_example_worker() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    from docs_snippets.blocks import blocks

    found = [b for b in blocks("docs/guides/sweeps.md") if b.language == "toml"]
    assert len(found) == 3  # the whole spec, an objective, a pruner
    for block in found[1:]:
        parse_spec(tomllib.loads(block.code))
    spec = parse_spec(tomllib.loads(found[0].code))
    check_against_model(spec, ExampleConfig)
    assert len(expand_trials(spec)) == 2 * 3 * 3
    assert spec.scheduler is not None and spec.scheduler.max_t == spec.base["episodes"]


# -- bounded sweeps: the size is known before anything is built --------------------------------


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except SpecError:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_a_huge_seed_range_is_refused_with_its_count_before_it_is_expanded() -> None:
    with pytest.raises(SpecError, match=r"100,000,000 seeds, more than the 100,000 trials"):
        parse_spec({"seeds": "1-100000000"})
    # Before the fix this built a list of 10^8 ints (7 GB); now nothing of the size is made.
    assert peak_bytes(lambda: parse_spec({"seeds": "1-100000000"})) < 1_000_000
    assert parse_seeds("1-3,10", limit=4) == [1, 2, 3, 10]
    with pytest.raises(SpecError, match="5 seeds"):
        parse_seeds("1-3,10-11", limit=4)


def test_a_spec_that_makes_too_many_trials_is_refused_with_its_product() -> None:
    raw = {
        "space": {"lr": {"loguniform": [1e-5, 1e-2]}, "episodes": {"grid": [1, 2, 3]}},
        "samples": 1_000_000_000,
        "seeds": [1, 2],
    }
    with pytest.raises(SpecError) as caught:
        parse_spec(raw)
    [line] = caught.value.errors
    assert "6,000,000,000 trials (3 (episodes) x 1000000000 samples x 2 seeds)" in line
    assert "--max-trials" in line
    assert peak_bytes(lambda: parse_spec(raw)) < 1_000_000


def test_max_trials_raises_or_lowers_the_limit_and_is_kept_for_resume() -> None:
    raw = {"space": {"episodes": {"grid": [1, 2, 3]}}, "seeds": "1-4"}
    assert parse_spec(raw).trial_count == 12
    with pytest.raises(SpecError, match="makes 12 trials"):
        parse_spec({**raw, "max_trials": 10})
    spec = parse_spec(apply_shorthands(raw, max_trials=12))
    assert len(expand_trials(spec)) == spec.trial_count == 12
    assert parse_spec(spec.to_dict()).max_trials == 12
    with pytest.raises(SpecError, match="max_trials: give a whole number >= 1"):
        parse_spec({**raw, "max_trials": 0})


@pytest.mark.parametrize("limit", [0, -3, True, "5"])
def test_a_bad_max_trials_is_said_once_not_as_a_limit_of_one(limit: object) -> None:
    # issue 30: the stand-in minimum of a bad max_trials (1) was then used as the limit:
    # "seeds '1-3' is 3 seeds, more than the 1 trials a sweep may run"
    with pytest.raises(SpecError) as caught:
        parse_spec({"seeds": "1-3", "max_trials": limit})
    assert caught.value.errors == [f"max_trials: give a whole number >= 1 (got {limit!r})"]


def test_trial_count_agrees_with_the_expansion() -> None:
    for raw in (
        {},
        {"seeds": [3]},
        {"space": {"a": {"grid": [1, 2]}, "b": {"choice": [1, 2, 3]}}, "samples": 4},
        {"space": {"a": {"grid": [1, 2]}, "b": {"grid": [1, 2, 3]}}, "samples": 4, "seeds": "1-2"},
        {"space": {"b": {"uniform": [0, 1]}}, "samples": 5, "seeds": [1, 2]},
    ):
        spec = parse_spec(raw)
        assert spec.trial_count == len(expand_trials(spec)), raw


@pytest.mark.parametrize("bad", [0, -1, "10", True, float("inf")])
def test_trial_timeout_must_be_a_positive_number_of_seconds(bad: object) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"trial_timeout": bad})
    assert any("trial_timeout: give a number of seconds > 0" in e for e in info.value.errors)


def test_trial_timeout_from_the_cli_shorthand_is_kept_in_the_spec() -> None:
    spec = parse_spec(apply_shorthands({}, trial_timeout=2.5))
    assert spec.trial_timeout == 2.5 and spec.to_dict()["trial_timeout"] == 2.5
    assert "trial_timeout" not in parse_spec({}).to_dict()


@pytest.mark.parametrize("bad", [0, -1, "10", True, float("inf")])
def test_trial_stall_after_must_be_a_positive_number_of_seconds(bad: object) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"trial_stall_after": bad})
    assert any("trial_stall_after: give a number of seconds > 0" in e for e in info.value.errors)


def test_trial_stall_after_from_the_cli_shorthand_is_kept_in_the_spec() -> None:
    spec = parse_spec(apply_shorthands({}, trial_stall_after=1.5))
    assert spec.trial_stall_after == 1.5 and spec.to_dict()["trial_stall_after"] == 1.5
    assert "trial_stall_after" not in parse_spec({}).to_dict()


def test_a_spec_of_more_than_4300_digits_of_trials_is_refused_in_one_short_line() -> None:
    """The hostile pass of issue 24: 4,400 grids of 10 values make 10^4400 trials, and Python
    refuses to turn an int of over 4,300 digits into text; ``mosaic sweep`` ended in a
    ValueError traceback (exit 1) instead of the refusal (exit 2)."""
    raw = {"space": {f"k{i}": {"grid": list(range(10))} for i in range(4400)}, "seeds": [1, 2]}
    with pytest.raises(SpecError) as caught:
        parse_spec(raw)
    [line] = caught.value.errors
    assert line.startswith("the spec makes about 10^4400 trials (10 (k0) x ")
    assert "... 4,394 more grids x 2 seeds), more than max_trials = 100,000" in line
    assert len(line) < 400


def test_repeated_seeds_are_named_not_the_whole_list() -> None:
    """``seeds = "1-99999,1-1"`` printed the 100,000 seeds it had expanded (689 KB of stderr)."""
    with pytest.raises(SpecError) as caught:
        parse_spec({"seeds": "1-99999,1-1"})
    assert caught.value.errors == ["seeds: 1 seed(s) given more than once (1); give each seed once"]
    with pytest.raises(
        SpecError, match=r"7 seed\(s\) given more than once \(1, 2, 3, 4, 5, \.\.\.\)"
    ):
        parse_spec({"seeds": "1-7,1-7"})


def test_a_long_seeds_text_is_quoted_cut() -> None:
    text = "1-" + "9" * 4000
    with pytest.raises(SpecError) as caught:
        parse_spec({"seeds": text})
    [line] = caught.value.errors
    assert "more characters" in line and "about 10^4000 seeds" in line and len(line) < 400
