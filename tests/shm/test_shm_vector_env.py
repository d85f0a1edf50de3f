"""ShmVectorEnv and the env host against gymnasium's own vector envs."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import numpy as np
import pytest

from mosaic_sdk.shm import inline
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.host import launch_env_host
from mosaic_sdk.shm.processes import cpus
from mosaic_sdk.shm.segment import segment_exists
from mosaic_sdk.shm.sync import PeerGoneError, PeerWatch
from mosaic_sdk.shm.vector_env import ShmVectorEnv
from tests.shm.gym_envs import lifetime


def cartpoles(n: int, **kwargs):  # noqa: ANN201
    return [lambda: gym.make("CartPole-v1", **kwargs) for _ in range(n)]


@pytest.mark.parametrize("num_workers", [1, 2])
def test_same_trajectories_as_sync_vector_env(segments, num_workers: int) -> None:
    """8 CartPoles, 1,000 seeded steps: identical obs, rewards, terminations, truncations."""
    shm = ShmVectorEnv(cartpoles(8), num_workers=num_workers, name=segments.name())
    ref = gym.vector.SyncVectorEnv(cartpoles(8))
    try:
        assert shm.single_observation_space == ref.single_observation_space
        assert shm.single_action_space == ref.single_action_space
        assert shm.observation_space == ref.observation_space
        assert shm.action_space == ref.action_space
        assert shm.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"]
        obs, infos = shm.reset(seed=123)
        ref_obs, ref_infos = ref.reset(seed=123)
        np.testing.assert_array_equal(obs, ref_obs)
        assert infos == ref_infos
        rng = np.random.default_rng(7)
        dones = 0
        for _ in range(1000):
            actions = rng.integers(0, 2, size=8)
            got = shm.step(actions)
            want = ref.step(actions)
            for g, w in zip(got[:4], want[:4], strict=True):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)
            dones += int(want[2].sum() + want[3].sum())
        assert dones > 0, "the run should have crossed episode ends (autoreset path)"
    finally:
        shm.close()
        ref.close()
    assert not segment_exists(shm.schema and segments.names[-1])


def test_seeded_reset_through_the_command_channel_matches_gymnasium(segments) -> None:
    handle = launch_env_host("CartPole-v1", num_envs=4, num_workers=2, name=segments.name())
    try:
        client = SharedMemoryClient(handle.name, timeout=30)
        obs, infos = client.reset(seeds=[10, 11, 12, 13])
        for i, seed in enumerate([10, 11, 12, 13]):
            want, info = gym.make("CartPole-v1").reset(seed=seed)
            np.testing.assert_array_equal(obs[i], want)
            assert infos[i] == info
        obs, _ = client.reset(env_ids=[2], seeds=[99])
        np.testing.assert_array_equal(obs[2], gym.make("CartPole-v1").reset(seed=99)[0])
        np.testing.assert_array_equal(obs[3], gym.make("CartPole-v1").reset(seed=13)[0])
        schema = client.get_schema()
        assert (schema.num_envs, schema.obs_size, schema.act_size) == (4, 4, 2)  # int64 action
        assert schema.env_id == "CartPole-v1" and schema.num_workers == 2
        assert schema.action_space.kind == "Discrete" and schema.action_space.n == 2
        client.close(shutdown_engine=True)
    finally:
        handle.close()
    assert all(p.exitcode == 0 for p in handle.processes)
    assert not segment_exists(handle.name)


def test_reset_flags_reset_envs_on_the_next_step(segments) -> None:
    handle = launch_env_host(cartpoles(2), name=segments.name())
    try:
        with SharedMemoryClient(handle.name, timeout=30) as client:
            client.reset(seeds=[1, 2])
            client.actions.view(np.int64)[:, 0] = 1  # Discrete actions travel as int64
            client.step()
            client.resets[1] = 1
            obs, rewards, terminated, truncated = client.step()
            assert rewards[1] == 0.0 and rewards[0] == 1.0
            assert client.resets[1] == 0, "the engine clears the flag it honoured"
            assert gym.spaces.Box(-0.05, 0.05, (4,)).contains(obs[1].copy())
            client.close(shutdown_engine=True)
    finally:
        handle.close()


def test_reset_mask_and_attach_to_a_running_engine(segments) -> None:
    handle = launch_env_host("CartPole-v1", num_envs=3, name=segments.name())
    try:
        envs = ShmVectorEnv.attach(handle.name, timeout=30)
        obs, _ = envs.reset(seed=[5, 6, 7])
        mask = np.array([False, True, False])
        obs2, _ = envs.reset(seed=[None, 50, None], options={"reset_mask": mask})
        np.testing.assert_array_equal(obs2[1], gym.make("CartPole-v1").reset(seed=50)[0])
        np.testing.assert_array_equal(obs2[[0, 2]], obs[[0, 2]])
        envs.close()  # attached: detaches, the engine keeps running
        assert handle.alive()
        client = SharedMemoryClient(handle.name, timeout=30)
        client.close(shutdown_engine=True)
    finally:
        handle.close()
    assert not segment_exists(handle.name)


class Painter(gym.Env):
    """Renders a random-but-seeded 12x16 RGB picture that changes with every step."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    observation_space = gym.spaces.Box(0, 255, (3,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, render_mode: str | None = "rgb_array") -> None:
        self.render_mode = render_mode
        self.frame = np.zeros((12, 16, 3), np.uint8)

    def reset(self, *, seed=None, options=None):  # noqa: ANN001, ANN201
        super().reset(seed=seed)
        self.frame = self.np_random.integers(0, 256, (12, 16, 3), dtype=np.uint8)
        return self.frame[0, 0].astype(np.float32), {}

    def step(self, action):  # noqa: ANN001, ANN201
        self.frame = np.roll(self.frame, int(action) + 1, axis=1)
        self.frame[int(action)] = self.np_random.integers(0, 256, (16, 3), dtype=np.uint8)
        return self.frame[0, 0].astype(np.float32), 0.0, False, False, {}

    def render(self):  # noqa: ANN201
        return self.frame.copy()


