"""Every check can fail: each broken fixture worker fails exactly the checks it targets.

A fixture breaks one part of the contract (see its module docstring in ``fixtures/``); the
suite must report exactly those checks as not ok, evaluate the rest normally (pass, or skip
where a gate says the check does not apply; a check outside the level is an advisory), and
never crash with an ``error`` verdict. Cases are run at a level: ``NAME`` at the worker's own
level, ``NAME@platform`` at the platform level. Every check is failed, at each level it
belongs to, by some case at that level.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mosaic_sdk.cli import conformance as cli_conformance
from mosaic_sdk.conformance import all_checks, check_worker, get_check
from mosaic_sdk.conformance.registry import PLATFORM, SDK
from mosaic_sdk.conformance.results import ADVISORY, ERROR, PASSED, SKIPPED
from mosaic_sdk.conformance.subject import fastlane_available

# case -> (MOSAIC_PLUGINS spec, checks it must fail); a case "NAME@platform" runs the worker
# NAME at the platform level, "NAME" at its own level (sdk for these SDK-built fixtures).
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
            "cli.dispatcher_launch",
        },
    ),
    "nodispatch": ("nodispatch=fixture_nodispatch:plugin", {"cli.dispatcher_launch"}),
    "cudaempty": ("cudaempty=fixture_cudaempty:plugin", {"cli.dispatcher_launch"}),
    "noisy": ("noisy=fixture_noisy:plugin", {"telemetry.valid_jsonl"}),
    "lifecycle": (
        "lifecycle=fixture_lifecycle:plugin",
        {"telemetry.run_started_first", "telemetry.terminal_last"},
    ),
    "badseq": ("badseq=fixture_badseq:plugin", {"telemetry.seq_increasing"}),
    "staleindex": ("staleindex=fixture_staleindex:plugin", {"telemetry.proxy_episode_index"}),
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
    "nopause": ("nopause=fixture_nopause:plugin", {"control.pause_resume"}),
    "stopignored": ("stopignored=fixture_stopignored:plugin", {"control.stop_cancels"}),
    "deafcontrol": ("deafcontrol=fixture_deafcontrol:plugin", {"control.bad_command_answered"}),
    "unseeded": ("unseeded=fixture_unseeded:plugin", {"control.interactive_replay"}),
    # Turn-based fixtures (fixtures/fixture_turns.py): agents move in turn, each step line
    # written at the mover's next turn; judged per agent or per ply as they declare.
    "turnsok": ("turnsok=fixture_turns:ok", set()),
    "turnsply": ("turnsply=fixture_turns:ply", set()),
    "turnsmisnumbered": (
        "turnsmisnumbered=fixture_turns:misnumbered",
        {"telemetry.counts_add_up", "control.pause_resume"},
    ),
    "turnsnopause": ("turnsnopause=fixture_turns:nopause", {"control.pause_resume"}),
    # SDK-built fixtures judged at the platform level: only the platform's rules fail them.
    "dup@platform": ("dup=fixture_dup:plugin,dup=fixture_dup:plugin", {"discovery.name_unique"}),
    "brokendesc@platform": ("brokendesc=fixture_brokendesc:plugin", {"description.metadata_valid"}),
    "sloppycli@platform": (
        "sloppycli=fixture_sloppycli:plugin",
        {"cli.config_runs", "cli.dispatcher_launch"},
    ),
    "nodispatch@platform": ("nodispatch=fixture_nodispatch:plugin", {"cli.dispatcher_launch"}),
    "lifecycle@platform": (
        "lifecycle=fixture_lifecycle:plugin",
        {"telemetry.run_started_first", "telemetry.terminal_last"},
    ),
}

#: Upstream-style fixtures (fixtures/upstream_base.py): judged at their own level, platform.
UPSTREAM: dict[str, tuple[str, set[str]]] = {
    "upok": ("upok=fixture_upstream_ok:get_worker_metadata", set()),
    "upnoterminal": (
        "upnoterminal=fixture_upstream_noterminal:get_worker_metadata",
        {"telemetry.terminal_last", "stop.run_cancelled"},
    ),
    "upbuffered": (
        "upbuffered=fixture_upstream_buffered:get_worker_metadata",
        {"telemetry.streams_live"},
    ),
    "upunflushed": (
        "upunflushed=fixture_upstream_unflushed:get_worker_metadata",
        {"telemetry.streams_live"},
    ),
    "upnoisy": ("upnoisy=fixture_upstream_noisy:get_worker_metadata", {"telemetry.valid_jsonl"}),
    "uptoplevel": (
        "uptoplevel=fixture_upstream_toplevel:get_worker_metadata",
        {"telemetry.proxy_episode_index"},
    ),
    "upnoworkerid": (
        "upnoworkerid=fixture_upstream_noworkerid:get_worker_metadata",
        {"cli.dispatcher_launch"},
    ),
    "updeaf": (
        "updeaf=fixture_upstream_deaf:get_worker_metadata",
        {"stop.sigterm_exits", "stop.run_cancelled"},
    ),
    "upreentrant": (
        "upreentrant=fixture_upstream_reentrant:get_worker_metadata",
        {"stop.run_cancelled"},
    ),
}
BROKEN.update(UPSTREAM)
#: What the upstream-style fixtures do not do that the sdk level asks (advisories at theirs).
UPSTREAM_ADVISORIES = {
    "cli.dry_run_exits_zero",
    "cli.bad_config_reports",
    "telemetry.heartbeats",
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
    # Multi-agent fixtures (fixtures/fixture_agents.py): they claim FastLane as well.
    "agentsok": ("agentsok=fixture_agents:ok", set()),
    "agentstranger": ("agentstranger=fixture_agents:stranger", {"agents.declared"}),
    "agentmiscount": ("agentmiscount=fixture_agents:miscount", {"agents.counts_add_up"}),
    "agentnostreams": ("agentnostreams=fixture_agents:nostreams", {"agents.fastlane_streams"}),
}
if fastlane_available():
    BROKEN.update(BROKEN_FASTLANE)

#: Checks proven able to fail elsewhere (test_packaging_check.py).
FAILED_ELSEWHERE = {"packaging.wheel_entry_point"}


def case_level(case: str) -> str:
    """The level a case is judged at: after "@", else the worker's own."""
    name, _, level = case.partition("@")
    return level or (PLATFORM if name in UPSTREAM else SDK)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_fixture_fails_exactly_its_checks(case: str, use_workers) -> None:
    spec, expected = BROKEN[case]
    fixture, _, forced = case.partition("@")
    level = case_level(case)
    pid_file: Path = use_workers(spec)
    results = check_worker(fixture, on_fail=None, level=forced or None)
    failing = {r.name for r in results if not r.ok}
    assert failing == expected, "\n".join(
        f"{r.name}: {r.verdict}: {r.reason}" for r in results if r.name in failing ^ expected
    )
    assert not [r for r in results if r.verdict == ERROR]
    assert {r.level for r in results} == {level}
    for r in results:
        if not r.ok:
            assert r.reason and r.hint, f"{r.name} fails without a reason or a hint"
            assert r.hint == get_check(r.name).hint_for(level), f"{r.name}: not the {level} hint"
        if r.verdict == ADVISORY:
            assert not r.in_level and r.hint, f"{r.name} advises without a hint"
    assert {r.name for r in results} == {c.name for c in all_checks()}
    if fixture == "good":
        assert {r.name: r.verdict for r in results}["checkpoint.saved_and_exists"] == PASSED
    if fixture in ("orphan", "orphanpipe"):
        assert pid_file.read_text().split(), "the orphan fixture reported no helper pid"
    if fixture in UPSTREAM:
        advisories = {r.name for r in results if r.verdict == ADVISORY}
        assert advisories == UPSTREAM_ADVISORIES, advisories


