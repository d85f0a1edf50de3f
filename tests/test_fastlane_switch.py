"""'Is FastLane on?' is decided once (``resolve_fastlane``), and every worker follows it.

The example worker and a worker baked from the template are launched with the launcher's
environment each way; frames must arrive exactly when the SDK's rule says FastLane is on.
Every segment a run could create is removed by exact name when the test ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mosaic_sdk.fastlane import (
    FastLaneReader,
    FastLaneUnavailableError,
    apply_fastlane_environment,
    resolve_fastlane,
)
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.scaffold import bake
from mosaic_sdk.shm.segment import shm_unlink

# --- the rule -----------------------------------------------------------------------------


def test_config_choice_wins_none_follows_the_environment() -> None:
    on = {"MOSAIC_FASTLANE": "1"}
    assert resolve_fastlane(None, environ=on).enabled
    assert not resolve_fastlane(False, environ=on).enabled
    assert resolve_fastlane(True, environ={}).enabled
    assert not resolve_fastlane(None, environ={}).enabled


@pytest.mark.parametrize(
    "environ",
    [
        {"MOSAIC_FASTLANE": "1"},
        {"MOSAIC_FASTLANE_ONLY": "1"},
        {"GYM_GUI_FASTLANE_ONLY": "1"},
        dict(apply_fastlane_environment({}, fastlane_only=False, fastlane_slot=0)),
        dict(apply_fastlane_environment({}, fastlane_only=True, fastlane_slot=1)),
    ],
)
def test_each_switch_turns_it_on(environ: dict[str, str]) -> None:
    assert resolve_fastlane(None, environ=environ).enabled


def test_a_config_keeping_the_slow_lane_does_not_switch_fastlane_off() -> None:
    # fastlane_only=False is about the slow lane; the launcher's ONLY=1 still switches it on
    s = resolve_fastlane(
        None, environ={"MOSAIC_FASTLANE_ONLY": "1"}, overrides={"fastlane_only": False}
    )
    assert s.enabled and not s.fastlane_only


def test_video_mode_off_means_off_even_when_the_config_asks() -> None:
    off = {"GYM_GUI_FASTLANE_VIDEO_MODE": "off", "MOSAIC_FASTLANE": "1"}
    assert not resolve_fastlane(None, environ=off).enabled
    assert not resolve_fastlane(True, environ=off).enabled
    assert not resolve_fastlane(True, environ={}, overrides={"video_mode": "off"}).enabled


def test_one_precedence_for_interval_and_size() -> None:
    both = {
        "MOSAIC_FASTLANE_INTERVAL_MS": "5",
        "CLEANRL_FASTLANE_INTERVAL_MS": "50",
        "MOSAIC_FASTLANE_MAX_DIM": "64",
        "CLEANRL_FASTLANE_MAX_DIM": "640",
    }
    s = resolve_fastlane(True, environ=both)
    assert (s.interval_ms, s.max_dim) == (5.0, 64)
    legacy = resolve_fastlane(True, environ={"CLEANRL_FASTLANE_INTERVAL_MS": "50"})
    assert legacy.interval_ms == 50.0
    given = resolve_fastlane(True, environ=both, overrides={"interval_ms": 1, "max_dim": None})
    assert (given.interval_ms, given.max_dim) == (1, 64)  # None: not set, the variable counts


def test_bad_values_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="GYM_GUI_FASTLANE_VIDEO_MODE='tv'"):
        resolve_fastlane(None, environ={"GYM_GUI_FASTLANE_VIDEO_MODE": "tv"})
    with pytest.raises(ValueError, match="unknown FastLane setting"):
        resolve_fastlane(True, environ={}, overrides={"slots": 2})
    with pytest.raises(ValueError, match="MOSAIC_FASTLANE='maybe' is not a switch"):
        resolve_fastlane(None, environ={"MOSAIC_FASTLANE": "maybe"})


def test_cleanrl_keeps_config_over_environment_through_the_sdk_rule() -> None:
    pytest.importorskip("mosaic_worker_cleanrl")
    from mosaic_worker_cleanrl.config import CleanRLConfig
    from mosaic_worker_cleanrl.fastlane_settings import resolve_fastlane as cleanrl_resolve

    env = {"MOSAIC_FASTLANE_ONLY": "1", "MOSAIC_FASTLANE_SLOT": "3", "MOSAIC_FASTLANE": "1"}
    assert cleanrl_resolve(CleanRLConfig(run_id="r"), env)["slot"] == 3
    assert cleanrl_resolve(CleanRLConfig(run_id="r", fastlane_slot=1), env)["slot"] == 1
    assert cleanrl_resolve(CleanRLConfig(run_id="r", fastlane=False), env) is None
    assert cleanrl_resolve(CleanRLConfig(run_id="r", fastlane_only=True), {}) is not None
    # the runner writes every field into the config file; defaults read back are "set"
    written = CleanRLConfig.model_validate(CleanRLConfig(run_id="r").model_dump())
    assert cleanrl_resolve(written, {"MOSAIC_FASTLANE_ONLY": "1"}) is not None
    # the interval variables follow the SDK's one order (MOSAIC_ first)
    both = {"MOSAIC_FASTLANE": "1", "MOSAIC_FASTLANE_INTERVAL_MS": "5"}
    both["CLEANRL_FASTLANE_INTERVAL_MS"] = "50"
    assert cleanrl_resolve(CleanRLConfig(run_id="r"), both)["interval_ms"] == 5.0
    # apply_fastlane_environment(fastlane_only=False) switches CleanRL on as it does the SDK
    launched = dict(apply_fastlane_environment({}, fastlane_only=False, fastlane_slot=0))
    assert cleanrl_resolve(CleanRLConfig(run_id="r"), launched) is not None


def test_cleanrl_exports_its_settings_through_the_one_writer() -> None:
    """CleanRL writes the resolved settings back for its child processes: the platform's
    variables and ours in both spellings, the interval and the size limit, and the switch;
    and a child reads back what the run resolved."""
    pytest.importorskip("mosaic_worker_cleanrl")
    from mosaic_worker_cleanrl.config import CleanRLConfig
    from mosaic_worker_cleanrl.fastlane_settings import export_fastlane
    from mosaic_worker_cleanrl.fastlane_settings import resolve_fastlane as cleanrl_resolve

    config = CleanRLConfig(
        run_id="r", fastlane=True, fastlane_video_mode="grid", fastlane_interval_ms=5
    )
    settings = cleanrl_resolve(
        config, {"GYM_GUI_FASTLANE_SLOT": "2", "MOSAIC_FASTLANE_MAX_DIM": "64"}
    )
    assert settings is not None
    env: dict[str, str] = {}
    export_fastlane(settings, config, env)
    for prefix in ("MOSAIC_FASTLANE_", "GYM_GUI_FASTLANE_"):
        assert env[prefix + "ONLY"] == "0" and env[prefix + "SLOT"] == "2"
        assert env[prefix + "VIDEO_MODE"] == "grid" and env[prefix + "GRID_LIMIT"] == "4"
    assert env["MOSAIC_FASTLANE"] == "1"
    assert float(env["MOSAIC_FASTLANE_INTERVAL_MS"]) == 5.0
    assert env["MOSAIC_FASTLANE_MAX_DIM"] == "64"
    assert len(env) == 11
    child = resolve_fastlane(None, environ=env)
    assert child.enabled and child.as_hook_settings() == settings


def test_the_conformance_fastlane_run_gets_the_platform_launchers_variables() -> None:
    """The conformance suite's FastLane run: FastLane-only, slot 0, in both spellings, and not
    the SDK's own ``MOSAIC_FASTLANE`` switch (a worker must publish on the platform's)."""
    from mosaic_sdk.conformance.subject import fastlane_env

    env = fastlane_env()
    assert env["GYM_GUI_FASTLANE_ONLY"] == env["MOSAIC_FASTLANE_ONLY"] == "1"
    assert env["GYM_GUI_FASTLANE_SLOT"] == "0" and "MOSAIC_FASTLANE" not in env
    assert resolve_fastlane(None, environ=env).enabled


# --- the workers follow it ----------------------------------------------------------------


@pytest.fixture(scope="module")
def baked_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A worker baked from the template with the defaults (importable from its directory)."""
    root = tmp_path_factory.mktemp("baked")
    config = root / "cookiecutter-config.yaml"
    config.write_text(
        f'replay_dir: "{root / "replay"}"\ncookiecutters_dir: "{root / "clones"}"\n',
        encoding="utf-8",
    )
    return bake(root / "out", {}, config_file=config).project_dir


