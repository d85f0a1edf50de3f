"""The rule of unfinished episodes in the store (docs/reference/telemetry.md, "Unfinished
episodes"): the emitter flags the episode the run's end cut off; the store keeps it flagged
(``episodes.unfinished``, schema version 9) and counts it apart; no count of episodes, no
return, no last return and no export includes it unless asked; its steps are env steps.
An older store is migrated (its lines flagged, its counts redone), or read by the same rule."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.cli import main
from mosaic_sdk.runner.storage.export import export_run
from mosaic_sdk.runner.storage.records import EpisodeRow
from mosaic_sdk.runner.storage.schema import SCHEMA_VERSION
from mosaic_sdk.runner.storage.store import RunStore
from mosaic_sdk.telemetry import TelemetryEmitter
from tests.unfinished_runs import (
    FINISHED_RETURNS,
    FINISHED_STEPS,
    PARTIAL_RETURN,
    PARTIAL_STEPS,
    store_cut_run,
)

ALL_STEPS = sum(FINISHED_STEPS) + PARTIAL_STEPS


def test_the_emitter_flags_an_unfinished_episode_and_refuses_a_terminated_one() -> None:
    from mosaic_sdk.telemetry.unfinished import is_unfinished

    out = io.StringIO()
    em = TelemetryEmitter("r", out, flush_interval=0)
    em.episode(4, -489.8, 120, unfinished=True, metadata={"env_index": 1})
    em.episode(5, 1.0, 3, truncated=True)  # a time limit: finished
    em.episode(4, -489.8, 120, truncated=True, metadata={"env_index": 1, "unfinished": True})
    with pytest.raises(ValueError, match="cannot have terminated"):
        em.episode(6, 1.0, 3, terminated=True, unfinished=True)
    em.close()
    cut, limit, by_hand = (json.loads(line) for line in out.getvalue().splitlines())
    assert {k: v for k, v in cut.items() if k not in ("seq", "ts_unix_ns")} == {
        k: v for k, v in by_hand.items() if k not in ("seq", "ts_unix_ns")
    }
    assert cut["truncated"] is True and cut["terminated"] is False
    assert cut["metadata"] == {"env_index": 1, "episode_index": 4, "unfinished": True}
    assert is_unfinished(cut) and not is_unfinished(limit)
    # the platform's spelling: metadata as JSON text; only JSON true flags it
    assert is_unfinished({"metadata_json": '{"unfinished": true}'})
    assert not is_unfinished({"metadata": {"unfinished": 1}})
    assert not is_unfinished({"metadata": "not json"})


def test_the_store_counts_finished_episodes_and_keeps_the_cut_one_apart(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    ingest, _ = store_cut_run(path)
    # the live counters of mosaic run
    assert (ingest.episodes, ingest.unfinished_episodes) == (2, 1)
    assert ingest.recent_returns == FINISHED_RETURNS
    assert ingest.env_steps == ALL_STEPS
    with RunStore(path, readonly=True) as store:
        run = store.get_run("CUT")
        counts = run["counts"]
        assert (counts["episodes"], counts["unfinished_episodes"]) == (2, 1)
        assert counts["env_steps"] == ALL_STEPS  # the cut episode's steps were taken
        assert run["last_episode_return"] == FINISHED_RETURNS[-1]  # not the partial 2.0
        flags = store.conn.execute(
            "SELECT episode_index, unfinished FROM episodes WHERE run_id = 'CUT' ORDER BY line_no"
        ).fetchall()
        assert [(f["episode_index"], f["unfinished"]) for f in flags] == [(0, 0), (1, 0), (2, 1)]
        # a learning curve's rows: kind 3 is the unfinished episode, unless asked
        kinds = [row[2] for row in store.episode_rows("CUT", run["started_at"])]
        assert kinds == [0, 0, 3]
        asked = store.episode_rows("CUT", run["started_at"], include_unfinished=True)
        assert [row[2] for row in asked] == [0, 0, 0]
        assert asked[-1][1] == PARTIAL_RETURN


def test_a_multi_agent_runs_counts_and_returns_leave_the_cut_episodes_out(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store_cut_run(path, agents=("red", "blue"))
    with RunStore(path, readonly=True) as store:
        counts = store.get_run("CUT")["counts"]
        assert (counts["games"], counts["agent_episodes"]) == (2, 4)
        assert counts["unfinished_episodes"] == 2
        for agent in store.agents("CUT"):
            assert agent["episodes"] == 2
            assert agent["env_steps"] == ALL_STEPS
            assert agent["last_return"] == FINISHED_RETURNS[-1]
            assert agent["mean_return"] == pytest.approx(sum(FINISHED_RETURNS) / 2)
            assert agent["max_return"] == max(FINISHED_RETURNS)


def test_observers_get_the_flag(tmp_path: Path) -> None:
    assert EpisodeRow._fields[-1] == "unfinished"
    row = EpisodeRow("r", 1, 1, 0, 1.0, 3, 0, 1, 0, "{}", None)
    assert row.unfinished == 0  # a row made without it is a finished episode


def test_runs_show_says_what_was_cut_and_its_last_return_is_a_finished_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite"
    store_cut_run(path)
    assert main(["runs", "show", "CUT", "--store", str(path)]) == 0
    text = capsys.readouterr().out
    assert "last return  -10.000" in text
    assert "episodes  2, 1 unfinished (cut off by the run's end: in no count or return)" in text
    assert main(["runs", "show", "CUT", "--store", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["last_episode_return"] == -10.0
    assert shown["counts"]["unfinished_episodes"] == 1


def _csv(path: Path, **options: object) -> list[dict[str, str]]:
    out = io.BytesIO()
    with RunStore(path, readonly=True) as store:
        export_run(store, "CUT", what="episodes", fmt="csv", output=out, **options)  # type: ignore[arg-type]
    return list(csv.DictReader(io.StringIO(out.getvalue().decode())))


def test_an_episode_export_leaves_the_cut_episode_out_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store_cut_run(path)
    rows = _csv(path)
    assert [float(r["total_reward"]) for r in rows] == FINISHED_RETURNS
    assert {r["unfinished"] for r in rows} == {"0"}
    every = _csv(path, include_unfinished=True)
    assert [(float(r["total_reward"]), r["unfinished"]) for r in every] == [
        (3.0, "0"),
        (-10.0, "0"),
        (PARTIAL_RETURN, "1"),
    ]
    # the command line: --include-unfinished
    target = tmp_path / "episodes.jsonl"
    argv = ["runs", "export", "CUT", "--what", "episodes", "--store", str(path), "-o", str(target)]
    assert main(argv) == 0
    assert len(target.read_text().splitlines()) == 2
    assert main([*argv, "--include-unfinished"]) == 0
    last = json.loads(target.read_text().splitlines()[-1])
    assert last["unfinished"] == 1 and last["total_reward"] == PARTIAL_RETURN


def _as_version_8(path: Path) -> None:
    """Make a store as version 8 left it: no flag, no count apart, and the cut episode
    counted as a finished one (with its partial return as the last)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("ALTER TABLE episodes DROP COLUMN unfinished")
        conn.execute("ALTER TABLE runs DROP COLUMN unfinished_episodes")
        conn.execute("UPDATE runs SET episodes = 3, last_episode_return = ?", (PARTIAL_RETURN,))
        conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
        conn.commit()
    finally:
        conn.close()


