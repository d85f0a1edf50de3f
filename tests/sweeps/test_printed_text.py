"""What a sweep's tools print of text they did not write (a worker's last stderr line, a
metric name from the spec) is shown with its control characters escaped, as ``runs show``
shows a worker's text: never passed to the terminal."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mosaic_sdk.cli import main

ESCAPES = "\x1b]0;owned\x07\x1b[2J"  # retitle the terminal window, clear the screen
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J"


def _raw(text: str) -> bool:
    return "\x1b" in text or "\x07" in text


def test_a_sweeps_progress_show_and_compare_escape_a_workers_line_and_a_metric_name(
    fixture_worker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.sqlite"
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "space": {"mode": {"grid": ["steps", "crash_escapes"]}},
                "metric": {"name": f"loss{ESCAPES}", "mode": "min"},
            }
        )
    )
    main(["sweep", fixture_worker, str(spec), "--store", str(store)])
    out, err = capsys.readouterr()
    assert not _raw(out + err), out + err
    [failed] = [line for line in out.splitlines() if "failed" in line and "trial" in line]
    assert f"last stderr line: RuntimeError: {SHOWN}gone" in failed, failed  # the worker's
    assert f"loss{SHOWN} -" in failed  # the metric's name
    conn = sqlite3.connect(store)
    [(sweep_id,)] = conn.execute("SELECT sweep_id FROM sweeps").fetchall()
    conn.close()

    assert main(["sweeps", "show", sweep_id, "--store", str(store)]) == 0
    out, err = capsys.readouterr()
    assert not _raw(out + err), out + err
    assert f"metric loss{SHOWN} (min)" in out and f"loss{SHOWN}" in out.splitlines()[1]

    # no trial has a value of that series: the error names it, escaped
    assert main(["runs", "compare", sweep_id, sweep_id, "--store", str(store)]) == 2
    out, err = capsys.readouterr()
    assert not _raw(out + err), out + err
    assert f"no run has a value of loss{SHOWN}" in err
