"""``mosaic runs plot --by-agent``: one curve per agent of a multi-agent run, alone and with
``--group-seeds``; each agent's curve holds that agent's episodes only."""

from __future__ import annotations

import json

import numpy as np
import pytest
from stored_runs import STARTED, add_rows, add_run

from mosaic_sdk.cli import main
from mosaic_sdk.plots import Band, Curve, plot_runs
from mosaic_sdk.plots.curves import NO_AGENT, RunningCurve, agent_key, learning_curve, run_agents
from mosaic_sdk.runner.storage.schema import INSERT_EPISODE
from mosaic_sdk.runner.storage.store import RunStore

pytest.importorskip("matplotlib")


def add_agent_run(path, run_id, seed, per_agent):
    """A run whose episodes alternate between agents: ``per_agent`` maps an agent id (None:
    no id) to its returns; each episode is 10 steps long."""
    add_run(path, run_id, config={"seed": seed, "env": "pong"}, returns=[])
    rows, line = [], 2
    for i in range(max(len(r) for r in per_agent.values())):
        for agent, returns in per_agent.items():
            if i < len(returns):
                raw = json.dumps({"type": "episode", "agent_id": agent})
                ts = int(STARTED * 1e9) + line * 10**9
                rows.append((run_id, line, line, i, returns[i], 10, 1, 0, ts, raw, agent))
                line += 1
    add_rows(path, "episodes", rows)


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "runs.sqlite"
    add_agent_run(path, "ma-1", 1, {"red": [1.0, 2.0, 3.0], "blue": [-1.0, -2.0, -3.0]})
    add_agent_run(path, "ma-2", 2, {"red": [3.0, 4.0, 5.0], "blue": [-3.0, -4.0, -5.0]})
    add_run(path, "single", config={"seed": 1, "env": "cartpole"}, returns=[7.0, 8.0])
    return path


def test_each_agent_gets_its_own_curve_of_its_own_episodes(store_path, tmp_path):
    out = tmp_path / "agents.png"
    with RunStore(store_path, readonly=True) as store:
        assert run_agents(store, "ma-1") == [("agent", "blue"), ("agent", "red")]
        assert run_agents(store, "single") == []
        result = plot_runs(store, ["ma-1", "single"], out, by_agent=True)
    assert result.runs == 2 and [type(s) for s in result.series] == [Curve] * 3
    assert result.labels == (
        "ma-1 (example, seed 1) agent blue",
        "ma-1 (example, seed 1) agent red",
        "single (example, seed 1)",
    )
    blue, red, single = result.series
    assert blue.y.tolist() == [-1.0, -2.0, -3.0] and red.y.tolist() == [1.0, 2.0, 3.0]
    assert blue.x.tolist() == [10.0, 20.0, 30.0]  # that agent's own env steps
    assert blue.agent == agent_key("blue") and single.agent is None
    assert single.y.tolist() == [7.0, 8.0]


def test_a_multi_agent_run_is_split_by_agent_by_default(store_path, tmp_path):
    with RunStore(store_path, readonly=True) as store:
        result = plot_runs(store, ["ma-1", "single"], tmp_path / "auto.png")
    assert result.labels == (
        "ma-1 (example, seed 1) agent blue",
        "ma-1 (example, seed 1) agent red",
        "single (example, seed 1)",
    )
    assert result.multi_agent == {"ma-1": ("blue", "red")} and result.split_by_agent


def test_with_by_agent_false_a_multi_agent_run_is_one_curve(store_path, tmp_path):
    with RunStore(store_path, readonly=True) as store:
        result = plot_runs(store, ["ma-1"], tmp_path / "one.png", by_agent=False)
    (curve,) = result.series
    assert len(curve) == 6 and curve.agent is None
    assert result.multi_agent == {"ma-1": ("blue", "red")} and not result.split_by_agent