def test_guide_style_worker_fails_the_sdk_level(use_workers) -> None:
    """The correct upstream-style worker passes at its own level with advisories only; at
    the sdk level those advisories are failures, and valid_jsonl reports every missing
    field of a line at once (not one per round)."""
    use_workers(UPSTREAM["upok"][0])
    results = {r.name: r for r in check_worker("upok", on_fail=None, level=SDK)}
    failing = {n for n, r in results.items() if not r.ok}
    assert failing == UPSTREAM_ADVISORIES | {"telemetry.valid_jsonl"}
    reason = results["telemetry.valid_jsonl"].reason
    for field in ("schema_version", "seq", "ts_unix_ns"):
        assert f"{field}: Field required" in reason, reason
    assert results["telemetry.seq_increasing"].verdict == SKIPPED


def test_a_hook_that_raises_is_an_error_naming_the_hook(use_workers, capsys) -> None:
    """A raising mosaic_worker_conformance_config hook: every check that needs the config is
    an ``error`` whose reason names the hook and what it raised; `mosaic conformance` prints
    its report (exit 1), not a traceback."""
    use_workers("turnsbadhook=fixture_turns:badhook")
    results = {r.name: r for r in check_worker("turnsbadhook", on_fail=None)}
    errors = {n for n, r in results.items() if r.verdict == ERROR}
    assert {"telemetry.counts_add_up", "control.pause_resume", "stop.sigterm_exits"} <= errors
    for name in errors:
        reason = results[name].reason
        assert "mosaic_worker_conformance_config hook raised LookupError" in reason, reason
        assert (
            "tictactoe_v99" in reason and "mosaic_worker_conformance_config" in results[name].hint
        )
    assert {r.verdict for r in results.values()} <= {ERROR, PASSED, SKIPPED}
    parser = argparse.ArgumentParser(prog="mosaic")
    cli_conformance.register(parser.add_subparsers())
    args = parser.parse_args(["conformance", "turnsbadhook"])
    assert args.handler(args) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert "mosaic_worker_conformance_config hook raised LookupError" in out.out


