"""The MuJoCo engine against hostile clients, names and arguments: nothing one of them does
takes the engine down, deletes what the engine does not own or leaves a segment behind."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("mujoco") is None:
    pytest.skip("mujoco is not installed (the mujoco extra)", allow_module_level=True)

from mosaic_sdk.shm import commands as cmd  # noqa: E402
from mosaic_sdk.shm import services as sv  # noqa: E402
from mosaic_sdk.shm.client import SharedMemoryClient  # noqa: E402
from mosaic_sdk.shm.engines.launch import EngineHandle, launch_engine  # noqa: E402
from mosaic_sdk.shm.engines.mujoco_engine import MAX_COMMAND_STEPS, MujocoEngine  # noqa: E402
from mosaic_sdk.shm.ring import MAX_MESSAGE  # noqa: E402
from mosaic_sdk.shm.segment import (  # noqa: E402
    create_segment,
    segment_exists,
    unlink_segment,
)
from mosaic_sdk.shm.sync import PeerGoneError  # noqa: E402
from tests.conftest import returns  # noqa: E402

CLI = [sys.executable, "-m", "mosaic_sdk.cli", "engine", "mujoco"]


@pytest.fixture
def engine() -> Iterator[tuple[EngineHandle, SharedMemoryClient]]:
    handle = launch_engine(2, "reacher")
    client = SharedMemoryClient(handle.name, timeout=30)
    try:
        yield handle, client
    finally:
        client.close()
        handle.close(timeout=0.0)
        assert not segment_exists(handle.name), "the engine left its segment"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The CLI's stderr, checked to be one line and no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- 1. a refused engine deletes nothing it does not own -------------------------------------
def test_a_second_engine_of_a_taken_name_leaves_the_running_one_alone() -> None:
    name = f"mosaic.shm.test-taken-{os.getpid()}"
    first = launch_engine(1, "reacher", name=name)
    try:
        with pytest.raises(ValueError, match="already exists"):
            launch_engine(1, "reacher", name=name)
        assert segment_exists(name), "the refused engine deleted the running engine's segment"
        proc = _cli("--envs", "1", "--name", name)
        assert proc.returncode == 2
        assert "already exists" in _one_error_line(proc)
        assert segment_exists(name), "the refused CLI deleted the running engine's segment"
        client = SharedMemoryClient(name, timeout=30)  # a new client still finds it
        assert client.ping(3).nonce == 3
        client.close(shutdown_engine=True)
        assert first.wait(timeout=30) == 0
    finally:
        first.close(timeout=0.0)
    assert not segment_exists(name)


@pytest.mark.parametrize("layout", ["mshm", "lrbc"])
def test_a_refused_engine_keeps_another_programs_segment(layout: str) -> None:
    name = f"mosaic_foreign_{layout}_{os.getpid()}"  # used exactly as given in both layouts
    foreign = create_segment(name, 4096)
    try:
        foreign[:5] = b"other"
        proc = _cli("--envs", "1", "--name", name, "--layout", layout)
        assert proc.returncode == 2
        assert "already exists" in _one_error_line(proc)
        assert segment_exists(name), "the refused engine deleted another program's segment"
        assert foreign[:5] == b"other"
    finally:
        foreign.close()
        unlink_segment(name)


# -- 2. one command cannot occupy the engine for hours ----------------------------------------
def test_control_and_step_mode_refuse_more_steps_than_one_command_may_take(engine) -> None:
    _, client = engine
    client.timeout = 10.0  # a TransportTimeoutError would mean: the engine is busy stepping
    for steps in (2**32 - 1, MAX_COMMAND_STEPS + 1):
        with pytest.raises(ValueError, match=f"{steps} steps.*at most {MAX_COMMAND_STEPS}"):
            client.mujoco.control([0, 1], np.zeros((2, 2)), steps=steps)
        with pytest.raises(ValueError, match=f"{steps} steps.*at most {MAX_COMMAND_STEPS}"):
            client.scene.set_mode("step", steps=steps)
    t0 = client.scene.info().sim_time[0]
    done = client.mujoco.control([0], [0.0, 0.0], steps=MAX_COMMAND_STEPS)  # the most: served
    assert done.time[0] == pytest.approx(t0 + MAX_COMMAND_STEPS * 0.01)
    assert client.ping(1).nonce == 1


def test_a_long_command_stops_when_its_client_is_gone() -> None:
    peer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    engine = MujocoEngine(4, "tabletop", peer_pids=(peer.pid,))
    try:
        peer.kill()
        peer.wait()
        with pytest.raises(PeerGoneError):
            returns(
                lambda: engine.answer(
                    sv.SendControlRequest([0, 1, 2, 3], [0.0] * 8, MAX_COMMAND_STEPS)
                )
            )
        assert engine.datas[3].time == 0.0  # stopped before it stepped every env
        with pytest.raises(PeerGoneError):
            returns(lambda: engine.answer(sv.SetSimModeRequest("step", False, MAX_COMMAND_STEPS)))
    finally:
        peer.kill()
        peer.wait()
        engine.close()
    assert not segment_exists(engine.name)


# -- 3. endless fragments cannot exhaust the engine's memory ----------------------------------
def _write_entry(client: SharedMemoryClient, payload: bytes, more: bool) -> None:
    ring = client._seg.c2e
    deadline = time.monotonic() + 30
    while not ring.try_write(payload, more):
        assert time.monotonic() < deadline, "the engine stopped draining its command ring"
        client._seg.action.ring()
        time.sleep(0.0005)
    client._seg.action.ring()


def _next_reply(client: SharedMemoryClient) -> cmd.Decoded:
    deadline = time.monotonic() + 30
    while (data := client._seg.e2c.try_read()) is None:
        assert time.monotonic() < deadline, "the engine did not answer"
        time.sleep(0.001)
    return cmd.decode(data)


def test_endless_fragments_are_refused_at_the_bound_and_the_next_command_works(engine) -> None:
    _, client = engine
    chunk = b"\xab" * (client._seg.c2e.capacity // 4)
    for _ in range(MAX_MESSAGE // len(chunk) + 2):  # past the bound, never a last fragment
        _write_entry(client, chunk, more=True)
    refused = _next_reply(client)  # answered now: the engine does not keep the fragments
    assert refused.error and "larger than" in refused.error and "MiB" in refused.error
    for _ in range(8):  # a client that goes on sending fragments is read and dropped
        _write_entry(client, chunk, more=True)
    _write_entry(client, cmd.encode(cmd.PingRequest(nonce=9), 4242), more=False)
    reply = _next_reply(client)
    assert reply.correlation_id == 4242 and reply.message.nonce == 9
    assert client.ping(10).nonce == 10  # and every command after it


def test_an_oversized_request_is_refused_to_its_sender(engine) -> None:
    _, client = engine
    huge = sv.DebugShape("text", text="x" * (MAX_MESSAGE + 1024))
    with pytest.raises(ValueError, match="larger than"):
        client.request(sv.DebugDrawRequest([0], [huge]))
    assert client.ping(11).nonce == 11
    assert client.debug.draw([client.debug.sphere((0, 0, 0), 0.1)], [0]) == 1


# -- 7. no MuJoCo: one line saying which extra -----------------------------------------------
def test_without_mujoco_the_cli_names_the_extra(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "from importlib.machinery import PathFinder\n"
        "class _NoMujoco(PathFinder):\n"
        "    @classmethod\n"
        "    def find_spec(cls, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'mujoco':\n"
        "            return None\n"
        "        return PathFinder.find_spec(name, path, target)\n"
        "sys.meta_path[:] = [_NoMujoco if f is PathFinder else f for f in sys.meta_path]\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    probe = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('mujoco'))"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert probe.stdout.strip() == "None"  # the block works
    proc = _cli("--envs", "1", env=env)
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "pip install 'mosaic-worker-sdk[mujoco]'" in line and "MuJoCo" in line


# -- 8. SIGTERM, a corrupted ring ------------------------------------------------------------
def _start_cli(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*CLI, "--envs", "2", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("MOSAIC_SHM_NAME="):
            return proc, line.strip().split("=", 1)[1]
    proc.wait()
    raise AssertionError(f"the engine did not start: {proc.stderr and proc.stderr.read()}")


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_sigterm_stops_the_cli_with_143_and_removes_the_segment() -> None:
    proc, name = _start_cli()
    try:
        client = SharedMemoryClient(name, timeout=30)
        client.step(np.zeros((2, 2)))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
        with pytest.raises(Exception, match="closed|exited|gone"):
            client.step(np.zeros((2, 2)))
        client.close()
    finally:
        _end(proc)
    assert not segment_exists(name)


def test_a_corrupted_command_ring_ends_the_engine_with_one_clear_line() -> None:
    proc, name = _start_cli()
    try:
        client = SharedMemoryClient(name, timeout=30)
        assert client.ping(1).nonce == 1
        ring = client._seg.c2e
        ring._store(ring._wpos, ring._load(ring._rpos) + 3)  # not a multiple of 8
        client._seg.action.ring()
        assert proc.wait(timeout=60) == 1
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1 and "command ring" in err
        client.close()
    finally:
        _end(proc)
    assert not segment_exists(name)


# -- 12. contracts and sizes ------------------------------------------------------------------
@pytest.mark.parametrize(
    "contract",
    [
        {"gravity": [0.0, 0.0, float("nan")]},
        {"gravity": [float("inf"), 0.0, -9.81]},
        {"mass_scale_low": 1.0, "mass_scale_high": float("inf")},
        {"qpos_noise": float("nan")},
        {"qvel_noise": float("inf")},
    ],
)
def test_a_contract_of_non_finite_values_is_refused(engine, contract: dict) -> None:
    _, client = engine
    with pytest.raises(ValueError, match="finite"):
        client.agent.reset([0], contract)
    assert np.isfinite(client.agent.reset([0]).gravity_z).all()


def test_an_engine_larger_than_the_machine_is_refused_with_its_size() -> None:
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    side = int((memory / 3) ** 0.5) + 1  # one env's image alone is past the memory
    proc = _cli("--envs", "1", "--model", "tabletop", "--image", f"{side}x{side}")
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "more than this machine's" in line and "GB" in line and "--image" in line
    proc = _cli("--envs", str(10**9))
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "more than this machine's" in line and "GB" in line and "--envs" in line


def _refusal(num_envs: int) -> str:
    """The message of MujocoEngine's refusal (an engine made after all is closed again)."""
    try:
        engine = MujocoEngine(num_envs, "reacher")
    except ValueError as exc:
        return str(exc)
    engine.close()
    raise AssertionError(f"an engine of {num_envs} envs was not refused")


def test_the_memory_check_counts_mujocos_data_and_the_room_in_dev_shm(monkeypatch) -> None:
    from mosaic_sdk.shm.engines import mujoco_engine

    # 4000 reacher envs: a segment of about 1 MB, MuJoCo's data some 28 MB at the least
    monkeypatch.setattr(mujoco_engine, "machine_memory", lambda: 10_000_000)
    pattern = r"segment 1\.\d MB; MuJoCo's data \d\d\.\d MB\), more than this machine's 10\.0 MB"
    assert re.search(pattern, _refusal(4000))
    monkeypatch.setattr(mujoco_engine, "machine_memory", lambda: 1 << 40)
    monkeypatch.setattr(mujoco_engine, "shm_free", lambda: 100_000)
    assert "does not fit the 0.1 MB of shared memory free in /dev/shm" in _refusal(1)
