"""`mosaic runs show` reads the run's analytics.json: summary, none, or one line on why not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mosaic_sdk.analytics import AnalyticsManifest, write_analytics
from mosaic_sdk.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def example_run(capsys: pytest.CaptureFixture[str], store: Path, *more: str) -> str:
    code, out, err = run_cli(
        capsys, "run", "example", "--set", "episodes=2", "--store", str(store), "--json", *more
    )
    assert code == 0, err
    return str(json.loads(out)["run_id"])


def show(capsys: pytest.CaptureFixture[str], store: Path, run_id: str) -> tuple[str, dict]:
    code, text, err = run_cli(capsys, "runs", "show", run_id, "--store", str(store))
    assert code == 0, err
    assert "Traceback" not in text + err
    code, out, err = run_cli(capsys, "runs", "show", run_id, "--store", str(store), "--json")
    assert code == 0, err
    return text, json.loads(out)


def rows(text: str) -> dict[str, str]:
    """The ``key  value`` lines of the text view (first occurrence of each key)."""
    found: dict[str, str] = {}
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.strip().partition("  ")
        found.setdefault(key, value.strip())
    return found


def test_show_prints_the_analytics_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = example_run(capsys, store)
    text, shown = show(capsys, store, run_id)
    manifest = shown["analytics"]
    assert shown["analytics_error"] is None
    assert manifest["run_id"] == run_id
    assert manifest["status"] == "completed"
    assert manifest["episodes"] == 2
    assert manifest["steps"] == shown["counts"]["steps"]
    found = rows(text)
    assert found["analytics"].startswith(f"completed: 2 episodes, {manifest['steps']} steps")
    assert found["returns"] == (
        f"mean {manifest['mean_return']:.3f}, best {manifest['best_return']:.3f}, "
        f"last {manifest['last_return']:.3f}"
    )
    assert "env_id CartPole-v1" in found["run of"]


def test_a_run_without_a_manifest_says_none(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = example_run(capsys, store)
    (tmp_path / "runs" / run_id / "analytics.json").unlink()
    text, shown = show(capsys, store, run_id)
    assert shown["analytics"] is None and shown["analytics_error"] is None
    assert rows(text)["analytics"].startswith("none")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "is not JSON (line 1, column 2"),
        ('{"schema": "mosaic.example.analytics/1"}', "schema is 'mosaic.example.analytics/1'"),
        ('{"schema": "mosaic.analytics/1", "run_id": 7}', "is not a valid manifest"),
    ],
)
def test_a_corrupt_manifest_is_one_line_and_the_rest_still_shows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, says: str
) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = example_run(capsys, store)
    (tmp_path / "runs" / run_id / "analytics.json").write_text(content)
    text, shown = show(capsys, store, run_id)
    assert shown["analytics"] is None
    assert says in shown["analytics_error"]
    assert shown["status"] == "completed" and shown["last_events"]
    lines = [line for line in text.splitlines() if "analytics" in line and "unreadable" in line]
    assert len(lines) == 1 and says in lines[0], text
    assert rows(text)["status"] == "completed"
    assert "run_completed" in text  # the last events still follow


def test_worker_text_in_the_manifest_is_shown_not_obeyed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = example_run(capsys, store)
    hostile = "\x1b]0;owned\x07\x1b[2J"
    write_analytics(
        tmp_path / "runs" / run_id,
        AnalyticsManifest.build(
            run_id=run_id,
            worker_type="example",
            status="completed",
            returns=[1.0],
            steps=3,
            duration_seconds=0.5,
            env_id=hostile,
            log=hostile,
            tensorboard_dirs=[hostile],
            checkpoints=[{"path": hostile, "step": 3}],
            extra={hostile: 1},
        ),
    )
    text, shown = show(capsys, store, run_id)
    assert shown["analytics"]["env_id"] == hostile  # --json keeps the text as written
    assert "\x1b" not in text and "\x07" not in text
    assert text.count("\\x1b]0;owned\\x07\\x1b[2J") == 5  # env_id, checkpoint, tb, log, extra


def test_hostile_metrics_are_escaped_and_non_numbers_left_out(
    capsys: pytest.CaptureFixture[str],
    fixture_workers: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("MOSAIC_PLUGINS", "echo=store_workers:Echo")
    bad = "\x1b[2J\u202e"
    lines = [
        {"type": "lifecycle", "event": "m" + bad, "payload": {"k" + bad: 1.5, "s": "text"}},
        {"type": "lifecycle", "event": "stats", "payload": {"x": 1, "flag": True}},
        {"type": "lifecycle", "event": "stats", "payload": {"x": 2, "nested": {"deep": {"y": 3}}}},
        {"type": "lifecycle", "event": "stats", "payload": [1, 2]},  # not an object: counted
        {
            "type": "episode",
            "episode_index": 0,
            "total_reward": 1,
            "steps": 1,
            "metadata": {"who" + bad: "v" + bad, "long": "z" * 200, "xs": [1, 2, 3]},
        },
        {"type": "episode", "episode_index": 1, "total_reward": 1, "steps": 1},
        {"type": "lifecycle", "event": "run_completed", "payload": {"episodes": 2}},
    ]
    text_lines = [json.dumps(line) for line in lines]
    text_lines.insert(3, '{"type": "lifecycle", "event": "stats", "payload": {"x": NaN}}')
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(line + "\n" for line in text_lines))
    store = tmp_path / "runs.sqlite"
    code, out, err = run_cli(
        capsys, "run", "echo", "--set", f"lines_file={source}", "--store", str(store), "--json"
    )
    assert code == 0, err
    text, shown = show(capsys, store, json.loads(out)["run_id"])
    metrics = shown["metrics"]
    assert metrics["events"] == {
        "m" + bad: {"count": 1, "latest": {"k" + bad: 1.5}},
        "stats": {"count": 4, "latest": {"x": 2, "nested.deep.y": 3}},
    }
    assert metrics["episode_metadata"] == {
        "episodes": 1,
        "latest": {"who" + bad: "v" + bad, "long": "z" * 77 + "...", "xs": "<list of 3>"},
    }
    assert "\x1b" not in text and "\u202e" not in text
    assert "m\\x1b[2J\\u202e (1 event)  k\\x1b[2J\\u202e=1.5" in text
    assert "stats (4 events)  nested.deep.y=3  x=2" in text
    assert "who\\x1b[2J\\u202e=v\\x1b[2J\\u202e" in text


def test_stored_emitter_lines_keep_the_platform_copy_but_show_no_metadata_for_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Decision (telemetry schema 3): the store keeps each line as the worker wrote it, so
    ``raw`` holds the ``metadata.episode_index`` the platform read, and the ``episode_index``
    column the top-level one; the episode metadata ``runs show`` reports leaves the copy out
    (the example worker passes no metadata of its own)."""
    import sqlite3

    store = tmp_path / "runs.sqlite"
    run_id = example_run(capsys, store)
    with sqlite3.connect(store) as conn:
        episodes = conn.execute(
            "SELECT episode_index, raw FROM episodes WHERE run_id = ? ORDER BY line_no", (run_id,)
        ).fetchall()
        steps = conn.execute(
            "SELECT episode_index, raw FROM steps WHERE run_id = ?", (run_id,)
        ).fetchall()
    assert [index for index, _ in episodes] == [0, 1]
    for index, raw in episodes + steps:
        assert json.loads(raw)["metadata"] == {"episode_index": index}
    _, shown = show(capsys, store, run_id)
    assert shown["metrics"]["episode_metadata"] == {"episodes": 0, "latest": {}}


