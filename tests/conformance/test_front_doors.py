"""The front doors of the suite: check_worker, the CLI, the pytest plugin, parametrize_with_checks.

They use the light fixture workers and mostly the config checks (no worker launch), so they
are quick; the run-time checks are covered by test_broken_fixtures.py.
"""

from __future__ import annotations

import argparse
import json
import textwrap
import warnings

import pytest

from mosaic_sdk.cli import UsageError
from mosaic_sdk.cli import conformance as cli_conformance
from mosaic_sdk.conformance import (
    ConformanceError,
    ConformanceWarning,
    all_checks,
    check_worker,
    parametrize_with_checks,
)
from mosaic_sdk.conformance.cases import conformance_params
from mosaic_sdk.plugins import UnknownWorkerError

pytest_plugins = ["pytester"]

#: Checks outside the config family (deselected by -k "config.").
OTHERS = len([c for c in all_checks() if c.family != "config"])

LAX = "laxconfig=fixture_laxconfig:plugin"
LAX_FAILURES = [
    "config.rejects_unknown_key",
    "config.rejects_wrong_type",
    "config.rejects_hostile_run_id",
]


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="mosaic")
    cli_conformance.register(parser.add_subparsers())
    args = parser.parse_args(["conformance", *argv])
    return int(args.handler(args))


# --- check_worker -------------------------------------------------------------------------


def test_check_worker_raise_warn_none(use_workers) -> None:
    use_workers(LAX)
    with pytest.raises(ConformanceError) as info:
        check_worker("laxconfig", keyword="config.")
    assert sorted(r.name for r in info.value.results if not r.ok) == sorted(LAX_FAILURES)
    assert "config.rejects_unknown_key" in str(info.value)
    with pytest.warns(ConformanceWarning) as caught:
        check_worker("laxconfig", on_fail="warn", keyword="config.")
    assert len(caught) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = check_worker("laxconfig", on_fail=None, keyword="config.")
    assert [r.name for r in results][:2] == ["config.defaults_validate", "config.round_trip"]


def test_check_worker_expected_failures_and_stale_expectations(use_workers) -> None:
    use_workers(LAX)
    expected = dict.fromkeys(LAX_FAILURES, "accepted on purpose")
    results = check_worker("laxconfig", keyword="config.", expected_failures=expected)
    assert {r.name: r.verdict for r in results if r.name in expected} == dict.fromkeys(
        LAX_FAILURES, "xfailed"
    )
    stale = {"config.round_trip": "thought to be broken"}
    with pytest.raises(ConformanceError) as info:
        check_worker("laxconfig", keyword="round_trip", expected_failures=stale)
    assert info.value.results[0].verdict == "xpassed"


def test_check_worker_rejects_bad_arguments(use_workers) -> None:
    use_workers(LAX)
    with pytest.raises(UnknownWorkerError, match="no worker named 'laxconfg'"):
        check_worker("laxconfg")
    with pytest.raises(KeyError, match="config.no_such_check"):
        check_worker("laxconfig", expected_failures={"config.no_such_check": "x"})
    with pytest.raises(ValueError, match="on_fail"):
        check_worker("laxconfig", on_fail="explode")


# --- CLI ----------------------------------------------------------------------------------


