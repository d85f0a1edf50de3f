"""ShmVectorEnv's asynchronous form (send/recv with batch_size < num_envs) and its modes.

Every call that may wait for envs goes through :func:`guarded`: a hang guard, so that a recv()
waiting for more than its batch (envs behind a closed gate never finish) fails the test in
:data:`LIMIT` seconds instead of hanging the run.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.host import launch_env_host
from mosaic_sdk.shm.segment import segment_exists
from mosaic_sdk.shm.vector_env import ShmVectorEnv
from mosaic_sdk.shm.vector_rules import AsyncUsageError
from tests.conftest import returns
from tests.shm.gym_envs import GatedEnv, cartpole, gated, slow

#: Seconds a guarded call may take before it counts as hung: each waits for envs that step in
#: milliseconds (or for a gate the test opens before it waits); a hang guard, not a measure.
LIMIT = 60.0


class Guarded:
    """``target`` whose every method call has a hang guard (``returns(call, LIMIT)``); other
    attributes are the target's own."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return returns(lambda: value(*args, **kwargs), LIMIT)

        return call


def guarded(target: Any) -> Any:
    """``target`` (a ShmVectorEnv, a client, its async slices) behind hang guards."""
    return Guarded(target)


class Direct:
    """One env stepped here, with ShmVectorEnv's NEXT_STEP rule: after an episode ends, the
    next step resets it (reward 0, not done) and ignores the action."""

    def __init__(self, env: gym.Env) -> None:
        self.env = env
        self.done = False

    def reset(self, seed: int | None = None) -> tuple:
        self.done = False
        return self.env.reset(seed=seed)

    def step(self, action: Any) -> tuple:
        if self.done:
            self.done = False
            obs, info = self.env.reset()
            return obs, 0.0, False, False, info
        obs, reward, term, trunc, info = self.env.step(action)
        self.done = bool(term or trunc)
        return obs, reward, term, trunc, info


def check_rows(got: tuple, ids: list[int], refs: dict[int, Direct], actions: dict) -> None:
    """Every returned row equals what stepping env ``i`` directly with its action gives."""
    obs, rewards, terms, truncs, infos = got
    for row, i in enumerate(ids):
        want_obs, want_r, want_term, want_trunc, want_info = refs[i].step(actions[i])
        np.testing.assert_array_equal(obs[row], want_obs)
        assert rewards[row] == want_r
        assert bool(terms[row]) == want_term and bool(truncs[row]) == want_trunc
        for key, value in want_info.items():
            assert infos[f"_{key}"][row] and infos[key][row] == value
    assert rewards.dtype == np.float64 and terms.dtype == np.bool_


@pytest.mark.parametrize("mode", ["process", "inline"])
def test_recv_returns_the_envs_that_finished_with_their_ids_and_data(
    segments, tmp_path, mode: str
) -> None:
    """Envs 0-3 block until their gate opens: recv() returns envs 4-7 (process mode), each
    row equal to stepping that env directly; then 0-3 once they can finish."""
    gate = str(tmp_path / "open")
    fns = [gated(i, gate if i < 4 else None) for i in range(8)]
    kwargs = {"name": segments.name()} if mode == "process" else {}
    envs = guarded(ShmVectorEnv(fns, batch_size=4, mode=mode, **kwargs))
    refs = {i: Direct(GatedEnv(i)) for i in range(8)}
    try:
        assert envs.mode == mode and envs.batch_size == 4
        obs, infos = envs.reset(seed=5)
        for i in range(8):
            want, info = refs[i].reset(seed=5 + i)
            np.testing.assert_array_equal(obs[i], want)
        if mode == "inline":
            open(gate, "w").close()  # in this process a closed gate would block send order
        actions = {i: i % 3 for i in range(8)}
        envs.send(np.array([actions[i] for i in range(8)]), np.arange(8))
        first = envs.recv()
        ids = first[4]["env_id"].tolist()
        if mode == "process":
            assert sorted(ids) == [4, 5, 6, 7]  # 0-3 cannot have finished
            open(gate, "w").close()
        else:
            assert ids == [0, 1, 2, 3]  # in this process: the order they were sent
        check_rows(first, ids, refs, actions)
        second = envs.recv()
        rest = second[4]["env_id"].tolist()
        assert sorted(ids + rest) == list(range(8))
        check_rows(second, rest, refs, actions)
        # keep going with uneven actions: episodes end, the next send resets those envs
        rng = np.random.default_rng(3)
        ends = 0
        envs.send(np.array([actions[i] for i in range(8)]), np.arange(8))
        for _ in range(40):
            got = envs.recv()
            got_ids = got[4]["env_id"].tolist()
            check_rows(got, got_ids, refs, actions)
            ends += int(got[2].sum())
            for i in got_ids:
                actions[i] = int(rng.integers(0, 3))
            envs.send(np.array([actions[i] for i in got_ids]), got[4]["env_id"])
        assert ends > 0, "episodes should have ended (autoreset path)"
    finally:
        open(gate, "w").close()
        envs.close()


