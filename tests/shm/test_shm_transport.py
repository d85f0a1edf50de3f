"""Engine <-> client over a real segment: zero copy, lock-step, commands, peer death, cleanup."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time

import numpy as np
import pytest
from shm_engines import (
    command_spin_engine,
    echo_engine,
    failing_engine,
    spec_engine,
    stalling_engine,
)

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.segment import segment_exists, unlink_segment
from mosaic_sdk.shm.sync import PeerGoneError, TransportClosedError, TransportError
from mosaic_sdk.shm.transport import SharedMemoryTransport
from tests.conftest import returns

ctx = mp.get_context("fork")


def start_engine(segments, target, *args):  # noqa: ANN001, ANN201
    name = segments.name()
    reader, writer = ctx.Pipe(duplex=False)
    proc = segments.track(ctx.Process(target=target, args=(name, writer, *args), daemon=True))
    proc.start()
    assert reader.poll(30), "engine did not start"
    kind, seg_name = reader.recv()
    assert (kind, seg_name) == ("ready", name)
    return name, proc, reader


def test_client_views_are_the_segment_itself(segments) -> None:
    """Zero copy: the client's arrays start at segment base + region offset."""
    with SharedMemoryTransport(16, 5, 3, name=segments.name(), image_shape=(4, 4, 3)) as t:
        client = SharedMemoryClient(t.name)
        try:
            lay = client.layout
            base = client.base_address
            assert client.obs.ctypes.data == base + lay.obs_offset
            assert client.actions.ctypes.data == base + lay.act_offset
            assert client.rewards.ctypes.data == base + lay.rewards_offset
            assert client.dones.ctypes.data == base + lay.terminated_offset
            assert client.truncated.ctypes.data == base + lay.truncated_offset
            assert client.resets.ctypes.data == base + lay.resets_offset
            assert client.image.ctypes.data == base + lay.image_offset
            assert client.obs.shape == (16, 5) and client.obs.dtype == np.float32
            # a write by the engine is visible with no call at all: same physical memory
            t.obs[3, 2] = 42.5
            t.image[1, 2, 3, 0] = 7
            assert client.obs[3, 2] == 42.5 and client.image[1, 2, 3, 0] == 7
            client.actions[2] = [1, 2, 3]
            assert list(t.actions[2]) == [1, 2, 3]
            assert t.client_pid == os.getpid()
        finally:
            client.close()
        assert t.client_pid == 0
    assert not segment_exists(t.name)


def test_lock_step_100k_steps_none_missed_or_doubled(segments) -> None:
    name, proc, report = start_engine(segments, echo_engine)
    client = SharedMemoryClient(name, timeout=30)
    steps = 100_000
    bad = 0
    for i in range(1, steps + 1):
        client.actions[:, 0] = i
        obs, rewards, _, _ = client.step()
        bad += int(obs[0, 0] != i) + int(obs[-1, 1] != i) + int(rewards[1] != i)
    assert bad == 0
    assert client.frame_seq == steps
    client.close(shutdown_engine=True)
    proc.join(10)
    assert report.recv() == ("done", steps, 0)
    assert proc.exitcode == 0
    assert not segment_exists(name)


def test_step_takes_an_action_array_and_checks_its_size(segments) -> None:
    name, proc, _ = start_engine(segments, echo_engine)
    with SharedMemoryClient(name, timeout=30) as client:
        obs, *_ = client.step(np.full((4, 2), 1.0))
        assert obs[2, 1] == 1.0
        with pytest.raises(ValueError, match="4 envs x 2"):
            client.step(np.zeros(3))
        client.close(shutdown_engine=True)
    proc.join(10)


def test_commands_ping_schema_and_engine_errors(segments) -> None:
    name, proc, _ = start_engine(segments, failing_engine)
    client = SharedMemoryClient(name, timeout=30)
    assert client.ping(77) == cmd.PingResponse(nonce=77, frame_seq=0)
    client.step()
    assert client.ping(78).frame_seq == 1
    with pytest.raises(ValueError, match="no such scene"):  # the engine's own exception type
        client.reset(seeds=1)
    with pytest.raises(NotImplementedError, match="does not serve GetSchemaRequest"):
        client.get_schema()
    with pytest.raises(ValueError, match="outside 0..1"):
        client.reset(env_ids=[5])
    client.close(shutdown_engine=True)
    proc.join(10)
    assert proc.exitcode == 0