def test_by_agent_with_group_seeds_is_one_band_per_agent(store_path, tmp_path):
    with RunStore(store_path, readonly=True) as store:
        result = plot_runs(
            store, ["ma-1", "ma-2"], tmp_path / "bands.svg", by_agent=True, group_seeds=True
        )
    assert [type(s) for s in result.series] == [Band, Band]
    assert result.labels == ("example agent blue", "example agent red")
    blue, red = result.series
    assert blue.run_ids == red.run_ids == ("ma-1", "ma-2")
    assert np.allclose(red.low, [1.0, 2.0, 3.0]) and np.allclose(red.high, [3.0, 4.0, 5.0])
    assert np.allclose(blue.mean, [-2.0, -3.0, -4.0])


def test_rows_without_an_agent_id_form_their_own_curve(tmp_path):
    path = tmp_path / "runs.sqlite"
    add_agent_run(path, "mixed", 1, {"a": [1.0, 2.0], None: [5.0]})
    with RunStore(path, readonly=True) as store:
        assert run_agents(store, "mixed") == [("agent", "a"), NO_AGENT]
        result = plot_runs(store, ["mixed"], tmp_path / "m.png", by_agent=True)
        assert learning_curve(store, "mixed", "episodes", NO_AGENT).y.tolist() == [5.0]
    assert result.labels[-1] == "mixed (example, seed 1) agent (no agent_id)"


def test_a_running_curve_of_one_agent_grows_with_that_agent_only(tmp_path):
    path = tmp_path / "runs.sqlite"
    add_agent_run(path, "live", 1, {"a": [1.0], "b": [2.0]})
    with RunStore(path, readonly=True) as store:
        running = RunningCurve("live", STARTED, agent_key("b"))
        assert running.update(store) == 1
    add_rows(path, "episodes", [("live", 9, 9, 1, 4.0, 5, 1, 0, None, "{}", "b")])
    add_rows(path, "episodes", [("live", 10, 10, 1, 9.0, 5, 1, 0, None, "{}", "a")])
    with RunStore(path, readonly=True) as store:
        assert running.update(store) == 1
    curve = running.curve()
    assert curve.y.tolist() == [2.0, 4.0] and curve.x.tolist() == [10.0, 15.0]


def test_the_command_line_flag(store_path, tmp_path, capsys):
    out = tmp_path / "cli.svg"
    args = ["runs", "plot", "ma-1", "ma-2", "--store", str(store_path), "-o", str(out)]
    assert main([*args, "--by-agent", "--group-seeds"]) == 0
    assert "(2 runs, 2 curves, x = steps)" in capsys.readouterr().out
    assert main([*args, "--by-agent"]) == 0
    assert "(2 runs, 4 curves, x = steps)" in capsys.readouterr().out
    # without the flag a multi-agent run is split too, and the command says so
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "(2 runs, 4 curves, x = steps)" in out
    assert "note: run ma-1 has 2 agents (blue, red): one curve per agent" in err
    assert main([*args, "--no-by-agent"]) == 0
    out, err = capsys.readouterr()
    assert "(2 runs, 2 curves, x = steps)" in out
    assert "drawn as one curve of all their episodes" in err


def test_the_documented_commands(tmp_path, capsys):
    """The multi-agent block of docs/guides/plots.md, run as written against a store with two
    seeds of a two-agent run: each ``$`` line prints what the page says."""
    import shlex

    from tests.docs_snippets.blocks import blocks
    from tests.docs_snippets.transcript import compare, steps

    [block] = [
        b for b in blocks("docs/guides/plots.md") if b.reason == "tests/plots/test_plot_agents.py"
    ]
    store = tmp_path / "agents.sqlite"
    for seed in (1, 2):
        add_agent_run(store, f"duel-{seed}", seed, {"red": [1.0, 2.0, 3.0], "blue": [0.0, 1.0]})
    ran = 0
    for command, shown in steps(block.code):
        args = shlex.split(command)
        assert args[0] == "mosaic"
        args = [str(tmp_path / a) if a.endswith((".png", ".svg", ".csv", ".sqlite")) else a
                for a in args[1:]]  # fmt: skip
        capsys.readouterr()
        assert main(args) == 0, command
        printed = capsys.readouterr().out.replace(str(tmp_path) + "/", "")
        assert compare(command, shown, printed) is None, compare(command, shown, printed)
        ran += 1
    assert ran == 3


