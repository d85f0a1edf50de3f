"""`mosaic conformance cleanrl`: the SDK's conformance suite on this worker, and its CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mosaic_sdk.conformance.api import check_worker

# env.check_env_fastlane runs gymnasium's check_env on the SDK's own FastLane wrapper; while
# that wrapper fails it, it fails identically for the SDK's example worker. Such a failure is
# the SDK's, not this worker's, and is tolerated only while the example shows the same one.
SDK_CHECK = "env.check_env_fastlane"


@pytest.mark.slow
def test_the_worker_passes_the_conformance_suite() -> None:
    results = check_worker("cleanrl", on_fail=None)
    bad = [r for r in results if not r.ok]
    sdk = {r.reason for r in check_worker("example", on_fail=None, checks=[SDK_CHECK]) if not r.ok}
    unexplained = [
        f"{r.name}: {r.reason}" for r in bad if not (r.name == SDK_CHECK and r.reason in sdk)
    ]
    assert not unexplained
    assert len(results) > 30


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
    assert '"ppo"' in proc.stdout and "importable" in proc.stdout
