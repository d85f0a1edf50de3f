"""CLI: ``--config`` runs, ``--dry-run`` exits 0 and writes nothing, a bad config fails loudly."""

from __future__ import annotations

from mosaic_sdk.conformance.recording import RecordedRun
from mosaic_sdk.conformance.registry import PLATFORM, SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject, run_timeout
from mosaic_sdk.exit_status import describe_exit, exit_status


def launched(subject: WorkerSubject, kind: str) -> RecordedRun:
    """The recorded run of ``kind``; fails the check when it could not even start."""
    run = subject.run(kind)
    if run.launch_error:
        raise CheckFailed(run.launch_error)
    if run.timed_out:
        raise CheckFailed(
            f"the {kind} run did not finish within {run_timeout():g} s and was killed "
            "(MOSAIC_CONFORMANCE_RUN_TIMEOUT); keep the conformance config small"
        )
    return run


def _stderr(run: RecordedRun) -> str:
    excerpt = run.stderr_excerpt()
    return f" (stderr: {excerpt})" if excerpt else ""


@conformance_check(
    "cli.config_runs",
    description="The launch command with --config runs the conformance config to exit code 0",
    hint={
        PLATFORM: "Make `python -m PACKAGE.cli --config PATH` (the launch command) run the "
        "conformance config to exit code 0 and print telemetry; run it by hand with "
        "`mosaic run NAME` to see the error",
        SDK: "Start the worker through mosaic_sdk.worker_cli.worker_main; run the config from "
        "mosaic_worker_conformance_config by hand with `mosaic run NAME` to see the error",
    },
    runs=("normal",),
)
def config_runs(subject: WorkerSubject) -> str | None:
    run = launched(subject, "normal")
    if run.exit_code != 0:
        raise CheckFailed(f"the worker {describe_exit(run.exit_code)}{_stderr(run)}")
    if not run.telemetry:
        raise CheckFailed("the worker exited 0 but wrote no telemetry line on stdout")
    return f"{len(run.lines)} lines, exit 0"


@conformance_check(
    "cli.dry_run_exits_zero",
    description="--dry-run with a valid config exits 0",
    hint="Handle --dry-run: validate the config, print a summary on stderr, exit 0 "
    "(worker_main does this)",
    runs=("dry_run",),
    levels=(SDK,),
)
def dry_run_exits_zero(subject: WorkerSubject) -> str | None:
    run = launched(subject, "dry_run")
    if run.exit_code != 0:
        raise CheckFailed(f"--dry-run {describe_exit(run.exit_code)}{_stderr(run)}")
    return None


@conformance_check(
    "cli.dry_run_writes_nothing",
    description="--dry-run writes no stdout line and no file in the run directory",
    hint="Return before creating envs, emitters or files when --dry-run is given",
    runs=("dry_run",),
    levels=(SDK,),
)
def dry_run_writes_nothing(subject: WorkerSubject) -> str | None:
    run = launched(subject, "dry_run")
    problems = []
    if run.lines:
        problems.append(f"{len(run.lines)} stdout line(s), first: {run.lines[0].text[:80]!r}")
    if run.new_files:
        problems.append(f"new files in the run directory: {', '.join(run.new_files[:5])}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return None


@conformance_check(
    "cli.bad_config_exits_nonzero",
    description="A config file that is not valid JSON makes the worker exit non-zero",
    hint="Exit with code 2 on a bad config (worker_main does this)",
    runs=("bad_config",),
    levels=(SDK,),
)
def bad_config_exits_nonzero(subject: WorkerSubject) -> str | None:
    run = launched(subject, "bad_config")
    if run.exit_code == 0:
        raise CheckFailed("the worker exited 0 with a config file that is not valid JSON")
    return exit_status(run.exit_code)


@conformance_check(
    "cli.bad_config_reports",
    description="A bad config gives run_failed on stdout and a message on stderr",
    hint="On a bad config emit run_failed (error_type ConfigError) and print one line "
    "saying what is wrong on stderr (worker_main does both)",
    runs=("bad_config",),
    levels=(SDK,),
)
def bad_config_reports(subject: WorkerSubject) -> str | None:
    run = launched(subject, "bad_config")
    problems = []
    if "run_failed" not in run.events():
        problems.append("no run_failed line on stdout")
    if not run.stderr.strip():
        problems.append("nothing on stderr")
    if problems:
        raise CheckFailed(" and ".join(problems))
    return None


@conformance_check(
    "cli.dispatcher_launch",
    description="The worker runs as MOSAIC's trainer daemon launches it: the dispatcher's "
    "config file (a ULID run_id, worker_id, the form's schema_id and schema_definition), its "
    "argv (python -m MODULE --config F --grpc --grpc-target ADDR --worker-id ID) and its "
    "environment (CUDA_VISIBLE_DEVICES empty, no PYTHONUNBUFFERED, a run directory not yet made)",
    hint={
        PLATFORM: "The platform's dispatcher adds worker_id (and its form's schema_id and "
        "schema_definition) to the config file and starts `python -m MODULE --config F --grpc "
        "--grpc-target ADDR --worker-id ID` with CUDA_VISIBLE_DEVICES empty: accept those keys "
        "(ignore the ones you do not use) and those flags, launch as `python -m MODULE`, and "
        "create MOSAIC_RUN_DIR when it is missing",
        SDK: "Subclass mosaic_sdk.contract.WorkerConfig (worker_id is a base field and the "
        "platform's form keys are accepted and reported as ignored; do not refuse them in code "
        "of your own), start through mosaic_sdk.worker_cli.worker_main (it takes --grpc, "
        "--grpc-target and --worker-id), launch as (sys.executable, '-m', MODULE, '--config', "
        "path), and read CUDA_VISIBLE_DEVICES as possibly empty",
    },
    runs=("dispatched",),
)
def dispatcher_launch(subject: WorkerSubject) -> str | None:
    run = launched(subject, "dispatched")
    command = " ".join(["python", *run.argv[1:]])
    if run.exit_code != 0:
        raise CheckFailed(
            f"launched as the platform's dispatcher launches it ({command}, "
            f"CUDA_VISIBLE_DEVICES=''), the worker ended with {run.ending()}{_stderr(run)}"
        )
    if not run.telemetry:
        raise CheckFailed(
            f"launched as the platform's dispatcher launches it ({command}), the worker exited "
            "0 but wrote no telemetry line on stdout"
        )
    forwarded = sum(1 for r in run.telemetry if r.line.kind in ("step", "episode"))
    return f"exit 0, {forwarded} step/episode lines for the platform's proxy"