@pytest.mark.parametrize("mode", ["process", "inline"])
def test_every_env_is_served(segments, mode: str) -> None:
    """Envs 0-1 are slow, 2-7 fast; recv/send goes on until every env came back 3 times,
    and after a drain each env came back exactly as often as it was sent."""
    fns = [slow(i, 0.003 if i < 2 else 0.0) for i in range(8)]
    kwargs = {"name": segments.name()} if mode == "process" else {}
    envs = guarded(ShmVectorEnv(fns, batch_size=2, mode=mode, **kwargs))
    try:
        sent = np.zeros(8, int)
        served = np.zeros(8, int)
        envs.reset(seed=0)
        envs.send(np.zeros(8, np.int64), np.arange(8))
        sent += 1
        deadline = time.monotonic() + 60
        while served.min() < 3 and time.monotonic() < deadline:
            ids = envs.recv()[4]["env_id"]
            served[ids] += 1
            envs.send(np.zeros(len(ids), np.int64), ids)
            sent[ids] += 1
        assert served.min() >= 3, f"envs starved: served {served.tolist()}"
        for _ in range(4):  # 8 envs in flight, 2 per recv
            served[envs.recv()[4]["env_id"]] += 1
        np.testing.assert_array_equal(served, sent)
        with pytest.raises(AsyncUsageError, match="no env stepping"):
            envs.recv()
    finally:
        envs.close()


