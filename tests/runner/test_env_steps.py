"""When a worker throttles its step lines, the runner still reports env steps (from the
episodes' step counts) beside the number of step lines it stored."""

from __future__ import annotations

from pathlib import Path

from mosaic_sdk.cli.run import summary_line
from mosaic_sdk.runner import run_worker


def test_throttled_step_lines_still_count_env_steps(tmp_path: Path) -> None:
    result = run_worker(
        "example",
        {"episodes": 3, "max_steps_per_episode": 50, "step_every": 10, "seed": 2},
        store=tmp_path / "runs.sqlite",
    )
    assert result.status == "completed"
    assert result.env_steps == 150  # 3 episodes of 50 steps (the balance policy lasts)
    assert 15 <= result.counts["steps"] < 150  # every 10th, plus each episode's last step
    line = summary_line(result)
    assert f"150 env steps, {result.counts['steps']} step lines, 3 episodes" in line
    assert result.counts["env_steps"] == 150 and result.counts["step_lines"] < 150


def test_unthrottled_runs_report_plain_steps(tmp_path: Path) -> None:
    result = run_worker(
        "example", {"episodes": 1, "max_steps_per_episode": 20}, store=tmp_path / "runs.sqlite"
    )
    assert result.env_steps == result.counts["steps"] == 20
    assert "20 env steps, 20 step lines, 1 episodes," in summary_line(result)
