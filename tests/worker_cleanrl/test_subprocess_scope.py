"""The env-subprocess patch reaches env subprocesses and nothing else.

A script in a fake CleanRL checkout runs under the real worker: it starts an unrelated Python
child, builds an ``AsyncVectorEnv`` (each start method), and each env's thunk starts a Python
child of its own. Only the env subprocesses may import gymnasium at start-up and get the
patched ``gymnasium.make``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker_cleanrl.worker_runs import run_worker, unique_run_id

SCRIPT = '''
"""Probe: what Python children see under the worker (run as cleanrl.dqn)."""
import argparse
import json
import os
import subprocess
import sys

import gymnasium as gym

PROBE = "import sys; print('gymnasium' in sys.modules)"


def child_imports_gymnasium() -> str:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.strip()


def switches() -> dict:
    return {"vars": sorted(k for k in os.environ if k.startswith("MOSAIC_INSTRUMENT_")),
            "site_on_path": "_site" in os.environ.get("PYTHONPATH", "")}


def make_env(env_id):
    def thunk():
        env = gym.make(env_id, max_episode_steps=5)
        record = {"pid": os.getpid(), "outer": type(env).__name__,
                  "child_imports_gymnasium": child_imports_gymnasium(), **switches()}
        with open(f"env-{os.getpid()}.json", "w") as f:
            json.dump(record, f)
        return env
    return thunk


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-id", type=str, default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, default=30)
    parser.add_argument("--context", type=str, default="spawn")
    args = parser.parse_args()
    record = {"pid": os.getpid(), "before": child_imports_gymnasium(), **switches()}
    envs = gym.vector.AsyncVectorEnv([make_env(args.env_id)] * 2, context=args.context)
    envs.reset(seed=1)
    for _ in range(args.total_timesteps):
        envs.step(envs.action_space.sample())
    envs.close()
    record["after"] = child_imports_gymnasium()
    record["after_switches"] = switches()
    with open("probe.json", "w") as f:
        json.dump(record, f)
'''


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "cleanrl").mkdir(parents=True)
    (root / "cleanrl" / "__init__.py").write_text("")
    (root / "cleanrl" / "dqn.py").write_text(SCRIPT)
    return root


@pytest.mark.parametrize("context", ["spawn", "forkserver", "fork"])
def test_only_env_subprocesses_import_gymnasium_and_get_the_patch(
    runs: Path, checkout: Path, context: str
) -> None:
    config = {"run_id": unique_run_id("scope"), "algo": "dqn", "env_id": "CartPole-v1",
              "total_timesteps": 30, "cleanrl_path": str(checkout),
              "algo_params": {"context": context}}  # fmt: skip
    result = run_worker(runs, config, timeout=240)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    probe = json.loads((result.run_dir / "probe.json").read_text())
    # An unrelated child of the algorithm process, before and after the vector env exists.
    assert probe["before"] == "False" and probe["after"] == "False", probe
    assert probe["vars"] == [] and not probe["site_on_path"], probe
    assert probe["after_switches"] == {"vars": [], "site_on_path": False}
    records = [json.loads(p.read_text()) for p in result.run_dir.glob("env-*.json")]
    # AsyncVectorEnv calls the first thunk in the algorithm process too (for the spaces),
    # while it is starting its workers: that thunk's child starts clean as well.
    here = [r for r in records if r["pid"] == probe["pid"]]
    assert len(here) == 1 and here[0]["vars"] == [] and not here[0]["site_on_path"], here
    assert here[0]["child_imports_gymnasium"] == "False"
    envs = [r for r in records if r["pid"] != probe["pid"]]
    assert len(envs) == 2, records
    for env in envs:
        assert env["outer"] == "EpisodeTelemetryWrapper", env  # the env subprocess is patched
        assert env["child_imports_gymnasium"] == "False", env  # ... its own children are not
        assert env["vars"] == [] and not env["site_on_path"], env
    # The wrapper in the env subprocesses reported through info: episodes reached the stream.
    episodes = result.episodes()
    assert len(episodes) >= 4 and all(e["steps"] <= 5 for e in episodes), episodes[:3]
