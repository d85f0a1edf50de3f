"""env_families: MiniGrid's observation wrapper, the missing-package hint, the dry run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mosaic_worker_cleanrl import env_families

pytest.importorskip("minigrid", reason="the minigrid extra (scripts/test installs it)")


def test_minigrid_observations_become_the_image_and_others_stay() -> None:
    import gymnasium

    env_families.register_env_families()
    env = env_families.wrap_observations(gymnasium.make("BabyAI-GoToRedBall-v0"))
    assert env.observation_space.shape == (7, 7, 3)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (7, 7, 3) and obs.dtype.name == "uint8"
    cartpole = gymnasium.make("CartPole-v1")
    assert env_families.wrap_observations(cartpole) is cartpole


def test_a_family_id_without_its_package_names_the_extra(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "minigrid" else real(name)
    )
    assert env_families.missing_family_package("MiniGrid-Empty-5x5-v0") == "minigrid"
    assert env_families.missing_family_package("BabyAI-GoToObj-v0") == "minigrid"
    assert env_families.missing_family_package("CartPole-v1") is None


def test_the_dry_run_refuses_a_policy_that_does_not_fit_the_env(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch
    from mosaic_worker_cleanrl.agents import MinigridAgent

    torch.save(MinigridAgent(7).state_dict(), tmp_path / "cnn.pt")
    config = {"run_id": "dry", "mode": "policy_eval", "env_id": "CartPole-v1",
              "policy_path": str(tmp_path / "cnn.pt")}  # fmt: skip
    (tmp_path / "c.json").write_text(json.dumps(config))
    cmd = [sys.executable, "-m", "mosaic_worker_cleanrl", "--config", str(tmp_path / "c.json"),
           "--dry-run"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "does not fit this env" in proc.stderr and "the agent has 7 actions, the env 2" in (
        proc.stderr
    )
    config["env_id"] = "MiniGrid-DoorKey-5x5-v0"
    (tmp_path / "c.json").write_text(json.dumps(config))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
