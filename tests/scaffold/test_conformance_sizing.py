"""The conformance config a baked worker gives lasts long enough (the suite asks for >= 1 s) in
any env: it is sized from the steps a run really takes, not guessed. With the old fixed
config (15 ms a step) a FrozenLake run lasted about 0.3 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mosaic_sdk.scaffold import bake


def conformance_run_seconds(project: Path, package: str, tmp_path: Path) -> float:
    """Run the baked worker (without the runner) with its own conformance config; the time
    between its first and last telemetry line."""
    env = {**os.environ, "PYTHONPATH": str(project)}
    env = {k: v for k, v in env.items() if "FASTLANE" not in k}
    sized = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import json; from {package}.plugin import mosaic_worker_conformance_config as c; "
            "print(json.dumps(c()))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    config = {**json.loads(sized.stdout), "run_id": "sizing-test"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", package, "--config", str(path)],
        env={**env, "MOSAIC_RUN_DIR": str(tmp_path)},
        stdin=subprocess.DEVNULL,  # not pytest's own (an open pipe under -s)
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stamps = [json.loads(line)["ts_unix_ns"] for line in done.stdout.splitlines() if line]
    return (stamps[-1] - stamps[0]) / 1e9


@pytest.mark.parametrize(
    "answers",
    [
        {"env_family": "toy_text", "env_id": "FrozenLake-v1"},  # episodes of a few steps
        {},  # CartPole, the default
    ],
    ids=["frozenlake", "cartpole"],
)
def test_a_conformance_run_lasts_at_least_a_second(
    answers: dict[str, str], tmp_path: Path, cookiecutter_config: Path
) -> None:
    project = bake(tmp_path / "src", answers, config_file=cookiecutter_config).project_dir
    assert conformance_run_seconds(project, "mosaic_worker_my_agent", tmp_path) >= 1.0
