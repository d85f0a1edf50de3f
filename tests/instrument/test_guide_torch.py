"""docs/guides/bring-your-own-code.md with torch (heavy: tests/conftest.py HEAVY): the page's
train.py with torch's own SummaryWriter, and its CleanRL-style ppo.py, each unchanged under
`mosaic run`; the run holds the returns the script logged and a series point per scalar."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.instrument.guide_runs import run_commands, snippet, stored_run

pytest.importorskip("torch")


def test_torch_summary_writer_is_captured_like_tensorboardx(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    source = snippet("byoc-train").replace(
        "from tensorboardX import SummaryWriter\n", snippet("byoc-torch")
    )
    assert "torch.utils.tensorboard" in source
    (work / "train.py").write_text(source)
    run_commands("byoc-run", work, tmp_path)
    got = stored_run(tmp_path, "cartpole-1")
    assert got["run"]["status"] == "completed"
    assert got["returns"] and sorted(got["series"]["charts/episodic_return"]) == sorted(
        got["returns"]
    )
    assert got["run"]["counts"]["series_points"] == len(got["returns"]) + 5
    assert list((work / "runs" / "cartpole").glob("events.out.tfevents.*"))


def test_the_cleanrl_style_ppo_runs_as_the_page_shows(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "ppo.py").write_text(snippet("byoc-cleanrl"))
    done = run_commands("byoc-cleanrl-run", work, tmp_path)
    assert "run ppo-1 completed:" in done.stdout
    got = stored_run(tmp_path, "ppo-1")
    series = got["series"]
    assert got["returns"] and sorted(series["charts/episodic_return"]) == sorted(got["returns"])
    iterations = 4096 // (128 * 2)
    assert len(series["losses/value_loss"]) == len(series["charts/SPS"]) == iterations
    points = sum(len(values) for values in series.values())
    assert got["run"]["counts"]["series_points"] == points
    # same-step autoreset: every step of the 2 envs is an env step
    assert got["run"]["counts"]["env_steps"] == 4096
