"""`mosaic conformance cleanrl`: the SDK's conformance suite on this worker, and its CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mosaic_sdk.conformance import all_checks
from mosaic_sdk.conformance.api import check_worker


@pytest.mark.slow
def test_the_worker_passes_the_conformance_suite() -> None:
    results = check_worker("cleanrl", on_fail=None)
    assert [f"{r.name}: {r.reason}" for r in results if not r.ok] == []
    # an SDK-built worker: judged at the sdk level by default, every check in force
    assert {r.level for r in results} == {"sdk"} and all(r.in_level for r in results)
    assert [r.name for r in results] == [c.name for c in all_checks()]


def test_workers_show_lists_the_algorithms() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from mosaic_sdk.cli import main; sys.exit(main())",
            "workers",
            "show",
            "cleanrl",
            "--json",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["details"]["Algorithms"]}
    assert rows["ppo"]["runs"] is True and rows["ppo"]["why_not"] == ""