def test_control_replies_are_named_as_such_not_left_as_anonymous_log_lines(
    io_worker: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A run paused, resumed and stopped through `mosaic control` showed "3 log lines (0
    invalid, 0 from stderr)" and three untagged stdout lines: as if the worker had printed
    something stray. The replies are counted and tagged as control replies."""
    lines = [
        {"type": "lifecycle", "event": "run_started", "run_id": "replies", "payload": {}},
        {"type": "control_reply", "v": 1, "id": "p", "cmd": "pause", "ok": True},
        {"type": "control_reply", "v": 1, "id": "r", "cmd": "resume", "ok": True},
        {"type": "lifecycle", "event": "run_completed", "run_id": "replies", "payload": {}},
    ]
    out = tmp_path / "out"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines) + "a stray print\n")
    (tmp_path / "err").write_text("")
    store = tmp_path / "runs.sqlite"
    code, _, err = run_cli(
        capsys,
        "run", io_worker, "--store", str(store), "--run-id", "replies", "--no-preflight",
        "--set", "mode=replay", "--set", f"path={out}", "--set", f"stderr_file={tmp_path / 'err'}",
    )  # fmt: skip
    assert code == 0, err
    text, shown = show(capsys, store, "replies")
    assert shown["counts"]["log_lines"] == 3
    assert rows(text)["log lines"] == "3 (0 invalid, 0 from stderr, 2 control replies)"
    listed = text.split("log line(s):", 1)[1].splitlines()
    assert [line.split("]")[0].strip() for line in listed if line.strip()] == [
        "[stdout control_reply",
        "[stdout control_reply",
        "[stdout",
    ]
