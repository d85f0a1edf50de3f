"""Runs that differ only by seed are grouped; anything else keeps them apart."""

from __future__ import annotations

from mosaic_sdk.plots.groups import flatten, group_by_seed


def run(run_id, config, worker="cleanrl"):
    return {"run_id": run_id, "worker": worker, "config": {"run_id": run_id, **config}}


def test_runs_equal_but_for_seed_and_run_id_are_one_group():
    groups = group_by_seed(
        [
            run("a", {"lr": 0.1, "seed": 1}),
            run("b", {"lr": 0.3, "seed": 1}),
            run("c", {"lr": 0.1, "seed": 2}),
            run("d", {"lr": 0.1}),  # no seed at all: still the same params
        ]
    )
    assert [g.run_ids for g in groups] == [("a", "c", "d"), ("b",)]
    assert [g.seeds for g in groups] == [(1, 2, None), (1,)]
    assert [g.label for g in groups] == ["cleanrl lr=0.1", "cleanrl lr=0.3"]
    assert groups[0].params == {"lr": 0.1}
    assert groups[0].key != groups[1].key


def test_nested_seeds_are_ignored_and_nested_params_tell_groups_apart():
    groups = group_by_seed(
        [
            run("a", {"algo_params": {"seed": 1, "gamma": 0.99}}),
            run("b", {"algo_params": {"seed": 2, "gamma": 0.99}}),
            run("c", {"algo_params": {"seed": 1, "gamma": 0.9}}),
        ]
    )
    assert [g.run_ids for g in groups] == [("a", "b"), ("c",)]
    assert [g.label for g in groups] == [
        "cleanrl algo_params.gamma=0.99",
        "cleanrl algo_params.gamma=0.9",
    ]


def test_another_worker_or_another_value_is_another_group():
    groups = group_by_seed(
        [
            run("a", {"env_id": "CartPole-v1", "seed": 1}, worker="example"),
            run("b", {"env_id": "CartPole-v1", "seed": 2}, worker="cleanrl"),
            run("c", {"env_id": "CartPole-v1", "seed": 3, "note": None}, worker="cleanrl"),
        ]
    )
    assert [g.run_ids for g in groups] == [("a",), ("b",), ("c",)]
    assert [g.label for g in groups] == ["example", "cleanrl", "cleanrl note=null"]


def test_more_keys_can_be_ignored_and_one_group_is_labelled_by_its_worker():
    runs = [run("a", {"seed": 1, "worker_id": "w1"}), run("b", {"seed": 2, "worker_id": "w2"})]
    assert len(group_by_seed(runs)) == 2
    (group,) = group_by_seed(runs, ignore=("seed", "run_id", "worker_id"))
    assert group.run_ids == ("a", "b") and group.label == "cleanrl"


def test_runs_without_a_config_group_by_worker():
    groups = group_by_seed(
        [
            {"run_id": "a", "worker": "w", "config": None},
            {"run_id": "b", "worker": "w", "config": None},
            {"run_id": "c", "worker": "w", "config": {"x": [1, 2]}},
        ]
    )
    assert [g.run_ids for g in groups] == [("a", "b"), ("c",)]
    assert [g.label for g in groups] == ["w (no config)", "w x=[1, 2]"]


def test_flatten():
    assert flatten({"a": {"b": 1, "seed": 3}, "c": [1], "d": {}}, ignore=("seed",)) == {
        "a.b": 1,
        "c": [1],
        "d": {},
    }
    assert flatten(None) == {}
