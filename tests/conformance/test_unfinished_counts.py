"""Conformance counts by the rule of unfinished episodes (docs/reference/telemetry.md): an
episode the run's end cut off has its episode line (its step lines add up to it) but is in no
count of episodes: run_completed(episodes=...) counts the finished ones, and an agent's
run_completed counts its finished episodes and their reward, and all of its steps."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from mosaic_sdk.conformance.checks import agents as agent_checks
from mosaic_sdk.conformance.checks.telemetry import counts_add_up
from mosaic_sdk.conformance.recording import RecordedLine, RecordedRun
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.telemetry import TelemetryEmitter
from mosaic_sdk.telemetry.reader import classify_line
from tests.unfinished_runs import cut_run_lines


class Subject:
    """Just enough of a WorkerSubject: one recorded run of the given lines."""

    def __init__(self, lines: list[str], max_agents: int = 1) -> None:
        self._run = RecordedRun(kind="normal", run_id="CUT", exit_code=0)
        self._run.lines = [RecordedLine(t, 0.0, classify_line(t)) for t in lines]
        self._max_agents = max_agents

    def run(self, kind: str) -> RecordedRun:
        return self._run

    def capability(self, name: str) -> Any:
        return {"step_numbering": "per_agent", "max_agents": self._max_agents}[name]


def _with_completed(lines: list[str], **payload: Any) -> list[str]:
    """``lines`` with run_completed's payload changed."""
    out = []
    for text in lines:
        data = json.loads(text)
        if data.get("event") == "run_completed":
            data["payload"].update(payload)
        out.append(json.dumps(data))
    return out


def test_run_completed_counts_the_finished_episodes() -> None:
    reason = counts_add_up(Subject(cut_run_lines()))  # type: ignore[arg-type]
    assert reason == "9 steps in 2 episodes (+1 unfinished)"


def test_counting_the_cut_episode_fails_and_says_why() -> None:
    lines = _with_completed(cut_run_lines(), episodes=3)
    with pytest.raises(CheckFailed, match=r"run_completed says 3 episodes, 2 finished reported "
                       r"\(and 1 unfinished, which no episode count includes"):  # fmt: skip
        counts_add_up(Subject(lines))  # type: ignore[arg-type]


def test_an_unfinished_episode_that_terminated_fails() -> None:
    lines = []
    for text in cut_run_lines():
        data = json.loads(text)
        if data.get("type") == "episode" and data["metadata"].get("unfinished"):
            data["terminated"], data["truncated"] = True, False
        lines.append(json.dumps(data))
    with pytest.raises(CheckFailed, match="flagged unfinished but says terminated=True"):
        counts_add_up(Subject(lines))  # type: ignore[arg-type]


def test_the_cut_episodes_steps_still_add_up_to_its_line() -> None:
    out = io.StringIO()
    em = TelemetryEmitter("CUT", out, flush_interval=0)
    em.run_started(worker_type="fixture")
    for t in range(3):
        em.step(0, t, 1.0)
    em.episode(0, 2.0, 3, unfinished=True)  # its steps sum to 3.0
    em.run_completed(episodes=0, total_reward=0.0, duration_seconds=1.0)
    em.close()
    with pytest.raises(CheckFailed, match="total_reward 2.0 but its steps sum to 3.0"):
        counts_add_up(Subject(out.getvalue().splitlines()))  # type: ignore[arg-type]


def test_each_agents_counts_leave_its_cut_episode_out_but_its_steps_in() -> None:
    own = {"episodes": 2, "steps": 9, "total_reward": -7.0}
    lines = _with_completed(cut_run_lines(agents=("red", "blue")), agents={"red": own, "blue": own})
    subject = Subject(lines, max_agents=2)
    assert agent_checks.counts_add_up(subject) == (  # type: ignore[arg-type]
        "red: 2 ep / 9 steps, blue: 2 ep / 9 steps"
    )
    counted = {"episodes": 3, "steps": 9, "total_reward": -5.0}  # the cut one counted
    wrong = _with_completed(lines, agents={"red": counted, "blue": own})
    with pytest.raises(
        CheckFailed, match="agent 'red' episodes is 3, its episode lines add up to 2"
    ):
        agent_checks.counts_add_up(Subject(wrong, max_agents=2))  # type: ignore[arg-type]
