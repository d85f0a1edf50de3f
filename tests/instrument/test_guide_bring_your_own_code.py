"""docs/guides/bring-your-own-code.md, its tensorboardX example: the page's train.py runs
unchanged under the page's `mosaic run` command, and the run holds what the script saw (every
return it logged is an episode of the run, every scalar a series point). The torch examples
of the page: tests/instrument/test_guide_torch.py (heavy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.instrument.guide_runs import run_commands, snippet, stored_run


def test_the_tensorboardx_example_runs_as_the_page_shows(tmp_path: Path) -> None:
    pytest.importorskip("tensorboardX")
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(snippet("byoc-train"))
    done = run_commands("byoc-run", work, tmp_path)
    assert "run cartpole-1 completed:" in done.stdout and " series points" in done.stdout
    got = stored_run(tmp_path, "cartpole-1")
    assert got["run"]["status"] == "completed"
    # the returns the script logged are the returns of the run's episodes
    assert got["returns"] and sorted(got["series"]["charts/episodic_return"]) == sorted(
        got["returns"]
    )
    lean = got["series"]["charts/lean"]
    assert len(lean) == 5  # steps 0, 100, ..., 400
    counts = got["run"]["counts"]
    assert counts["series_points"] == len(got["returns"]) + len(lean)
    assert counts["env_steps"] == sum(e["steps"] for e in got["episodes"]) <= 500 * 4
    assert got["run"]["config"]["args"] == ["--steps", "500", "--seed", "3"]
    assert list((work / "runs" / "cartpole").glob("events.out.tfevents.*"))
