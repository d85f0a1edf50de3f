"""The control checks supervise their worker as the recorded runs and ``mosaic run`` do: when a
check ends its session, a child the worker started in a session of its own (``setsid()``)
ends too.

The worker (fixtures/fixture_setsid.py) is conformant in everything the control checks look
at, and starts a sleeper that neither its process group nor its pipes lead to.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mosaic_sdk.conformance import check_worker
from mosaic_sdk.conformance.results import PASSED
from mosaic_sdk.runner.supervision.lifecycle import RunLifecycle
from mosaic_sdk.runner.supervision.proctree import pid_alive

CHECKS = ["control.stop_cancels", "control.interactive_replay", "control.bad_command_answered"]


def test_the_control_checks_leave_no_setsid_child(
    use_workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file: Path = use_workers("setsid=fixture_setsid:plugin")
    supervised: list[str] = []
    real = RunLifecycle.supervise

    def spy(self: RunLifecycle) -> None:
        supervised.append(self.prepared.run_id)
        real(self)

    monkeypatch.setattr(RunLifecycle, "supervise", spy)
    results = check_worker("setsid", on_fail=None, checks=CHECKS)
    assert {r.name: r.verdict for r in results} == dict.fromkeys(CHECKS, PASSED), [
        (r.name, r.reason) for r in results
    ]
    # each check's worker went through the run lifecycle (no recorded run is needed here)
    kinds = sorted(
        rid.removeprefix("conformance-setsid-control-").split("-")[0] for rid in supervised
    )
    assert kinds == ["badcommand", "interactive", "stop"], supervised
    sleepers = [int(pid) for pid in pid_file.read_text().split()]
    assert len(sleepers) == len(CHECKS)  # one worker a check, each started its sleeper
    deadline = time.monotonic() + 10
    while any(map(pid_alive, sleepers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in sleepers if pid_alive(pid)] == [], "a check left a sleeper running"