def test_an_oversized_command_is_refused_to_its_sender_and_serving_goes_on(segments) -> None:
    """Fragments past the reader's bound are answered with an error at once (not kept), and
    the commands after the refused one are served."""
    with SharedMemoryTransport(2, 3, 1, name=segments.name()) as t:
        client = SharedMemoryClient(t.name)
        try:
            t.seg.c2e.max_message = 4096
            ring, replies = client._seg.c2e, client._seg.e2c
            big = cmd.encode(cmd.CallRequest(name="x", args_pickle=b"a" * 10_000), 77)
            for begin in range(0, len(big), 1000):
                assert ring.try_write(big[begin : begin + 1000], begin + 1000 < len(big))
                t.serve_commands()
            refused = cmd.decode(replies.try_read())
            assert refused.correlation_id == 77 and "larger than 4096 bytes" in refused.error
            assert replies.try_read() is None  # answered once: the rest was dropped
            ring.write(cmd.encode(cmd.PingRequest(nonce=5), 78))
            assert t.serve_commands() == 1
            pong = cmd.decode(replies.try_read())
            assert pong.correlation_id == 78 and pong.message.nonce == 5
        finally:
            client.close()


@pytest.mark.parametrize("command_spin", [0.0, 5e-3])
def test_commands_between_steps_are_answered_whatever_the_command_spin(
    segments, command_spin
) -> None:
    """0: every command wait sleeps on the futex at once; 5 ms: it spins (for as long as the
    adaptive budget lets it) before sleeping. Either way each answer comes, in order."""
    name, proc, _ = start_engine(segments, command_spin_engine, command_spin)
    client = SharedMemoryClient(name, timeout=30, command_spin=command_spin)
    assert client.command_spin == command_spin
    for k in range(1, 301):
        assert client.ping(k) == cmd.PingResponse(nonce=k, frame_seq=k - 1)
        if k % 3 == 0:
            time.sleep(0.002)  # the engine's spin after a command runs out: it must sleep
        obs, *_ = client.step()
        assert obs[0, 0] == k
    client.close(shutdown_engine=True)
    proc.join(10)
    assert proc.exitcode == 0


def test_one_client_per_segment_and_name_from_environment(segments, monkeypatch) -> None:
    with SharedMemoryTransport(2, 2, 1, name=segments.name()) as t:
        monkeypatch.setenv("MOSAIC_SHM_NAME", t.name)
        with SharedMemoryClient() as first:
            assert first.name == t.name
            with pytest.raises(TransportError, match="already has a client"):
                SharedMemoryClient(t.name)
    monkeypatch.delenv("MOSAIC_SHM_NAME")
    with pytest.raises(ValueError, match="MOSAIC_SHM_NAME"):
        SharedMemoryClient()
    with pytest.raises(FileNotFoundError, match="start the engine first"):
        SharedMemoryClient(segments.name(), attach_timeout=0.05)


def test_names_get_the_mosaic_prefix_and_bad_names_are_refused(segments) -> None:
    name = segments.name().replace("mosaic.shm.", "")
    with SharedMemoryTransport(1, 1, 1, name=name) as t:
        assert t.name == "mosaic.shm." + name
        segments.names.append(t.name)
    with pytest.raises(ValueError, match="no '/'"):
        SharedMemoryTransport(1, 1, 1, name="a/b")


def test_engine_death_is_detected(segments) -> None:
    name, proc, _ = start_engine(segments, stalling_engine)
    client = SharedMemoryClient(name)  # no timeout: only the pid check can end the wait
    threading.Timer(0.3, os.kill, (proc.pid, signal.SIGKILL)).start()
    with pytest.raises(PeerGoneError, match="engine process"):
        returns(client.step)  # a hang guard; how soon it raises is a benchmark's figure
    client.close()
    proc.join(5)
    # a SIGKILLed owner cannot unlink: that is the launcher's duty (here, the test's)
    assert segment_exists(name) and unlink_segment(name)