def test_image_region_holds_what_render_returns(segments) -> None:
    shm = ShmVectorEnv([Painter] * 3, render_images=True, name=segments.name())
    ref = gym.vector.SyncVectorEnv([Painter] * 3)
    try:
        assert shm.render_mode == "rgb_array"
        assert shm.schema.image == (12, 16, 3)
        shm.reset(seed=3)
        ref.reset(seed=3)
        for step in range(5):
            frames, want = shm.render(), ref.render()
            assert len(frames) == 3
            for got, expected in zip(frames, want, strict=True):
                assert got.shape == expected.shape == (12, 16, 3)
                np.testing.assert_array_equal(got, expected)
            actions = np.array([step % 3, 1, 2])
            shm.step(actions)
            ref.step(actions)
        zero_copy = shm.client.image
        assert zero_copy.ctypes.data == shm.client.base_address + shm.client.layout.image_offset
    finally:
        shm.close()
        ref.close()


def test_launcher_unlinks_after_the_host_is_sigkilled(segments) -> None:
    handle = launch_env_host(cartpoles(2), num_workers=2, name=segments.name())
    client = SharedMemoryClient(handle.name, timeout=30)
    os.kill(handle.pids[0], signal.SIGKILL)
    with pytest.raises(PeerGoneError):
        client.actions.view(np.int64)[:, 0] = 0
        client.step()
    client.close()
    assert segment_exists(handle.name)
    handle.close()
    assert not segment_exists(handle.name)
    assert not handle.alive()


def test_env_errors_reach_the_trainer(segments) -> None:
    class Exploding(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (2,))
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):  # noqa: ANN001, ANN201
            super().reset(seed=seed)
            return np.zeros(2, np.float32), {}

        def step(self, action):  # noqa: ANN001, ANN201
            raise RuntimeError("physics exploded")

    envs = ShmVectorEnv([Exploding, Exploding], name=segments.name(), timeout=30)
    try:
        envs.reset()
        with pytest.raises(RuntimeError, match="physics exploded"):
            envs.step(np.zeros(2, dtype=np.int64))
    finally:
        envs.close()


def test_bad_arguments_are_refused(segments) -> None:
    with pytest.raises(ValueError, match="start method"):
        launch_env_host(cartpoles(2), context="threads", name=segments.name())
    with pytest.raises(ValueError, match="num_envs"):
        launch_env_host("CartPole-v1")
    with pytest.raises(ValueError, match="num_workers"):
        launch_env_host(cartpoles(2), num_workers=3)


