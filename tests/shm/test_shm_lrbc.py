"""The lrbc layout (the LuckyEngine design's header): the table, a C engine built from it, the
design's client calls, and either side noticing the other's death."""

from __future__ import annotations

import ctypes
import json
import multiprocessing as mp
import os
import pathlib
import secrets
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection

import gymnasium as gym
import numpy as np
import pytest

from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm import layout as L
from mosaic_sdk.shm import spaces
from mosaic_sdk.shm.atomics import SharedWords
from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.lucky import LuckyClient
from mosaic_sdk.shm.ring import ByteRing
from mosaic_sdk.shm.segment import segment_exists, unlink_segment
from mosaic_sdk.shm.sync import PeerGoneError
from mosaic_sdk.shm.transport import SharedMemoryTransport
from mosaic_sdk.shm.vector_env import ShmVectorEnv
from tests.shm.conftest import Segments

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema" / "lrbc_layout.json"
ENGINE_C = pathlib.Path(__file__).with_name("lrbc_engine.c")
ctx = mp.get_context("fork")

u8, u32, u64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64


class DesignHeader(ctypes.Structure):
    """The design's header fields, in its order, as a C compiler lays them out."""

    _fields_ = [
        ("magic", u32),
        ("version", u32),
        ("server_pid", u32),
        ("client_pid", u32),
        ("mode", u8),
        ("num_envs", u32),
        ("obs_size", u32),
        ("act_size", u32),
        ("frame_seq", u64),
        ("action_seq", u64),
        ("obs_offset", u64),
        ("act_offset", u64),
        ("rewards_offset", u64),
        ("dones_offset", u64),
        ("resets_offset", u64),
        ("cmd_s2c_offset", u64),
        ("cmd_c2s_offset", u64),
        ("cmd_ring_size", u32),
        ("image_offset", u64),
        ("image_width", u32),
        ("image_height", u32),
        ("image_channels", u32),
        ("gpu_available", u8),
        ("gpu_obs_mode", u8),
        ("gpu_obs_handle", u8 * 64),
        ("gpu_device_id", u32),
    ]


# -- the table ------------------------------------------------------------------------------
def test_the_design_fields_sit_at_c_natural_alignment_in_the_design_order() -> None:
    seed = [(n, o) for n, o, _, _ in L.LRBC_HEADER_FIELDS if o < L.LRBC_SEED_END]
    assert seed == [(name, getattr(DesignHeader, name).offset) for name, _ in DesignHeader._fields_]


#: The design's header as its text lays it out (shm_transport_design.txt, C's natural alignment
#: on a little-endian machine): (field, byte offset, width in bytes). Written here by hand, not
#: taken from the SDK, so that a field the SDK reads or writes at another width is seen.
DESIGN_BYTES = (
    ("magic", 0, 4),
    ("version", 4, 4),
    ("server_pid", 8, 4),
    ("client_pid", 12, 4),
    ("mode", 16, 1),  # 3 padding bytes follow
    ("num_envs", 20, 4),
    ("obs_size", 24, 4),
    ("act_size", 28, 4),
    ("frame_seq", 32, 8),
    ("action_seq", 40, 8),
    ("obs_offset", 48, 8),
    ("act_offset", 56, 8),
    ("rewards_offset", 64, 8),
    ("dones_offset", 72, 8),
    ("resets_offset", 80, 8),
    ("cmd_s2c_offset", 88, 8),
    ("cmd_c2s_offset", 96, 8),
    ("cmd_ring_size", 104, 4),  # 4 padding bytes follow
    ("image_offset", 112, 8),
    ("image_width", 120, 4),
    ("image_height", 124, 4),
    ("image_channels", 128, 4),
    ("gpu_available", 132, 1),
    ("gpu_obs_mode", 133, 1),
    ("gpu_obs_handle", 134, 64),  # 2 padding bytes follow
    ("gpu_device_id", 200, 4),
)
DESIGN_AT = {name: (offset, width) for name, offset, width in DESIGN_BYTES}


def field_bytes(buf: bytearray, name: str) -> int:
    """The design's field ``name`` of the header in ``buf``, as a little-endian integer."""
    offset, width = DESIGN_AT[name]
    return int.from_bytes(buf[offset : offset + width], "little")