def test_a_run_of_100k_agents_draws_the_busiest_and_says_how_many_are_left_out(tmp_path, capsys):
    """Issue 30, item 3: one curve per agent of 100k agents never ended; at most
    MAX_AGENT_CURVES are drawn (those with the most episodes) and the rest are counted."""
    from mosaic_sdk.plots.figure import MAX_AGENT_CURVES

    path = tmp_path / "runs.sqlite"
    add_run(path, "crowd", config={"seed": 1}, returns=[])
    rows = [
        (
            "crowd", i + 2, i + 2, 0, 1.0, 10, 1, 0, None, "{}", f"a{i:06d}", 0,
        )
        for i in range(100_000)
    ]  # fmt: skip
    busy = [f"a{i:06d}" for i in (99_999, 50_000, 7)]  # a second episode each
    rows += [
        ("crowd", 200_000 + j, 0, 1, 5.0, 10, 1, 0, None, "{}", a, 0) for j, a in enumerate(busy)
    ]
    with RunStore(path) as store, store.conn:  # one transaction: add_rows commits each row
        store.conn.execute("BEGIN")
        store.conn.executemany(INSERT_EPISODE, rows)
    out = tmp_path / "crowd.png"
    with RunStore(path, readonly=True) as store:
        result = plot_runs(store, ["crowd"], out, by_agent=True)
    assert MAX_AGENT_CURVES == 20
    assert len(result.series) == MAX_AGENT_CURVES
    assert result.agents_left_out == {"crowd": (MAX_AGENT_CURVES, 100_000)}
    drawn = [s.agent[1] for s in result.series]
    assert set(busy) <= set(drawn)  # the agents with the most episodes come first
    assert drawn == sorted(drawn)  # listed as `mosaic runs show` lists them
    assert out.exists()
    code = main(["runs", "plot", "crowd", "--by-agent", "--store", str(path), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert "(1 run, 20 curves, x = steps)" in captured.out
    warnings = [line for line in captured.err.splitlines() if "agents are not drawn" in line]
    assert warnings == [
        "mosaic: warning: run crowd: 99980 of its 100000 agents are not drawn (at most 20 per"
        " run: those with the most episodes; see them all with `mosaic runs show`)"
    ]


def test_a_megabyte_agent_id_is_cut_short_in_labels(tmp_path, capsys):
    """Issue 30, item 3: a 1 MB agent_id went whole into the legend (still laying it out
    after 60 s); labels and messages show its first AGENT_NAME_MAX characters and its length."""
    from mosaic_sdk.plots.curves import AGENT_NAME_MAX, agent_name

    huge = "w" * 1_000_000
    path = tmp_path / "runs.sqlite"
    add_agent_run(path, "wide", 1, {huge: [1.0, 2.0], "b": [3.0]})
    out = tmp_path / "wide.svg"
    with RunStore(path, readonly=True) as store:
        result = plot_runs(store, ["wide"], out, by_agent=True)
    assert agent_name(agent_key(huge)) == "w" * AGENT_NAME_MAX + "... (1,000,000 characters)"
    assert result.labels == (
        "wide (example, seed 1) agent b",
        "wide (example, seed 1) agent " + "w" * AGENT_NAME_MAX + "... (1,000,000 characters)",
    )
    assert result.series[1].y.tolist() == [1.0, 2.0]  # the whole id selects its episodes
    assert result.agents_left_out == {}
    assert "w" * (AGENT_NAME_MAX + 1) not in out.read_text()