def test_spawned_hosts_run_lambdas_shipped_with_cloudpickle(segments) -> None:
    limit = 2  # captured by the lambdas: it reaches the spawned host only through cloudpickle
    fns = [lambda: gym.make("CartPole-v1", max_episode_steps=limit) for _ in range(2)]
    envs = ShmVectorEnv(fns, name=segments.name(), context="spawn", timeout=60)
    try:
        envs.reset(seed=0)
        _, _, _, truncations, _ = envs.step(np.zeros(2, dtype=np.int64))
        assert not truncations.any()
        _, _, terminations, truncations, _ = envs.step(np.zeros(2, dtype=np.int64))
        assert truncations.all() and not terminations.any()
    finally:
        envs.close()


def test_importing_the_package_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, mosaic_sdk.shm, mosaic_sdk.shm.atomics; "
        "print(sorted(m for m in ('numpy', 'flatbuffers', 'gymnasium') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_hosts_clean_up_when_the_trainer_is_sigkilled(segments) -> None:
    """The hosts watch their launcher: a SIGKILLed trainer leaves no segment, no process."""
    import subprocess
    import sys
    import time

    name = segments.name()
    code = (
        "import gymnasium as gym, os\n"
        "from mosaic_sdk.shm import ShmVectorEnv\n"
        f"e = ShmVectorEnv([lambda: gym.make('CartPole-v1')] * 4, num_workers=2, name={name!r})\n"
        "e.reset(seed=0)\n"
        "print(*e._host.pids, flush=True)\n"
        "while True:\n"
        "    e.step(e.action_space.sample())\n"
    )
    trainer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        host_pids = [int(p) for p in trainer.stdout.readline().split()]
        assert len(host_pids) == 2 and segment_exists(name)
    finally:
        os.kill(trainer.pid, signal.SIGKILL)
        trainer.wait()
        trainer.stdout.close()
    deadline = time.monotonic() + 10
    while segment_exists(name) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not segment_exists(name)
    for pid in host_pids:
        watch = PeerWatch(pid)  # an exited, not yet reaped orphan counts as gone
        while watch.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not watch.alive(), f"host {pid} outlived its trainer"
        watch.close()


def test_sigterm_to_the_trainers_process_group_leaves_no_segment(segments) -> None:
    """``mosaic run`` (and service managers) SIGTERM the worker's whole process group, so the
    hosts get SIGTERM at the same moment as the trainer: worker 0 must still unlink."""
    import subprocess
    import sys
    import time

    name = segments.name()
    code = (
        "import gymnasium as gym, os\n"
        "from mosaic_sdk.shm import ShmVectorEnv\n"
        f"e = ShmVectorEnv([lambda: gym.make('CartPole-v1')] * 4, num_workers=2, name={name!r})\n"
        "e.reset(seed=0)\n"
        "print(*e._host.pids, flush=True)\n"
        "while True:\n"
        "    e.step(e.action_space.sample())\n"
    )
    trainer = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        host_pids = [int(p) for p in trainer.stdout.readline().split()]
        assert len(host_pids) == 2 and segment_exists(name)
        os.killpg(trainer.pid, signal.SIGTERM)
        trainer.wait(timeout=30)
    finally:
        if trainer.poll() is None:
            os.killpg(trainer.pid, signal.SIGKILL)
            trainer.wait()
        trainer.stdout.close()
    deadline = time.monotonic() + 10
    while segment_exists(name) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not segment_exists(name), "the segment outlived a SIGTERM to the process group"
    for pid in host_pids:
        watch = PeerWatch(pid)
        while watch.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not watch.alive(), f"host {pid} outlived the SIGTERM"
        watch.close()


@pytest.mark.parametrize(
    ("start", "size"),
    [(0, 160), (320, 4096 - 320), (0, 4096)],
    ids=["static-header", "sync-words", "whole-header"],
)
def test_an_overwritten_header_is_a_corruption_error_at_once(segments, start, size) -> None:
    """Another process writes garbage into a live segment: the trainer's next steps raise
    SegmentCorruptedError naming what changed, instead of stepping on garbage (before: it kept
    stepping with a far-ahead frame_seq, or got a raw OverflowError from a host 11-15 s later)."""
    import random
    import subprocess
    import sys

    name = segments.name()
    code = (
        "import gymnasium as gym, sys\n"
        "from mosaic_sdk.shm import ShmVectorEnv, SegmentCorruptedError\n"
        f"e = ShmVectorEnv([lambda: gym.make('CartPole-v1')] * 4, num_workers=2, name={name!r})\n"
        "e.reset(seed=0)\n"
        "print('ready', flush=True)\n"
        "steps = 0\n"
        "try:\n"
        "    while True:\n"
        "        e.step(e.action_space.sample()); steps += 1\n"
        "except SegmentCorruptedError as exc:\n"
        "    print('corrupt', steps, exc, flush=True)\n"
        "    e.close()\n"
    )
    trainer = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert trainer.stdout.readline().strip() == "ready"
        fd = os.open(f"/dev/shm/{name}", os.O_RDWR)
        try:
            noise = random.Random(size).randbytes(size)
            os.pwrite(fd, noise, start)
        finally:
            os.close(fd)
        line = trainer.stdout.readline()
        trainer.wait(timeout=60)
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
        trainer.stdout.close()
    assert line.startswith("corrupt "), line
    assert f"shm transport {name!r} is corrupt" in line and "start a new one" in line
    if start == 0:
        assert "its header changed under this process (magic, version" in line


