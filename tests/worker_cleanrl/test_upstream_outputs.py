"""Upstream scripts' TensorBoard events and saved models land where the run directory says."""

from __future__ import annotations

from pathlib import Path

from mosaic_worker_cleanrl.upstream_outputs import OutputRedirect

from worker_cleanrl.worker_runs import needs_upstream, run_worker, unique_run_id


def test_only_relative_runs_paths_are_mapped(tmp_path: Path) -> None:
    redirect = OutputRedirect(tmp_path, "tb")
    assert redirect.log_dir("runs/CartPole__c51__1") == str(tmp_path / "tb" / "CartPole__c51__1")
    assert redirect.log_dir("/abs/runs/x") == "/abs/runs/x"
    assert redirect.log_dir("elsewhere/x") == "elsewhere/x" and redirect.log_dir(None) is None
    model = "runs/CartPole__c51__1/c51.cleanrl_model"
    assert redirect.model_path(model) == str(tmp_path / "checkpoints" / "c51.cleanrl_model")
    assert redirect.model_path(Path(model)) == str(tmp_path / "checkpoints" / "c51.cleanrl_model")
    assert redirect.model_path("runs/x/weights.pt") == "runs/x/weights.pt"
    buffer = object()
    assert redirect.model_path(buffer) is buffer


SCRIPT = '''
"""Probe: writes as CleanRL scripts do (run as cleanrl.dqn)."""
import argparse
import os

import torch
from torch.utils.tensorboard import SummaryWriter

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-id", type=str, default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, default=10)
    args = parser.parse_args()
    run_name = f"{args.env_id}__probe__1"
    writer = SummaryWriter(f"runs/{run_name}")
    writer.add_scalar("charts/x", 1.0, 0)
    writer.close()
    model_path = f"runs/{run_name}/probe.cleanrl_model"
    torch.save({"w": torch.ones(2)}, model_path)
    back = torch.load(model_path)
    assert back["w"].sum().item() == 2.0
    print("ok", [f for _, _, files in os.walk("runs") for f in files])
'''

JAX_SCRIPT = '''
"""Probe: saves its model with open() as CleanRL's JAX scripts do (run as cleanrl.dqn_jax)."""
import argparse

from torch.utils.tensorboard import SummaryWriter

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-id", type=str, default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, default=10)
    args = parser.parse_args()
    run_name = f"{args.env_id}__probe__1"
    writer = SummaryWriter(f"runs/{run_name}")
    model_path = f"runs/{run_name}/probe.cleanrl_model"
    with open(model_path, "wb") as f:
        f.write(b"serialised params")
    with open(model_path, "rb") as f:
        assert f.read() == b"serialised params"
    writer.close()
'''


def _checkout(tmp_path: Path, name: str, script: str) -> Path:
    root = tmp_path / "checkout"
    (root / "cleanrl").mkdir(parents=True)
    (root / "cleanrl" / "__init__.py").write_text("")
    (root / "cleanrl" / f"{name}.py").write_text(script)
    return root


@needs_upstream
def test_tensorboard_dir_and_checkpoints_of_an_upstream_script(runs: Path, tmp_path: Path) -> None:
    root = _checkout(tmp_path, "dqn", SCRIPT)
    config = {"run_id": unique_run_id("outputs"), "algo": "dqn", "total_timesteps": 10,
              "cleanrl_path": str(root), "tensorboard_dir": "tb"}  # fmt: skip
    result = run_worker(runs, config, timeout=240)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    assert "ok []" in result.log(), "nothing was written under runs/"
    assert not (result.run_dir / "runs").exists()
    events = list((result.run_dir / "tb" / "CartPole-v1__probe__1").glob("events.out.tfevents.*"))
    assert events
    checkpoint = result.run_dir / "checkpoints" / "probe.cleanrl_model"
    assert checkpoint.is_file()
    saved = result.events("checkpoint_saved")
    assert [e["payload"]["checkpoint_path"] for e in saved] == [str(checkpoint)]
    analytics = result.analytics()
    assert analytics["checkpoints"][0]["path"] == str(checkpoint)
    assert analytics["tensorboard_dirs"] == [str(events[0].parent)]


@needs_upstream
def test_a_model_saved_with_open_ends_in_checkpoints(runs: Path, tmp_path: Path) -> None:
    root = _checkout(tmp_path, "dqn_jax", JAX_SCRIPT)
    config = {"run_id": unique_run_id("openmodel"), "algo": "dqn_jax", "total_timesteps": 10,
              "cleanrl_path": str(root)}  # fmt: skip
    result = run_worker(runs, config, timeout=240)
    assert result.returncode == 0 and result.terminal() == "run_completed", result.why()
    checkpoint = result.run_dir / "checkpoints" / "probe.cleanrl_model"
    assert checkpoint.read_bytes() == b"serialised params"
    assert not (result.run_dir / "runs").exists(), "runs/ is emptied and removed"
    saved = result.events("checkpoint_saved")
    assert [e["payload"]["checkpoint_path"] for e in saved] == [str(checkpoint)]