def test_the_sdk_reads_and_writes_each_design_field_at_its_width() -> None:
    assert DESIGN_BYTES == tuple(
        (name, getattr(DesignHeader, name).offset, getattr(DesignHeader, name).size)
        for name, _ in DesignHeader._fields_
    )
    sdk = {n: (o, struct.calcsize("<" + f)) for n, o, f, _ in L.LRBC_HEADER_FIELDS}
    for name, offset, width in DESIGN_BYTES:
        assert sdk[name] == (offset, width), f"{name}: (offset, width) {sdk[name]} in the SDK"


def test_the_header_bytes_sit_at_the_designs_offsets() -> None:
    """The SDK writes each value into exactly its field's bytes: a buffer filled with 0xA5
    first shows a field written too narrow (its high bytes stay 0xA5) or too wide (a padding
    byte or a neighbour changes)."""
    lay = L.Layout.compute(3, 5, 2, kind="lrbc", image_shape=(4, 6, 3), cmd_ring_size=4096)
    buf = bytearray(b"\xa5" * L.HEADER_SIZE)
    lay.write_header(buf, 0x01020304)
    words = SharedWords(buf)
    L.publish_magic(lay, words)
    words.release()
    written = {
        "magic": 0x4C524243,
        "version": 1,
        "server_pid": 0x01020304,
        "mode": 0,
        "num_envs": 3,
        "obs_size": 5,
        "act_size": 2,
        "obs_offset": lay.obs_offset,
        "act_offset": lay.act_offset,
        "rewards_offset": lay.rewards_offset,
        "dones_offset": lay.terminated_offset,
        "resets_offset": lay.resets_offset,
        "cmd_s2c_offset": lay.cmd_e2c_offset,
        "cmd_c2s_offset": lay.cmd_c2e_offset,
        "cmd_ring_size": 4096,
        "image_offset": lay.image_offset,
        "image_width": 6,
        "image_height": 4,
        "image_channels": 3,
    }
    assert {name: field_bytes(buf, name) for name in written} == written
    inside = {o for name in written for o in range(DESIGN_AT[name][0], sum(DESIGN_AT[name]))}
    outside = [o for o in range(L.LRBC_SEED_END) if o not in inside and buf[o] != 0xA5]
    assert not outside, f"bytes {outside} of the design's header were written outside its fields"


def test_a_header_written_by_the_designs_rules_is_read_as_written() -> None:
    """A header laid out by hand (ctypes, the design's struct), num_envs past 16 bits and
    0xA5 in its padding bytes: the SDK reads every field as written."""
    n, obs, act, ring = 70_000, 1, 1, 64
    offsets, pos = {}, L.HEADER_SIZE
    for name, size in (
        ("obs_offset", 4 * n * obs),
        ("act_offset", 4 * n * act),
        ("rewards_offset", 4 * n),
        ("dones_offset", 2 * n),
        ("resets_offset", n),
        ("cmd_s2c_offset", 8 + ring),
        ("cmd_c2s_offset", 8 + ring),
    ):
        offsets[name] = pos
        pos = (pos + size + 63) // 64 * 64
    buf = bytearray(pos)
    for padding in (17, 18, 19, 108, 109, 110, 111, 198, 199):
        buf[padding] = 0xA5
    header = DesignHeader.from_buffer(buf)
    header.version, header.server_pid, header.mode = 1, 4321, 1
    header.num_envs, header.obs_size, header.act_size = n, obs, act
    header.cmd_ring_size = ring
    for name, offset in offsets.items():
        setattr(header, name, offset)
    header.magic = 0x4C524243
    del header
    assert bytes(buf[20:24]) == bytes.fromhex("70 11 01 00")  # 70_000, a u32
    lay = L.Layout.read_header(buf)
    assert (lay.kind, lay.num_envs, lay.obs_size, lay.act_size) == ("lrbc", n, obs, act)
    assert (lay.mode, lay.cmd_ring_size, lay.image_shape) == (1, ring, None)
    assert lay.obs_offset == offsets["obs_offset"] and lay.act_offset == offsets["act_offset"]
    assert lay.rewards_offset == offsets["rewards_offset"]
    assert lay.terminated_offset == offsets["dones_offset"]
    assert lay.truncated_offset == offsets["dones_offset"] + n
    assert lay.resets_offset == offsets["resets_offset"]
    assert lay.cmd_e2c_offset == offsets["cmd_s2c_offset"]
    assert lay.cmd_c2e_offset == offsets["cmd_c2s_offset"]