def _client_then_hang(name: str) -> None:
    client = SharedMemoryClient(name)
    client.step()
    time.sleep(60)


def test_client_death_is_detected_by_the_engine(segments) -> None:
    with SharedMemoryTransport(2, 2, 1, name=segments.name()) as t:
        proc = segments.track(ctx.Process(target=_client_then_hang, args=(t.name,), daemon=True))
        proc.start()
        assert t.wait_for_actions(timeout=30) == 1
        t.publish_frame(1)
        threading.Timer(0.3, os.kill, (proc.pid, signal.SIGKILL)).start()
        with pytest.raises(PeerGoneError, match="client process"):
            returns(t.wait_for_actions)  # a hang guard, not a measure
        proc.join(5)


def test_timeout_applies_when_the_peer_lives_but_stalls(segments) -> None:
    with SharedMemoryTransport(2, 2, 1, name=segments.name()) as t:
        with SharedMemoryClient(t.name, timeout=0.2) as client:
            with pytest.raises(TimeoutError, match="timeout"):
                client.step()
            assert t.wait_for_actions() == 1  # the batch published before the timeout
            t.publish_frame(1)
            with pytest.raises(TimeoutError):
                client.step()  # batch 2 (not batch 1 again), the engine is not stepping
            assert t.wait_for_actions(timeout=5) == 2
            t.publish_frame(2)
            assert client.frame_seq == 2
        with pytest.raises(TimeoutError):
            t.wait_for_actions(timeout=0.1)


def test_closing_the_engine_wakes_a_waiting_client(segments) -> None:
    t = SharedMemoryTransport(2, 2, 1, name=segments.name())
    client = SharedMemoryClient(t.name)
    closer = threading.Timer(0.2, t.close)
    closer.start()
    with pytest.raises(TransportClosedError, match="closed by its engine"):
        client.step()
    client.close()
    closer.join()  # close() flags the segment, wakes the client, then unlinks: let it finish
    assert not segment_exists(t.name)


def test_python_atomics_fallback_runs_the_same_protocol(segments) -> None:
    """MOSAIC_ATOMICS=python (no futex) still steps in lock-step (x86 only)."""
    import subprocess
    import sys
    import textwrap

    name = segments.name()
    code = textwrap.dedent(
        f"""
        import multiprocessing as mp, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from shm_engines import echo_engine
        from mosaic_sdk.shm import atomics
        from mosaic_sdk.shm.client import SharedMemoryClient
        assert atomics.IMPLEMENTATION == "python"
        ctx = mp.get_context("fork")
        r, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=echo_engine, args=({name!r}, w)); p.start()
        r.recv()
        c = SharedMemoryClient({name!r}, timeout=30)
        for i in range(1, 2001):
            c.actions[:, 0] = i
            assert c.step()[0][0, 1] == i
        c.close(shutdown_engine=True); p.join(10)
        print(r.recv())
        """
    )
    env = dict(os.environ, MOSAIC_ATOMICS="python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "('done', 2000, 0)" in out.stdout


def test_shm_vector_env_drives_an_engine_that_only_sends_wire_specs(segments) -> None:
    """A non-Python engine sends SpaceSpecs, not pickles; attach rebuilds the spaces."""
    import gymnasium as gym

    from mosaic_sdk.shm.vector_env import ShmVectorEnv

    name, proc, _ = start_engine(segments, spec_engine)
    envs = ShmVectorEnv.attach(name, timeout=30)
    try:
        assert envs.single_action_space == gym.spaces.Discrete(3)
        assert envs.single_observation_space == gym.spaces.Box(-10, 10, (2,), np.float32)
        obs, _ = envs.reset()
        assert obs.tolist() == [[0.0, 0.0], [0.0, 0.0]]
        obs, rewards, *_ = envs.step(np.array([2, 1]))
        assert obs[:, 0].tolist() == [2.0, 1.0] and rewards.tolist() == [2.0, 1.0]
    finally:
        envs.client.close(shutdown_engine=True)
        envs.close()
    proc.join(10)