def _children() -> set[int]:
    """Pids of this process's live children."""
    pids: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            pids.update(int(p) for p in f.read().split())
    return pids


def _shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm"))


@pytest.fixture
def always_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mode="auto"`` races the two modes whatever one env's step costs."""
    monkeypatch.setattr(inline, "RACE_BETWEEN", (0.0, float("inf")))


@pytest.mark.skipif(cpus() < 2, reason="host processes cannot gain on one CPU")
@pytest.mark.timeout(120)
def test_auto_races_the_modes_and_picks_processes_for_envs_that_sleep(always_race) -> None:
    """4 envs that sleep 2 ms a step: two host processes halve the wait, whatever the load."""
    envs = ShmVectorEnv([lifetime(0.002) for _ in range(4)])
    try:
        choice = envs.auto_choice
        assert choice is not None and choice.rates is not None, choice
        assert set(choice.rates) == {"inline", "process"}
        assert envs.mode == choice.mode == "process", choice
        assert "measured" in choice.reason and "host processes" in choice.reason
        assert segment_exists(envs.segment_name)
        obs, _ = envs.reset(seed=5)
        # throwaway copies were raced: these envs were never reset or stepped before
        np.testing.assert_array_equal(obs, [[0, 1]] * 4)
        np.testing.assert_array_equal(envs.step(np.zeros(4, np.int64))[0], [[1, 1]] * 4)
    finally:
        name = envs.segment_name
        envs.close()
    assert not segment_exists(name)


@pytest.mark.timeout(120)
def test_auto_race_picks_inline_for_few_cheap_envs_and_leaves_nothing_behind(
    always_race,
) -> None:
    """2 envs that do no work: a cross-process wake costs more than they do. The raced host
    processes and their segment are gone; what the trainer sees is a fresh, seeded env."""
    shm_before, children_before = _shm_entries(), _children()
    envs = ShmVectorEnv([lifetime() for _ in range(2)])
    try:
        choice = envs.auto_choice
        assert choice is not None and choice.rates is not None, choice
        assert envs.mode == choice.mode == "inline", choice
        assert envs.segment_name is None
        assert _shm_entries() <= shm_before
        assert _children() <= children_before
        obs, _ = envs.reset(seed=9)
        np.testing.assert_array_equal(obs, [[0, 1]] * 2)
        rewards = envs.step(np.zeros(2, np.int64))[1]
        ref = gym.vector.SyncVectorEnv([lifetime() for _ in range(2)])
        ref.reset(seed=9)
        np.testing.assert_array_equal(rewards, ref.step(np.zeros(2, np.int64))[1])
        ref.close()
    finally:
        envs.close()


def test_auto_without_a_race_when_the_choice_is_plain() -> None:
    """Two envs that do no work save far less than a wake costs: inline, not raced."""
    envs = ShmVectorEnv([lifetime() for _ in range(2)])
    try:
        assert envs.mode == "inline" and envs.auto_choice is not None
        assert envs.auto_choice.rates is None and envs.auto_choice.step_cost is not None
    finally:
        envs.close()
    asked = ShmVectorEnv([lifetime()], mode="inline")
    assert asked.auto_choice is None
    asked.close()


def test_a_failed_race_leaves_the_choice_to_the_threshold(always_race) -> None:
    """A race that cannot run (a throwaway env that fails) never fails the construction."""

    def broken_race() -> dict[str, float]:
        raise OSError("no host processes here")

    choice = inline.choose_mode("auto", [lifetime()], 8, 2, False, broken_race)
    assert choice.mode == "inline" and choice.rates is None
    assert "the race failed: OSError('no host processes here')" in choice.reason