def test_cli_json_and_exit_codes(use_workers, capsys) -> None:
    use_workers(LAX)
    assert run_cli("laxconfig", "-k", "config.", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["worker"] == "laxconfig" and doc["ok"] is False
    assert doc["counts"] == {"passed": 4, "failed": 3}
    failed = [r for r in doc["results"] if r["verdict"] == "failed"]
    assert all(r["hint"] and r["reason"] for r in failed)
    expect = [f"--expect-fail={name}=lax on purpose" for name in LAX_FAILURES]
    assert run_cli("laxconfig", "-k", "config.", *expect) == 0
    out = capsys.readouterr().out
    assert "config.rejects_unknown_key" in out and "xfailed" in out and "conformant" in out


def test_cli_table_shows_reason_and_hint(use_workers, capsys) -> None:
    use_workers(LAX)
    assert run_cli("laxconfig", "-k", "unknown_key") == 1
    out = capsys.readouterr().out
    assert "config.rejects_unknown_key" in out and "failed" in out
    assert "'conformance_unknown_key' was accepted" in out
    assert "hint: Keep the WorkerConfig default" in out
    assert "NOT conformant at level sdk: 1 failed" in out


def test_cli_list_and_usage_errors(use_workers, capsys) -> None:
    use_workers(LAX)
    assert run_cli("--list", "-k", "stop") == 0
    assert capsys.readouterr().out.split("\n")[0].startswith("stop.sigterm_exits")
    with pytest.raises(UsageError, match="no worker named"):
        run_cli("nope")
    with pytest.raises(UsageError, match="CHECK=REASON"):
        run_cli("laxconfig", "--expect-fail", "config.round_trip")
    with pytest.raises(UsageError, match="unknown check"):
        run_cli("laxconfig", "--expect-fail", "config.nope=x")
    with pytest.raises(UsageError, match="-k"):
        run_cli("laxconfig", "-k", "config and")
    with pytest.raises(UsageError, match="name the worker"):
        run_cli()


# --- pytest plugin and parametrize_with_checks --------------------------------------------


def test_pytest_plugin_is_inert_without_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--pyargs", "mosaic_sdk.conformance", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_pytest_plugin_refuses_an_unknown_worker(pytester: pytest.Pytester, use_workers) -> None:
    use_workers(LAX)
    result = pytester.runpytest_subprocess(
        "--pyargs",
        "mosaic_sdk.conformance",
        "--mosaic-worker",
        "laxconfg",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no worker named 'laxconfg'; did you mean 'laxconfig'*"])


def test_pytest_plugin_runs_checks_as_items(pytester: pytest.Pytester, use_workers) -> None:
    use_workers(LAX)
    args = ["--pyargs", "mosaic_sdk.conformance", "--mosaic-worker", "laxconfig", "-k", "config."]
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=3, deselected=OTHERS)
    result.stdout.fnmatch_lines(["*laxconfig-config.rejects_unknown_key*", "*hint: *"])
    expect = [f"--mosaic-expect-fail={n}=lax on purpose" for n in LAX_FAILURES]
    result = pytester.runpytest_subprocess(*args, *expect, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, xfailed=3, deselected=OTHERS)


def test_pytest_plugin_launches_only_what_selected_checks_read(
    pytester: pytest.Pytester, use_workers, tmp_path, monkeypatch
) -> None:
    use_workers(LAX)
    log = tmp_path / "launches"
    log.touch()
    monkeypatch.setenv("FIXTURE_LAUNCH_LOG", str(log))  # inherited by the inner pytest
    base = [
        "--pyargs",
        "mosaic_sdk.conformance",
        "--mosaic-worker",
        "laxconfig",
        "-p",
        "no:cacheprovider",
    ]
    pytester.runpytest_subprocess(*base, "-k", "config.").assert_outcomes(
        passed=4, failed=3, deselected=OTHERS
    )
    assert log.read_text() == "", "config checks launched the worker"
    pytester.runpytest_subprocess(*base, "-k", "dry_run").assert_outcomes(
        passed=2, deselected=len(all_checks()) - 2
    )
    launched = log.read_text().split()
    assert len(launched) == 1 and "-dry_run-" in launched[0]


def test_check_worker_runs_named_checks_only(use_workers, tmp_path, monkeypatch) -> None:
    use_workers(LAX)
    log = tmp_path / "launches"
    monkeypatch.setenv("FIXTURE_LAUNCH_LOG", str(log))
    results = check_worker("laxconfig", checks=["cli.bad_config_exits_nonzero"])
    assert [(r.name, r.verdict) for r in results] == [("cli.bad_config_exits_nonzero", "passed")]
    assert len(log.read_text().split()) == 1


def test_parametrize_with_checks_in_a_worker_test_suite(
    pytester: pytest.Pytester, use_workers
) -> None:
    use_workers(LAX)
    pytester.makepyfile(
        test_my_worker=textwrap.dedent(
            """
            from mosaic_sdk.conformance import parametrize_with_checks

            @parametrize_with_checks(["laxconfig"], expected_failures={
                "config.rejects_unknown_key": "kept for old job files",
                "config.rejects_wrong_type": "coerced on purpose",
                "config.rejects_hostile_run_id": "trusts its runner",
                "config.round_trip": "wrongly believed broken",
            })
            def test_conformance(check):
                check()
            """
        )
    )
    result = pytester.runpytest_subprocess("-k", "config.", "-p", "no:cacheprovider", "-rA")
    # round_trip passes, so its strict xfail turns into a failure ([XPASS(strict)]).
    result.assert_outcomes(passed=3, xfailed=3, failed=1, deselected=OTHERS)
    result.stdout.fnmatch_lines(
        ["*test_conformance?laxconfig-config.round_trip?*", "*XPASS(strict)*believed broken*"]
    )
    listed = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    listed.stdout.fnmatch_lines(["*test_conformance?laxconfig-telemetry.seq_increasing?*"])


def test_parametrize_with_checks_rejects_unknown_check_names() -> None:
    with pytest.raises(KeyError, match="telemetry.seq_increase"):
        parametrize_with_checks(["example"], {"telemetry.seq_increase": "typo"})


# --- levels: every front door takes one -------------------------------------------------

UPOK = "upok=fixture_upstream_ok:get_worker_metadata"


def test_check_worker_level_defaults_to_the_style_and_can_be_forced(use_workers) -> None:
    use_workers(UPOK)
    own = {r.name: r for r in check_worker("upok", keyword="heartbeats or valid_jsonl")}
    assert {r.level for r in own.values()} == {"platform"}
    assert own["telemetry.heartbeats"].verdict == "advisory"
    assert own["telemetry.heartbeats"].hint.startswith("Run a mosaic_sdk.telemetry.Heartbeat")
    assert own["telemetry.valid_jsonl"].verdict == "passed"
    with pytest.raises(ConformanceError) as info:
        check_worker("upok", keyword="heartbeats or valid_jsonl", level="sdk")
    assert {r.name for r in info.value.results if not r.ok} == set(own)
    with pytest.raises(ValueError, match="unknown conformance level 'gui'"):
        check_worker("upok", level="gui")


def test_cli_level_json_lists_advisories_and_they_do_not_change_the_exit_code(
    use_workers, capsys
) -> None:
    use_workers(UPOK)
    assert run_cli("upok", "-k", "heartbeats or valid_jsonl", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["level"] == "platform" and doc["level_from"] == "the worker's style"
    assert doc["ok"] is True and doc["counts"] == {"passed": 1, "advisory": 1}
    (advisory,) = doc["advisories"]
    assert advisory["name"] == "telemetry.heartbeats" and advisory["in_level"] is False
    assert advisory["hint"] and advisory["levels"] == ["sdk"]
    assert run_cli("upok", "-k", "heartbeats or valid_jsonl", "--level", "sdk", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["level"] == "sdk" and doc["counts"] == {"failed": 2}


def test_cli_table_shows_advisories_with_their_hint(use_workers, capsys) -> None:
    use_workers(UPOK)
    assert run_cli("upok", "-k", "heartbeats") == 0
    out = capsys.readouterr().out
    assert "at level platform (the worker's own level" in out
    assert "telemetry.heartbeats" in out and "advisory" in out and "failed by the sdk rule" in out
    assert "hint: Run a mosaic_sdk.telemetry.Heartbeat" in out
    assert "conformant at level platform: 1 advisory" in out


def test_cli_list_shows_levels(capsys) -> None:
    assert run_cli("--list", "-k", "stop") == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:2] == ["stop.sigterm_exits", "platform+sdk"]
    assert rows[2].split()[:2] == ["stop.no_orphans", "sdk"]
    assert run_cli("--list", "--level", "platform", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed and all("platform" in row["levels"] for row in listed)
    assert "telemetry.heartbeats" not in {row["name"] for row in listed}
    with pytest.raises(SystemExit):
        run_cli("upok", "--level", "gui")


def test_pytest_plugin_takes_the_level(pytester: pytest.Pytester, use_workers) -> None:
    use_workers(UPOK)
    args = [
        "--pyargs",
        "mosaic_sdk.conformance",
        "--mosaic-worker",
        "upok",
        "-p",
        "no:cacheprovider",
    ]
    selected = ["-k", "heartbeats or valid_jsonl"]
    result = pytester.runpytest_subprocess(*args, *selected)
    result.assert_outcomes(passed=2, deselected=len(all_checks()) - 2)
    result.stdout.fnmatch_lines(["*ConformanceAdvisory*telemetry.heartbeats*hint: *"])
    result = pytester.runpytest_subprocess(*args, *selected, "--mosaic-level", "sdk")
    result.assert_outcomes(failed=2, deselected=len(all_checks()) - 2)
    result = pytester.runpytest_subprocess(*args, "--mosaic-level", "gui")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_parametrize_with_checks_takes_the_level(pytester: pytest.Pytester, use_workers) -> None:
    use_workers(UPOK)
    pytester.makepyfile(
        test_my_worker=textwrap.dedent(
            """
            from mosaic_sdk.conformance import parametrize_with_checks

            @parametrize_with_checks(["upok"], keyword="heartbeats or valid_jsonl")
            def test_own_level(check):
                check()

            @parametrize_with_checks(["upok"], keyword="heartbeats or valid_jsonl", level="sdk")
            def test_sdk_level(check):
                check()
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*FAILED*test_sdk_level?upok-telemetry.heartbeats?*"])
    with pytest.raises(ValueError, match="unknown conformance level"):
        parametrize_with_checks(["upok"], level="gui")


def test_expected_failures_outside_an_explicit_level_are_not_marked() -> None:
    params = conformance_params(
        ["upok"],
        {"telemetry.heartbeats": "no beats yet", "telemetry.valid_jsonl": "guide lines"},
        keyword="heartbeats or valid_jsonl",
        level="platform",
    )
    marks = {p.id: [m.name for m in p.marks] for p in params}
    assert marks == {"upok-telemetry.valid_jsonl": ["xfail"], "upok-telemetry.heartbeats": []}
