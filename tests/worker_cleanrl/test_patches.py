"""The patches scripts run under: compatibility layer, telemetry wrappers, sitecustomize."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from cleanrl_worker.env_telemetry import INFO_KEY, TelemetrySink
from cleanrl_worker.gym_compat import install_compat
from cleanrl_worker.instrument import Instrumentation
from cleanrl_worker.subprocess_patch import SITE_DIR, SWITCH, subprocess_environment


class RecordingEmitter:
    def __init__(self) -> None:
        self.steps: list[tuple[Any, ...]] = []
        self.episodes: list[tuple[Any, ...]] = []

    def step(self, episode: int, step: int, reward: float, **kw: Any) -> bool:
        self.steps.append((episode, step, reward))
        return True

    def episode(self, episode: int, total: float, steps: int, **kw: Any) -> int:
        self.episodes.append((episode, total, steps, kw.get("metadata")))
        return 0


def _short_cartpole() -> Any:
    env = gymnasium.make("CartPole-v1", max_episode_steps=3)
    return gymnasium.wrappers.RecordEpisodeStatistics(env)


def test_legacy_vector_env_reports_final_observation_and_info_in_the_old_shape() -> None:
    undo = install_compat()
    try:
        envs = gymnasium.vector.SyncVectorEnv([_short_cartpole, _short_cartpole])
        envs.reset(seed=0)
        for _ in range(3):
            obs, _, terminated, truncated, infos = envs.step(np.array([0, 1]))
        envs.close()
    finally:
        undo()
    done = terminated | truncated
    assert done.any()
    assert infos["final_observation"].dtype == object and infos["final_info"].dtype == object
    for i in range(2):
        if done[i]:
            assert infos["final_observation"][i].shape == (4,)
            assert infos["final_info"][i]["episode"]["l"] <= 3
        else:
            assert infos["final_observation"][i] is None and infos["final_info"][i] is None
    assert list(infos["_final_info"]) == list(done)
    assert gymnasium.vector.SyncVectorEnv.__name__ == "SyncVectorEnv"  # restored


def test_old_wrapper_spellings_work_while_installed_and_vanish_after() -> None:
    undo = install_compat()
    try:
        env = gymnasium.make("CartPole-v1")
        env = gymnasium.wrappers.TransformObservation(env, lambda o: np.clip(o, -1, 1))
        env = gymnasium.wrappers.FrameStack(env, 2)
        obs, _ = env.reset(seed=1)
        assert obs.shape == (2, 4) and np.abs(obs).max() <= 1
        env.close()
    finally:
        undo()
    assert not hasattr(gymnasium.wrappers, "FrameStack")


def test_envs_of_an_async_vector_env_report_through_info() -> None:
    emitter = RecordingEmitter()
    sink = TelemetrySink(emitter, step_every=1)
    with Instrumentation(sink, "relay-test"):
        envs = gymnasium.vector.AsyncVectorEnv(
            [lambda: gymnasium.make("CartPole-v1", max_episode_steps=5)] * 2
        )
        envs.reset(seed=0)
        for _ in range(12):
            envs.step(envs.action_space.sample())
        envs.close()
    indices = [e[0] for e in emitter.episodes]
    assert len(indices) >= 4 and len(set(indices)) == len(indices)
    assert all(steps <= 5 for _, _, steps, _ in emitter.episodes)
    by_episode: dict[int, int] = {}
    for episode, _, _ in emitter.steps:
        by_episode[episode] = by_episode.get(episode, 0) + 1
    for episode, _, steps, meta in emitter.episodes:
        if not meta.get("unfinished"):
            assert by_episode[episode] == steps


def test_subprocess_wrapper_puts_records_in_info_not_on_a_stream() -> None:
    sink = TelemetrySink(None, step_every=1, owner_pid=-1)
    with Instrumentation(sink, "child-test"):
        env = gymnasium.make("CartPole-v1", max_episode_steps=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info[INFO_KEY][0]["kind"] == "step" and "origin" in info[INFO_KEY][0]
    _, _, _, truncated, info = env.step(0)
    assert truncated and [r["kind"] for r in info[INFO_KEY]] == ["step", "episode"]


def test_site_directory_holds_only_sitecustomize() -> None:
    assert sorted(p.name for p in SITE_DIR.iterdir() if p.name != "__pycache__") == [
        "sitecustomize.py"
    ]


PROBE = (
    "import os, gymnasium; "
    "print('shadowed', os.environ.get('SHADOWED_RAN')); "
    "print('patched', type(getattr(gymnasium.make, '__self__', None)).__name__)"
)


def _probe(tmp_path: Path, switch_on: bool) -> str:
    shadow = tmp_path / "shadow"
    shadow.mkdir(exist_ok=True)
    (shadow / "sitecustomize.py").write_text("import os\nos.environ['SHADOWED_RAN'] = 'yes'\n")
    env = dict(os.environ)
    env.update(subprocess_environment(env, compat=True, render_frames=False, owner_pid=1))
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(shadow)])
    if not switch_on:
        env[SWITCH] = "0"
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_sitecustomize_loads_the_one_it_shadows_and_patches_only_when_switched_on(
    tmp_path: Path,
) -> None:
    on = _probe(tmp_path, True)
    assert "shadowed yes" in on and "patched Instrumentation" in on
    off = _probe(tmp_path, False)
    assert "shadowed yes" in off and "patched NoneType" in off
