"""A sweep whose row is damaged in the store (a trial's ``params_json`` not JSON or outside the
space, a metric stored as text, a ``spec_json`` that is not a spec): ``mosaic sweeps show``,
``runs plot --sweep``, ``runs compare SWEEP`` and ``mosaic sweep --resume`` each say so in one
line naming the sweep, the trial and the field, exit non-zero, and the refused resume leaves
the sweep as it was."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.sweeps.driver import run_sweep

pytest.importorskip("optuna", reason="the random sampler's sweep needs the search extra")

SPEC = {
    "base": {"episodes": 2, "max_steps_per_episode": 20, "include_observations": False},
    "space": {"max_steps_per_episode": {"choice": [5, 9]}},
    "samples": 2,
    "sampler": "random",
    "seeds": [1],
}

TRIAL = "UPDATE sweep_trials SET {} WHERE trial_key = 't0001'"
#: damage -> (the SQL that makes it, what the error names)
DAMAGES = {
    "params not JSON": (TRIAL.format("params_json = '{\"max_steps'"), "params_json is not JSON"),
    "params not an object": (TRIAL.format("params_json = '[5, 1]'"), "params_json is not a JSON"),
    "metric is text": (TRIAL.format("metric = '4.5 or so'"), "metric is text '4.5 or so'"),
    "spec not JSON": ("UPDATE sweeps SET spec_json = '{\"base'", "spec_json is not JSON"),
    "spec a list": ("UPDATE sweeps SET spec_json = '[1]'", "spec_json is not a JSON object"),
    "spec metric": (
        "UPDATE sweeps SET spec_json = '{\"metric\": 5}'",
        "spec_json is not a sweep spec (metric:",
    ),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one completed sweep of two trials (t0000, t0001), and its id."""
    store = tmp_path_factory.mktemp("sweep") / "s.sqlite"
    result = run_sweep("example", SPEC, store=store, report=lambda _line: None)
    assert [t["status"] for t in result.trials] == ["completed", "completed"]
    return store, result.sweep_id


def _damaged(finished: tuple[Path, str], tmp_path: Path, sql: str) -> Path:
    store = tmp_path / "damaged.sqlite"
    shutil.copyfile(finished[0], store)
    conn = sqlite3.connect(store)
    with conn:
        assert conn.execute(sql).rowcount == 1
    conn.close()
    return store


def _rows(store: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(store)
    try:
        sweep = conn.execute("SELECT status, ended_at, error FROM sweeps").fetchall()
        trials = conn.execute("SELECT * FROM sweep_trials ORDER BY run_id").fetchall()
        return sweep + trials
    finally:
        conn.close()


def _commands(sweep_id: str, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "sweeps show": ["sweeps", "show", sweep_id[:12]],
        "runs plot --sweep": ["runs", "plot", "--sweep", sweep_id, "-o", str(tmp_path / "p.png")],
        "runs compare": ["runs", "compare", sweep_id, sweep_id],
        "sweep --resume": ["sweep", "example", "--resume", sweep_id],
    }


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("command", ["sweeps show", "runs plot --sweep", "runs compare"])
def test_a_damaged_row_is_one_line_naming_sweep_trial_and_field(
    finished: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: str,
    command: str,
) -> None:
    sql, said = DAMAGES[damage]
    store = _damaged(finished, tmp_path, sql)
    sweep_id = finished[1]
    code = main([*_commands(sweep_id, tmp_path)[command], "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = err.splitlines()
    assert line.startswith(f"mosaic: error: sweep {sweep_id}") and said in line, line
    if "trial" in sql:
        assert "trial t0001 (attempt 1)" in line
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize(
    "damage",
    [
        *DAMAGES,
        "params outside the space",
        "params without a space key",
        "trial key",
    ],
)
def test_a_refused_resume_names_the_row_and_leaves_the_sweep_as_it_was(
    finished: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    more = {
        "params outside the space": (
            TRIAL.format('params_json = \'{"max_steps_per_episode": 777, "seed": 1}\''),
            "trial t0001 (attempt 1): params_json max_steps_per_episode = 777 is outside "
            "space.max_steps_per_episode.choice [5, 9]",
        ),
        "params without a space key": (
            TRIAL.format("params_json = '{\"seed\": 1}'"),
            "params_json has no value of the space key 'max_steps_per_episode'",
        ),
        "trial key": (TRIAL.format("trial_key = 'x1'"), "trial x1: trial_key is not the local"),
    }
    sql, said = {**DAMAGES, **more}[damage]
    store = _damaged(finished, tmp_path, sql)
    before = _rows(store)
    sweep_id = finished[1]
    code = main([*_commands(sweep_id, tmp_path)["sweep --resume"], "--store", str(store)])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    [line] = err.splitlines()
    assert line.startswith(f"mosaic: error: sweep {sweep_id}") and said in line, line
    assert "resuming" not in out  # refused before the sweep was touched
    assert _rows(store) == before  # status, end and error kept; no attempt marked or added


def test_sweeps_list_leaves_a_text_metric_out_of_the_best(
    finished: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _damaged(finished, tmp_path, "UPDATE sweep_trials SET metric = 'zzz' WHERE metric = 9")
    assert main(["sweeps", "list", "--store", str(store), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["best"] == 5  # the other trial's; text sorts above every number in SQLite
    assert main(["sweeps", "list", "--store", str(store)]) == 0
    assert "return 5 (max)" in capsys.readouterr().out


def test_runs_compare_of_a_sweep_with_two_objectives_ranks_by_the_first(
    finished: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {**SPEC, "metric": [{"name": "steps", "mode": "min"}, {"name": "return"}]}
    store = _damaged(finished, tmp_path, f"UPDATE sweeps SET spec_json = '{json.dumps(spec)}'")
    sweep_id = finished[1]
    assert main(["runs", "compare", sweep_id, sweep_id, "--store", str(store), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"]["name"] == "steps" and out["metric"]["mode"] == "min"
