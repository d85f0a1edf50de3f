"""Every check can fail: each broken fixture worker fails exactly the checks it targets.

A fixture breaks one part of the contract (see its module docstring in ``fixtures/``); the
suite must report exactly those checks as not ok, evaluate the rest normally (pass, or skip
where a gate says the check does not apply), and never crash with an ``error`` verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mosaic_sdk.conformance import all_checks, check_worker
from mosaic_sdk.conformance.results import ERROR, PASSED, SKIPPED
from mosaic_sdk.conformance.subject import fastlane_available

# fixture name -> (MOSAIC_PLUGINS spec, checks it must fail)
BROKEN: dict[str, tuple[str, set[str]]] = {
    "good": ("good=fixture_good:plugin", set()),
    "typo": ("typo=fixture_typo:plugin", {"discovery.worker_type_matches"}),
    "dup": ("dup=fixture_dup:plugin,dup=fixture_dup:plugin", {"discovery.name_unique"}),
    "baddesc": (
        "baddesc=fixture_baddesc:plugin",
        {"description.version_pep440", "description.license_spdx", "description.protocol_version"},
    ),
    "brokendesc": ("brokendesc=fixture_brokendesc:plugin", {"description.metadata_valid"}),
    "laxconfig": (
        "laxconfig=fixture_laxconfig:plugin",
        {
            "config.rejects_unknown_key",
            "config.rejects_wrong_type",
            "config.rejects_hostile_run_id",
        },
    ),
    "oddconfig": (
        "oddconfig=fixture_oddconfig:plugin",
        {
            "config.defaults_validate",
            "config.round_trip",
            "config.job_descriptor",
            "config.json_schema_valid",
        },
    ),
    "sloppycli": (
        "sloppycli=fixture_sloppycli:plugin",
        {
            "cli.config_runs",
            "cli.dry_run_exits_zero",
            "cli.dry_run_writes_nothing",
            "cli.bad_config_exits_nonzero",
            "cli.bad_config_reports",
        },
    ),
    "noisy": ("noisy=fixture_noisy:plugin", {"telemetry.valid_jsonl"}),
    "lifecycle": (
        "lifecycle=fixture_lifecycle:plugin",
        {"telemetry.run_started_first", "telemetry.terminal_last"},
    ),
    "badseq": ("badseq=fixture_badseq:plugin", {"telemetry.seq_increasing"}),
    "buffered": ("buffered=fixture_buffered:plugin", {"telemetry.streams_live"}),
    "thin": ("thin=fixture_thin:plugin", {"telemetry.heartbeats", "telemetry.counts_add_up"}),
    "nondet": ("nondet=fixture_nondet:plugin", {"determinism.same_seed_same_telemetry"}),
    "stuck": ("stuck=fixture_stuck:plugin", {"stop.sigterm_exits", "stop.run_cancelled"}),
    "orphan": (
        "orphan=fixture_orphan:plugin",
        {"stop.no_orphans", "hygiene.no_leftover_processes"},
    ),
    "orphanpipe": (
        "orphanpipe=fixture_orphanpipe:plugin",
        {"stop.no_orphans", "hygiene.no_leftover_processes"},
    ),
    "shmleak": ("shmleak=fixture_shmleak:plugin", {"hygiene.no_shm_leftovers"}),
    "badenv": ("badenv=fixture_badenv:plugin", {"env.check_env"}),
    "phantomckpt": ("phantomckpt=fixture_phantomckpt:plugin", {"checkpoint.saved_and_exists"}),
}

#: FastLane fixtures: their checks are gated on this SDK having mosaic_sdk.fastlane.
BROKEN_FASTLANE: dict[str, tuple[str, set[str]]] = {
    "flnothing": (
        "flnothing=fixture_flnothing:plugin",
        {"fastlane.frames_published", "fastlane.v1_readable", "env.check_env_fastlane"},
    ),
    "flleak": (
        "flleak=fixture_handmade_fastlane:leak",
        {"fastlane.segment_removed", "hygiene.no_shm_leftovers"},
    ),
    "flbad": ("flbad=fixture_handmade_fastlane:bad", {"fastlane.v1_readable"}),
}
if fastlane_available():
    BROKEN.update(BROKEN_FASTLANE)

#: Checks proven able to fail elsewhere (test_packaging_check.py).
FAILED_ELSEWHERE = {"packaging.wheel_entry_point"}


@pytest.mark.parametrize("fixture", sorted(BROKEN))
def test_fixture_fails_exactly_its_checks(fixture: str, use_workers) -> None:
    spec, expected = BROKEN[fixture]
    pid_file: Path = use_workers(spec)
    results = check_worker(fixture, on_fail=None)
    failing = {r.name for r in results if not r.ok}
    assert failing == expected, "\n".join(
        f"{r.name}: {r.verdict}: {r.reason}" for r in results if r.name in failing ^ expected
    )
    assert not [r for r in results if r.verdict == ERROR]
    for r in results:
        if not r.ok:
            assert r.reason and r.hint, f"{r.name} fails without a reason or a hint"
    assert {r.name for r in results} == {c.name for c in all_checks()}
    if fixture == "good":
        assert {r.name: r.verdict for r in results}["checkpoint.saved_and_exists"] == PASSED
    if fixture in ("orphan", "orphanpipe"):
        assert pid_file.read_text().split(), "the orphan fixture reported no helper pid"


def test_unloadable_entry_point_fails_discovery_and_skips_the_rest(use_workers) -> None:
    use_workers("unloadable=fixture_that_does_not_exist")
    results = {r.name: r for r in check_worker("unloadable", on_fail=None)}
    assert results["discovery.entry_point_loads"].verdict == "failed"
    assert "fixture_that_does_not_exist" in results["discovery.entry_point_loads"].reason
    assert results["discovery.name_unique"].verdict == PASSED
    others = [r for n, r in results.items() if n.split(".")[0] != "discovery"]
    assert others and all(r.verdict == SKIPPED for r in others)


def test_every_check_has_a_fixture_that_fails_it() -> None:
    everything = {**BROKEN, **BROKEN_FASTLANE}
    proven = set().union(*(checks for _, checks in everything.values())) | FAILED_ELSEWHERE
    proven.add("discovery.entry_point_loads")  # the unloadable fixture
    assert {c.name for c in all_checks()} == proven