def test_schema_json_is_generated_from_the_code() -> None:
    committed = json.loads(SCHEMA.read_text())
    assert committed == json.loads(json.dumps(L.lrbc_description())), (
        "schema/lrbc_layout.json is stale: regenerate it with "
        "`python -m mosaic_sdk.shm.layout lrbc > schema/lrbc_layout.json`"
    )


def test_markdown_table_lists_the_same_fields() -> None:
    rows = {}
    for line in (ROOT / "schema" / "lrbc_layout.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].startswith("`"):
            rows[cells[2].strip("`")] = cells[0]
    assert rows == {n: str(o) for n, o, _, _ in L.LRBC_HEADER_FIELDS}


def test_header_round_trip_with_magic_little_endian_and_truncateds_after_dones() -> None:
    lay = L.Layout.compute(8, 5, 3, kind="lrbc", image_shape=(4, 6, 3))
    buf = bytearray(lay.total_size)
    lay.write_header(buf, 1234)
    assert L.detect_kind(buf) is None  # not ready until the magic is there
    words = SharedWords(buf)
    L.publish_magic(lay, words)
    words.release()
    assert bytes(buf[:4]) == bytes.fromhex("43 42 52 4c")
    assert L.Layout.read_header(buf) == lay
    assert lay.truncated_offset == lay.terminated_offset + 8
    assert lay.rewards_dtype == "<f4" and lay.ring_header_size == 8


def test_big_endian_magic_and_bad_offsets_get_clear_errors() -> None:
    lay = L.Layout.compute(4, 2, 1, kind="lrbc")
    buf = bytearray(lay.total_size)
    lay.write_header(buf, 1)
    buf[:4] = b"LRBC"
    with pytest.raises(L.LayoutError, match="big-endian"):
        L.Layout.read_header(buf)
    buf[:4] = bytes.fromhex("43 42 52 4c")
    L.Layout.read_header(buf)
    buf[L.LRBC_OFF["obs_offset"] : L.LRBC_OFF["obs_offset"] + 8] = (100).to_bytes(8, "little")
    with pytest.raises(L.LayoutError, match="obs_offset 100"):
        L.Layout.read_header(buf)
    with pytest.raises(L.LayoutError, match="power of two"):
        L.Layout.compute(4, 2, 1, kind="lrbc", cmd_ring_size=96)
    with pytest.raises(L.LayoutError, match="layout must be one of"):
        L.Layout.compute(4, 2, 1, kind="luckyengine")


def test_a_ring_with_u32_positions_carries_messages_across_the_2_32_wrap() -> None:
    buf = bytearray(8 + 64)
    words = SharedWords(buf)
    start = (1 << 32) - 40
    words.store_u32(0, start)
    words.store_u32(4, start)
    writer = ByteRing(buf, words, 0, 64, compact=True)
    reader = ByteRing(buf, words, 0, 64, compact=True)
    sent = [secrets.token_bytes(k) for k in (20, 3, 27, 11, 0, 30)]
    got = []
    for message in sent:
        assert writer.try_write(message)
        got.append(reader.try_read())
    assert got == sent
    assert words.load_u32(0) < start  # the write position wrapped
    assert reader.pending() == 0
    writer.release()
    reader.release()
    words.release()


# -- the C engine ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def c_engine_binary(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc or gcc) on PATH: the C test engine cannot be built")
    out = tmp_path_factory.mktemp("lrbc_c")
    table = json.loads(SCHEMA.read_text())
    lines = [f"#define LRBC_OFF_{f['name'].upper()} {f['offset']}" for f in table["header"]]
    lines += [
        f"#define LRBC_MAGIC {table['magic_u32']}u",
        f"#define LRBC_VERSION {table['version']}",
        f"#define LRBC_HEADER_SIZE {table['header_size']}",
        f"#define LRBC_RING_HEADER_SIZE {table['ring']['data_offset']}",
        f"#define LRBC_DEFAULT_RING_SIZE {table['example_4096x100x12']['cmd_ring_size']}",
    ]
    (out / "lrbc_offsets.h").write_text("\n".join(lines) + "\n")
    binary = out / "lrbc_engine"
    build = subprocess.run(
        [compiler, "-O2", "-std=c11", "-Wall", "-Werror", f"-I{out}", "-o", str(binary),
         str(ENGINE_C), "-lrt"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert build.returncode == 0, f"the C engine does not build:\n{build.stderr}"
    return binary


class Engines(Segments):
    """Starts C engines and names lrbc segments; kills, reaps and unlinks everything after."""

    join_timeout = 5.0

    def __init__(self, binary: pathlib.Path | None = None) -> None:
        super().__init__()
        self.binary = binary
        self.popens: list[subprocess.Popen] = []

    def name(self) -> str:
        name = f"LuckyEngine_test{os.getpid()}_{secrets.token_hex(4)}"
        self.names.append(name)
        return name

    def start_c(self, name: str, n: int, obs: int, act: int, idle: float = 60) -> subprocess.Popen:
        assert self.binary is not None
        cmdline = [str(self.binary), name, str(n), str(obs), str(act), str(idle)]
        p = subprocess.Popen(cmdline, stdout=subprocess.PIPE, text=True)
        self.popens.append(p)
        assert p.stdout is not None
        assert p.stdout.readline().split() == ["ready", str(p.pid)]
        return p

    def cleanup(self) -> list[str]:
        for p in self.popens:
            if p.poll() is None:
                p.terminate()  # a C engine removes its segment on SIGTERM
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            p.wait()
        return super().cleanup()


@pytest.fixture
def engines(request: pytest.FixtureRequest) -> Iterator[Engines]:
    binary = None
    if "c_engine_binary" in request.fixturenames:
        binary = request.getfixturevalue("c_engine_binary")
    e = Engines(binary)
    try:
        yield e
    finally:
        leaked = e.cleanup()
    assert not leaked, f"segments left in /dev/shm by the code under test: {leaked}"


def reference_steps(n: int, obs: int, act: int, batches: list[tuple[np.ndarray, np.ndarray]]):
    """What the C engine computes, batch by batch (see lrbc_engine.c)."""
    o = np.zeros((n, obs), np.float32)
    counter = np.zeros(n, np.int64)
    for actions, resets in batches:
        rewards = actions.sum(axis=1, dtype=np.float32)
        stepped = ~resets.astype(bool)
        o[~stepped] = 0
        counter[~stepped] = 0
        o[stepped] += actions[stepped][:, np.arange(obs) % act]
        counter[stepped] += 1
        rewards[~stepped] = 0
        dones = (stepped & (counter % 5 == 0)).astype(np.uint8)
        truncs = (stepped & (counter % 7 == 0)).astype(np.uint8)
        yield o.copy(), rewards, dones, truncs


def test_design_client_attaches_to_the_c_engine_and_steps(c_engine_binary, engines) -> None:  # noqa: ANN001
    n, obs, act = 6, 5, 3
    name = engines.name()
    engines.start_c(name, n, obs, act)
    rng = np.random.default_rng(3)
    batches = []
    with LuckyClient(name, timeout=20) as client:
        assert (client.num_envs, client.obs_size, client.act_size) == (n, obs, act)
        base = client.client.base_address
        assert client.obs.ctypes.data == base + client.client.layout.obs_offset  # zero-copy
        reference = None
        for step in range(16):
            actions = rng.standard_normal((n, act)).astype(np.float32)
            resets = np.zeros(n, np.uint8)
            if step == 9:
                client.reset([1, 4])
                resets[[1, 4]] = 1
            batches.append((actions, resets))
            obs_view, rewards, dones = client.step(actions)
            reference = list(reference_steps(n, obs, act, batches))[-1]
            np.testing.assert_array_equal(obs_view, reference[0])
            np.testing.assert_array_equal(rewards, reference[1])
            np.testing.assert_array_equal(dones, reference[2])
            np.testing.assert_array_equal(client.truncateds, reference[3])
            assert not client.resets.any()  # the engine cleared the flags it honoured
        assert rewards.dtype == np.float32 and dones.dtype == np.uint8
        assert client.frame_seq == 16


def test_our_client_detects_the_layout_of_the_c_engine(c_engine_binary, engines) -> None:  # noqa: ANN001
    name = engines.name()
    engines.start_c(name, 3, 4, 2)
    client = SharedMemoryClient(name, timeout=20)  # no prefix: found as named
    try:
        assert client.layout.kind == "lrbc"
        obs, rewards, terminated, truncated = client.step(np.ones((3, 2), np.float32))
        np.testing.assert_array_equal(obs, np.ones((3, 4), np.float32))
        np.testing.assert_array_equal(rewards, np.full(3, 2.0, np.float32))
        obs, *_ = client.step(np.full((3, 2), 2.0, np.float32))
        np.testing.assert_array_equal(obs, np.full((3, 4), 3.0, np.float32))
    finally:
        client.close()


def test_a_killed_c_engine_is_noticed_by_the_client(c_engine_binary, engines) -> None:  # noqa: ANN001
    name = engines.name()
    engine = engines.start_c(name, 2, 2, 1)
    client = LuckyClient(name)  # no timeout: only the engine's death can end the wait
    try:
        client.step(np.zeros((2, 1)))
        engine.kill()
        with pytest.raises(PeerGoneError, match="engine process"):
            client.step(np.zeros((2, 1)))
    finally:
        client.close()
    engine.wait()
    assert segment_exists(name)  # a crashed engine leaves its segment: the test removes it
    unlink_segment(name)


def _attach_and_hang(name: str, report: Connection) -> None:
    client = LuckyClient(name)
    client.step(np.zeros((client.num_envs, client.act_size)))
    report.send("stepped")
    time.sleep(120)


def test_a_killed_client_is_noticed_by_the_c_engine(c_engine_binary, engines) -> None:  # noqa: ANN001
    name = engines.name()
    engine = engines.start_c(name, 2, 2, 1)
    parent, child = ctx.Pipe()
    client = engines.track(ctx.Process(target=_attach_and_hang, args=(name, child)))
    client.start()
    assert parent.poll(20) and parent.recv() == "stepped"
    os.kill(client.pid, signal.SIGKILL)
    client.join()
    assert engine.wait(timeout=20) == 3  # it saw the client gone, removed its segment, exited
    assert not segment_exists(name)


# -- our Python engine in the lrbc layout ---------------------------------------------------
def _python_engine(name: str, report: Connection) -> None:
    """Steps obs[i] = [batch, action sum, env id]; handles Reset commands (contract echoed)."""
    contracts = []

    def handler(message: object) -> object:
        if isinstance(message, cmd.ResetRequest):
            ids = list(message.env_ids) or list(range(4))
            contracts.append((ids, message.options))
            t.obs[ids] = -1.0
            return cmd.ResetResponse(env_ids=ids, infos=[{} for _ in ids])
        return None

    t = SharedMemoryTransport(4, 3, 2, name=name, layout="lrbc", cmd_ring_size=4096)
    box = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    act = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    t.schema = cmd.GetSchemaResponse(
        4, 3, 2, spaces.to_spec(box), spaces.to_spec(act), env_id="lrbc-test"
    )
    report.send(("ready", t.name))
    outcome = "closed"
    try:
        while (seq := t.wait_for_actions(handler)) is not None:
            stepped = t.resets == 0
            t.obs[:, 0] = np.where(stepped, seq, 0)
            t.obs[:, 1] = t.actions.sum(axis=1)
            t.obs[:, 2] = np.arange(4)
            t.rewards[:] = 0.25 * seq
            t.terminated[:] = ~stepped
            t.truncated[:] = seq % 2
            t.resets[:] = 0
            t.publish_frame(seq)
    except PeerGoneError as exc:
        outcome = f"peer gone: {exc}"
    finally:
        t.close()
        report.send((outcome, contracts))


def _start_python_engine(engines: Engines) -> tuple[str, Connection, mp.Process]:
    name = engines.name()
    parent, child = ctx.Pipe()
    proc = engines.track(ctx.Process(target=_python_engine, args=(name, child)))
    proc.start()
    assert parent.poll(20)
    assert parent.recv() == ("ready", name)  # named exactly, no prefix
    return name, parent, proc


def test_design_client_drives_our_engine_in_the_lrbc_layout(engines) -> None:  # noqa: ANN001
    name, report, proc = _start_python_engine(engines)
    with LuckyClient(name, timeout=20) as client:
        assert client.server_pid == proc.pid
        schema = client.get_schema()
        assert (schema.num_envs, schema.env_id) == (4, "lrbc-test")
        obs, rewards, dones = client.step(np.ones((4, 2)))
        np.testing.assert_array_equal(obs[:, :2], [[1, 2]] * 4)
        np.testing.assert_array_equal(rewards, np.full(4, 0.25, np.float32))
        np.testing.assert_array_equal(client.truncateds, [1] * 4)
        client.reset([2])  # a flag: env 2 resets at the next step
        obs, rewards, dones = client.step(np.ones((4, 2)))
        np.testing.assert_array_equal(obs[:, 0], [2, 2, 0, 2])
        np.testing.assert_array_equal(dones, [0, 0, 1, 0])
        np.testing.assert_array_equal(client.truncateds, [0] * 4)
        client.reset([0, 3], contract={"gravity": -3.7, "friction": 0.5})
        np.testing.assert_array_equal(client.obs[[0, 3]], -1.0)
    client2 = SharedMemoryClient(name, timeout=20)
    assert client2.layout.kind == "lrbc"
    client2.close(shutdown_engine=True)
    assert report.poll(20)
    outcome, contracts = report.recv()
    assert outcome == "closed"
    assert contracts == [([0, 3], {"contract": {"gravity": -3.7, "friction": 0.5}})]
    proc.join(10)
    assert not segment_exists(name)


def test_shm_vector_env_attaches_to_our_engine_in_the_lrbc_layout(engines) -> None:  # noqa: ANN001
    name, report, _ = _start_python_engine(engines)
    envs = ShmVectorEnv.attach(name, timeout=20)
    try:
        assert envs.client.layout.kind == "lrbc"
        obs, _ = envs.reset(seed=0)
        np.testing.assert_array_equal(obs, np.full((4, 3), -1.0, np.float32))
        obs, rewards, terminated, truncated, _ = envs.step(np.full((4, 2), 0.5, np.float32))
        np.testing.assert_array_equal(obs[:, :2], [[1, 1]] * 4)
        assert rewards.dtype == np.float64  # gymnasium's, from the layout's float32
        np.testing.assert_array_equal(rewards, [0.25] * 4)
        assert truncated.all() and not terminated.any()
    finally:
        envs.client.close(shutdown_engine=True)
        envs.close()
    assert report.poll(20) and report.recv()[0] == "closed"


def _lucky_client_hangs(name: str, report: Connection) -> None:
    client = LuckyClient(name)
    client.step(np.zeros((4, 2)))
    report.send("stepped")
    time.sleep(120)


def test_our_lrbc_engine_notices_a_killed_design_client(engines) -> None:  # noqa: ANN001
    name, report, proc = _start_python_engine(engines)
    parent, child = ctx.Pipe()
    client = engines.track(ctx.Process(target=_lucky_client_hangs, args=(name, child)))
    client.start()
    assert parent.poll(20) and parent.recv() == "stepped"
    os.kill(client.pid, signal.SIGKILL)
    client.join()
    assert report.poll(20)
    outcome, _ = report.recv()
    assert outcome.startswith("peer gone") and f"pid {client.pid}" in outcome
    proc.join(10)
    assert not segment_exists(name)  # the engine removed its segment


def test_design_client_notices_our_killed_lrbc_engine(engines) -> None:  # noqa: ANN001
    name, _, proc = _start_python_engine(engines)
    client = LuckyClient(name)
    try:
        client.step(np.zeros((4, 2)))
        os.kill(proc.pid, signal.SIGKILL)
        with pytest.raises(PeerGoneError, match=f"pid {proc.pid}"):
            client.step(np.zeros((4, 2)))
    finally:
        client.close()
    proc.join(10)
    unlink_segment(name)  # the killed engine could not


def test_design_client_refuses_a_mosaic_layout_segment(engines, monkeypatch) -> None:  # noqa: ANN001
    t = SharedMemoryTransport(2, 2, 1, name=engines.name(), cmd_ring_size=4096)
    engines.names.append(t.name)
    try:
        with pytest.raises(ValueError, match="mshm layout, not the design's lrbc"):
            LuckyClient(t.name)
        monkeypatch.delenv("LUCKY_SHM_NAME", raising=False)
        with pytest.raises(ValueError, match="set LUCKY_SHM_NAME"):
            LuckyClient()
    finally:
        t.close()


def test_lucky_shm_name_names_the_segment_on_both_sides(engines, monkeypatch) -> None:  # noqa: ANN001
    name = engines.name()
    monkeypatch.setenv("LUCKY_SHM_NAME", name)
    monkeypatch.delenv("MOSAIC_SHM_NAME", raising=False)
    t = SharedMemoryTransport(2, 2, 1, layout="lrbc", cmd_ring_size=4096)
    try:
        assert t.name == name
        with LuckyClient(timeout=20) as client:
            assert client.name == name
        with SharedMemoryClient(timeout=20) as ours:
            assert ours.name == name and ours.layout.kind == "lrbc"
    finally:
        t.close()
    assert not segment_exists(name)