def test_a_version_8_store_is_read_by_the_rule_and_migrated_by_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store_cut_run(path)
    _as_version_8(path)
    # read-only: nothing is written, the flag is read from the lines
    with RunStore(path, readonly=True) as store:
        run = store.get_run("CUT")
        assert (run["counts"]["episodes"], run["counts"]["unfinished_episodes"]) == (2, 1)
        assert run["last_episode_return"] == FINISHED_RETURNS[-1]
        assert [r[2] for r in store.episode_rows("CUT", run["started_at"])] == [0, 0, 3]
    assert [r["unfinished"] for r in _csv(path, include_unfinished=True)] == ["0", "0", "1"]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("8",)
    conn.close()
    # opening it to write migrates: the rows flagged, the counts redone
    with RunStore(path) as store:
        run = store.get_run("CUT")
        assert (run["counts"]["episodes"], run["counts"]["unfinished_episodes"]) == (2, 1)
        assert run["last_episode_return"] == FINISHED_RETURNS[-1]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        flags = conn.execute("SELECT unfinished FROM episodes ORDER BY line_no").fetchall()
        assert flags == [(0,), (0,), (1,)]
        assert conn.execute("SELECT episodes, unfinished_episodes FROM runs").fetchall() == [(2, 1)]
    finally:
        conn.close()