def test_a_handler_that_died_writing_run_cancelled_is_shown_by_its_stderr(use_workers) -> None:
    """The SIGTERM handler printed run_cancelled in the middle of the loop's write and died
    of it: the reason says how the worker exited and how its stderr ends, the hint what to
    do instead."""
    use_workers(UPSTREAM["upreentrant"][0])
    [result] = [
        r for r in check_worker("upreentrant", on_fail=None) if r.name == "stop.run_cancelled"
    ]
    assert result.verdict == "failed"
    assert result.reason.startswith("no terminal event after SIGTERM (expected run_cancelled); ")
    assert "the worker exited with code 1, its stderr ends: " in result.reason, result.reason
    assert "RuntimeError: reentrant call" in result.reason
    assert "only set a flag" in result.hint and "Never print from the handler" in result.hint


@pytest.mark.parametrize("level", [PLATFORM, SDK])
def test_unloadable_entry_point_fails_discovery_and_skips_the_rest(level, use_workers) -> None:
    use_workers("unloadable=fixture_that_does_not_exist")
    results = {r.name: r for r in check_worker("unloadable", on_fail=None, level=level)}
    assert results["discovery.entry_point_loads"].verdict == "failed"
    assert "fixture_that_does_not_exist" in results["discovery.entry_point_loads"].reason
    assert results["discovery.name_unique"].verdict == PASSED
    others = [r for n, r in results.items() if n.split(".")[0] != "discovery"]
    assert others and all(r.verdict == SKIPPED for r in others)


def test_every_check_has_a_fixture_that_fails_it_at_each_of_its_levels() -> None:
    everything = {**BROKEN, **BROKEN_FASTLANE}
    proven = {
        (name, case_level(case)) for case, (_, checks) in everything.items() for name in checks
    }
    proven |= {(name, SDK) for name in FAILED_ELSEWHERE}
    proven |= {("discovery.entry_point_loads", lv) for lv in (PLATFORM, SDK)}  # unloadable
    wanted = {(c.name, level) for c in all_checks() for level in c.levels}
    assert wanted - proven == set(), "checks no fixture fails at that level"
    assert proven - wanted == set(), "fixtures expected to fail checks outside their level"


@pytest.mark.parametrize("fixture", sorted(UPSTREAM))
def test_upstream_fixtures_through_mosaic_conformance(fixture: str, use_workers, capsys) -> None:
    """`mosaic conformance NAME` on the upstream-style fixtures: the correct one exits 0 with
    advisories only; each broken one exits 1 naming its check, with the platform's fix."""
    spec, expected = UPSTREAM[fixture]
    use_workers(spec)
    parser = argparse.ArgumentParser(prog="mosaic")
    cli_conformance.register(parser.add_subparsers())
    args = parser.parse_args(["conformance", fixture, "--json"])
    code = args.handler(args)
    doc = json.loads(capsys.readouterr().out)
    assert doc["level"] == PLATFORM
    assert code == (1 if expected else 0)
    failed = {r["name"]: r for r in doc["results"] if not r["ok"]}
    assert set(failed) == expected
    for name, r in failed.items():
        assert r["hint"] == get_check(name).hint_for(PLATFORM)
    assert {r["name"] for r in doc["advisories"]} == UPSTREAM_ADVISORIES