@pytest.fixture
def fastlane_run_id() -> Iterator[str]:
    rid = f"switch-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        yield rid
    finally:
        shm_unlink(segment_name(rid))  # by exact name; the worker should have removed it


def watch_for_frame(proc: subprocess.Popen[bytes], run_id: str) -> bool:
    """Poll the run's segment while the worker lives; True once a frame has been read."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            reader = FastLaneReader.attach(run_id)
        except FastLaneUnavailableError:
            time.sleep(0.01)
            continue
        try:
            while proc.poll() is None:
                if reader.latest_frame() is not None:
                    return True
                time.sleep(0.01)
        finally:
            reader.close()
    return False


ENVIRONMENTS = {
    "apply(fastlane_only=False)": (
        lambda: dict(apply_fastlane_environment({}, fastlane_only=False, fastlane_slot=0)),
        True,
    ),
    "no variables": (dict, False),
    "MOSAIC_FASTLANE_ONLY=1": (lambda: {"MOSAIC_FASTLANE_ONLY": "1"}, True),
    "GYM_GUI_FASTLANE_ONLY=1": (lambda: {"GYM_GUI_FASTLANE_ONLY": "1"}, True),
}


@pytest.mark.parametrize("worker", ["example", "baked"])
@pytest.mark.parametrize("case", list(ENVIRONMENTS))
def test_worker_publishes_frames_exactly_when_fastlane_is_on(
    worker: str,
    case: str,
    tmp_path: Path,
    fastlane_run_id: str,
    request: pytest.FixtureRequest,
) -> None:
    make_vars, expect_frames = ENVIRONMENTS[case]
    env = {k: v for k, v in os.environ.items() if "FASTLANE" not in k}
    env.update(make_vars())
    env.update(MOSAIC_RUN_ID=fastlane_run_id, MOSAIC_RUN_DIR=str(tmp_path))
    if worker == "example":
        module = "mosaic_worker_example"
    else:
        project: Path = request.getfixturevalue("baked_project")
        module = "mosaic_worker_my_agent"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project), env.get("PYTHONPATH")]))
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "run_id": fastlane_run_id,
                "episodes": 3,
                "max_steps_per_episode": 40,
                "step_delay_ms": 10,
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        saw_frame = watch_for_frame(proc, fastlane_run_id)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")
    assert saw_frame is expect_frames, f"{worker} under {case}: frames={saw_frame}"
    assert not (Path("/dev/shm") / segment_name(fastlane_run_id)).exists(), "segment left"