def row_info(infos: dict, row: int) -> dict:
    """The info dict of one row of vector infos: only the keys that row has."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_") or not infos[f"_{key}"][row]:
            continue
        item = row_info(value, row) if isinstance(value, dict) else value[row]
        out[key] = item.tolist() if isinstance(item, np.ndarray) else item
    return out


def trajectories(envs: Any, steps: int) -> dict[int, list]:
    """Per env: (obs, reward, term, trunc, infos) of each recv, actions a function of the
    env's own history, so the modes may interleave envs differently. Runs until every env has
    ``steps`` of them (whichever envs a loaded machine serves first), at most 100x that."""
    out: dict[int, list] = {i: [] for i in range(envs.num_envs)}
    envs.async_reset(seed=11)
    for _ in range(100 * steps * envs.num_envs):
        if min(map(len, out.values())) >= steps:
            break
        obs, rewards, terms, truncs, infos = envs.recv()
        ids = infos["env_id"].tolist()
        for row, i in enumerate(ids):
            info = row_info({k: v for k, v in infos.items() if k != "env_id"}, row)
            step = [obs[row].tolist(), float(rewards[row]), bool(terms[row]), bool(truncs[row])]
            out[i].append([*step, repr(info)])
        envs.send(np.array([len(out[i]) % 2 for i in ids]), infos["env_id"])
    return out


@pytest.mark.parametrize("autoreset_mode", ["NextStep", "SameStep"])
def test_inline_and_process_modes_give_the_same_results(segments, autoreset_mode: str) -> None:
    fns = [cartpole(i, max_steps=30) for i in range(4)]
    runs = {}
    for mode in ("inline", "process"):
        kwargs = {"name": segments.name()} if mode == "process" else {}
        envs = guarded(
            ShmVectorEnv(fns, batch_size=2, mode=mode, autoreset_mode=autoreset_mode, **kwargs)
        )
        try:
            runs[mode] = trajectories(envs, 40)
        finally:
            envs.close()
    ends = 0
    for i in range(4):
        inline, process = runs["inline"][i], runs["process"][i]
        common = min(len(inline), len(process))
        assert common >= 40
        assert inline[:common] == process[:common]
        ends += sum(step[2] or step[3] for step in inline)
    assert ends > 0


def same_infos(a: dict, b: dict) -> bool:
    """Vector infos equal key by key (nested dicts, arrays of any dtype)."""
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        if isinstance(value, dict):
            if not same_infos(value, b[key]):
                return False
        elif not (np.shape(value) == np.shape(b[key]) and np.array_equal(value, b[key])):
            return False
    return True


def test_lockstep_step_is_the_same_inline_process_and_sync(segments) -> None:
    fns = [cartpole(i, max_steps=40) for i in range(4)]
    inline = guarded(ShmVectorEnv(fns, mode="inline"))
    process = guarded(ShmVectorEnv(fns, mode="process", name=segments.name()))
    ref = gym.vector.SyncVectorEnv(fns)
    try:
        results = [e.reset(seed=9) for e in (inline, process, ref)]
        for r in results[1:]:
            np.testing.assert_array_equal(r[0], results[0][0])
        for _ in range(120):
            actions = inline.action_space.sample()
            process.action_space.sample()
            assert np.array_equal(actions, ref.action_space.sample())
            got = [e.step(actions) for e in (inline, process, ref)]
            for other in got[1:]:
                for a, b in zip(got[0][:4], other[:4], strict=True):
                    assert a.dtype == b.dtype
                    np.testing.assert_array_equal(a, b)
                assert same_infos(got[0][4], other[4])
    finally:
        inline.close()
        process.close()
        ref.close()


def test_misuse_is_refused_with_what_to_do(segments) -> None:
    with pytest.raises(ValueError, match="batch_size=9 must be in 1..num_envs=8"):
        ShmVectorEnv([gated(i) for i in range(8)], batch_size=9, mode="inline")
    with pytest.raises(ValueError, match="batch_size=0"):
        ShmVectorEnv([gated(i) for i in range(8)], batch_size=0, mode="inline")
    with pytest.raises(ValueError, match="not a multiple of the 4 envs"):
        ShmVectorEnv([gated(i) for i in range(8)], batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match="mode='fast' is not one of"):
        ShmVectorEnv([gated(i) for i in range(8)], mode="fast")
    envs = guarded(
        ShmVectorEnv(
            [gated(i) for i in range(8)], batch_size=4, num_workers=4, name=segments.name()
        )
    )
    try:
        with pytest.raises(AsyncUsageError, match="call reset"):
            envs.send(np.zeros(4, np.int64), [0, 1, 2, 3])
        envs.reset(seed=0)
        with pytest.raises(AsyncUsageError, match="no env stepping"):
            envs.recv()
        with pytest.raises(AsyncUsageError, match=r"steps envs 0..1 together"):
            envs.send(np.zeros(1, np.int64), [0])
        with pytest.raises(ValueError, match="outside 0..7"):
            envs.send(np.zeros(2, np.int64), [8, 9])
        with pytest.raises(ValueError, match="repeat an id"):
            envs.send(np.zeros(2, np.int64), [2, 2])
        with pytest.raises(ValueError, match="for 4 env ids"):
            envs.send(np.zeros(3, np.int64), [0, 1, 2, 3])
        envs.send(np.zeros(4, np.int64), [0, 1, 2, 3])
        with pytest.raises(AsyncUsageError, match=r"env ids \[0, 1\] that are still stepping"):
            envs.send(np.zeros(2, np.int64), [0, 1])
        with pytest.raises(AsyncUsageError, match="still owed to recv"):
            envs.step(np.zeros(8, np.int64))
        assert sorted(envs.recv()[4]["env_id"].tolist()) == [0, 1, 2, 3]
        envs.send(np.ones(4, np.int64))  # default: the ids recv() returned
        obs, *_ = envs.reset(seed=1)  # waits for those, then resets every env
        np.testing.assert_array_equal(obs[:, 1], 0)
        obs, rewards, *_ = envs.step(np.zeros(8, np.int64))  # lock-step still works
        np.testing.assert_array_equal(obs[:, 1], 1)
    finally:
        envs.close()


def test_lockstep_engine_takes_whole_batches_only(segments) -> None:
    envs = guarded(ShmVectorEnv([gated(i) for i in range(4)], mode="process", name=segments.name()))
    try:
        envs.reset(seed=0)
        with pytest.raises(AsyncUsageError, match="send every env"):
            envs.send(np.zeros(2, np.int64), [0, 1])
        envs.send(np.zeros(4, np.int64), [3, 2, 1, 0])
        obs, rewards, *_, infos = envs.recv()
        assert infos["env_id"].tolist() == [0, 1, 2, 3]
        np.testing.assert_array_equal(rewards, [0.5, 1.5, 2.5, 3.5])
    finally:
        envs.close()


def test_async_reset_then_recv_returns_the_reset_observations() -> None:
    envs = guarded(ShmVectorEnv([gated(i) for i in range(6)], batch_size=3, mode="inline"))
    try:
        envs.async_reset(seed=0)
        obs, rewards, terms, truncs, infos = envs.recv()
        assert infos["env_id"].tolist() == [0, 1, 2]
        np.testing.assert_array_equal(obs[:, 0], [0, 1, 2])
        np.testing.assert_array_equal(rewards, 0)
        assert infos["reset_of"].tolist() == [0, 1, 2]
        assert envs.recv()[4]["env_id"].tolist() == [3, 4, 5]
    finally:
        envs.close()


def test_auto_mode_steps_cheap_envs_inline_and_slow_ones_in_processes() -> None:
    cheap = guarded(ShmVectorEnv([gated(i) for i in range(8)]))
    try:
        assert cheap.mode == "inline" and cheap.segment_name is None
        assert cheap.step_cost is not None and cheap.step_cost < 1e-3
        with pytest.raises(RuntimeError, match="mode='process' to get one"):
            cheap.client  # noqa: B018
    finally:
        cheap.close()
    costly = guarded(ShmVectorEnv([slow(i, 0.005) for i in range(8)], batch_size=4))
    try:
        assert costly.mode == "process" and costly.step_cost >= 0.005
        assert segment_exists(costly.segment_name)
    finally:
        name = costly.segment_name
        costly.close()
    assert not segment_exists(name)


def test_a_killed_worker_is_reported_and_the_segment_removed(segments, tmp_path) -> None:
    gate = str(tmp_path / "never")
    fns = [gated(i, gate if i == 5 else None) for i in range(8)]
    envs = guarded(ShmVectorEnv(fns, batch_size=4, num_workers=4, name=segments.name()))
    name = envs.segment_name
    try:
        envs.reset(seed=0)
        envs.send(np.zeros(8, np.int64), np.arange(8))
        first = envs.recv()[4]["env_id"].tolist()
        assert 4 not in first and 5 not in first  # worker 2 (envs 4-5) is stuck
        os.kill(envs._host.pids[2], signal.SIGKILL)
        with pytest.raises(Exception, match="exited|failed"):
            envs.recv()
    finally:
        envs.close()
    assert not segment_exists(name)


def test_the_raw_client_sends_and_receives_worker_slices(segments, tmp_path) -> None:
    gate = str(tmp_path / "open")
    fns = [gated(i, gate if i < 2 else None) for i in range(4)]
    host = launch_env_host(fns, num_workers=2, name=segments.name(), asynchronous=True)
    try:
        client = guarded(SharedMemoryClient(host.name, timeout=30))
        client.reset(seeds=0)
        pool = guarded(client.async_slices())
        assert pool.slices == [(0, 2), (2, 4)]
        client.actions.view("int64")[:, 0] = [0, 0, 1, 1]
        pool.send([0, 1])
        assert pool.wait(1) == [1]  # worker 0's envs wait for the gate
        np.testing.assert_array_equal(client.obs[2:4].view(np.float32)[:, :2], [[2, 2], [3, 2]])
        np.testing.assert_array_equal(client.rewards[2:4], [3.0, 4.0])
        with pytest.raises(RuntimeError, match="already has a request in flight"):
            pool.send([0])
        open(gate, "w").close()
        assert pool.wait(1) == [0]
        np.testing.assert_array_equal(client.rewards[0:2], [0.5, 1.5])
        pool.close()
        client.close(shutdown_engine=True)
    finally:
        open(gate, "w").close()
        host.close()
    assert not segment_exists(host.name)


def test_async_reset_of_a_mask_owes_only_those_envs() -> None:
    envs = guarded(ShmVectorEnv([gated(i) for i in range(4)], batch_size=2, mode="inline"))
    try:
        envs.async_reset(seed=0, options={"reset_mask": np.array([False, True, True, False])})
        assert envs.recv()[4]["env_id"].tolist() == [1, 2]
        with pytest.raises(AsyncUsageError, match="no env stepping"):
            envs.recv()
        envs.send(np.zeros(2, np.int64), [0, 3])  # never owed: idle since reset
        assert envs.recv()[4]["env_id"].tolist() == [0, 3]
    finally:
        envs.close()
