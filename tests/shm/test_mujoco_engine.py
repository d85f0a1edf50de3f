"""The MuJoCo reference engine: hot path, the seven services, streams, failures, lifetime."""

from __future__ import annotations

import functools
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import flatbuffers
import numpy as np
import pytest

if importlib.util.find_spec("mujoco") is None:
    pytest.skip("mujoco is not installed (the mujoco extra)", allow_module_level=True)
from mosaic_sdk.shm import engines  # noqa: E402

mujoco = engines.load_mujoco()  # MUJOCO_GL=egl, or physics only where no GL loads

from mosaic_sdk.shm import commands as cmd  # noqa: E402
from mosaic_sdk.shm import services as sv  # noqa: E402
from mosaic_sdk.shm.client import SharedMemoryClient  # noqa: E402
from mosaic_sdk.shm.engines import model_path  # noqa: E402
from mosaic_sdk.shm.engines.launch import EngineHandle, launch_engine  # noqa: E402
from mosaic_sdk.shm.engines.mujoco_engine import MujocoEngine  # noqa: E402
from mosaic_sdk.shm.engines.render import BatchRenderer, draw_debug  # noqa: E402
from mosaic_sdk.shm.segment import segment_exists, unlink_segment  # noqa: E402
from mosaic_sdk.shm.sync import PeerGoneError  # noqa: E402
from mosaic_sdk.shm.vector_env import ShmVectorEnv  # noqa: E402


def _engine(num_envs: int, model: str) -> Iterator[tuple[EngineHandle, SharedMemoryClient]]:
    handle = launch_engine(num_envs, model)
    client = SharedMemoryClient(handle.name, timeout=30)
    try:
        yield handle, client
    finally:
        client.close(shutdown_engine=True)
        handle.close()
        assert not segment_exists(handle.name), "the engine left its segment"


@pytest.fixture(scope="module")
def tabletop() -> Iterator[tuple[EngineHandle, SharedMemoryClient]]:
    yield from _engine(3, "tabletop")


@pytest.fixture(scope="module")
def reacher() -> Iterator[tuple[EngineHandle, SharedMemoryClient]]:
    yield from _engine(4, "reacher")


@functools.cache
def _renderer_works() -> bool:
    if engines.GL_UNAVAILABLE is not None:
        return False
    try:
        m = mujoco.MjModel.from_xml_string("<mujoco/>")
        mujoco.Renderer(m, 8, 8).close()
    except Exception:
        return False
    return True


@pytest.fixture
def needs_gl() -> None:
    """Skip where offscreen OpenGL is missing (checked when a rendering test runs, not at
    collection, so that no GL context is made in this process for the other tests)."""
    if not _renderer_works():
        pytest.skip("no offscreen OpenGL (MUJOCO_GL=egl needs libEGL + Mesa)")


# -- Agent, MuJoCo, Scene -----------------------------------------------------------------------
def test_agent_schema_and_hot_path(tabletop) -> None:
    _, client = tabletop
    schema = client.agent.schema()
    info = client.mujoco.info()
    assert schema.model_name == "tabletop" and schema.num_envs == 3
    assert schema.act_names == info.actuator_names == ["fx", "fy"]
    assert len(schema.obs_names) == client.layout.obs_size == info.nq + info.nv + 2
    assert info.camera_names == ["overhead", "side"] and info.version == mujoco.__version__
    client.scene.set_mode("lockstep")
    before = client.mujoco.joint_state(1, ["px"]).qpos[0]
    actions = np.zeros((3, 2), dtype=np.float32)
    actions[1] = [1.0, 0.0]  # env 1 pushes along +x
    for _ in range(5):
        obs, rewards, _, _ = client.step(actions)
    after = client.mujoco.joint_state(1, ["px"])
    assert after.qpos[0] > before + 1e-3
    assert obs[1, 0] == pytest.approx(after.qpos[0], abs=1e-6)  # obs starts with qpos
    assert np.all(rewards < 0)  # minus the distance to the target


def test_joint_state_control_and_poses(tabletop) -> None:
    _, client = tabletop
    client.scene.set_mode("lockstep")
    state = client.mujoco.joint_state(0, ["box", "py"])
    joints = state.joints()
    assert [len(joints["box"][0]), len(joints["box"][1]), len(joints["py"][0])] == [7, 6, 1]
    t0 = client.scene.info().sim_time[2]
    done = client.mujoco.control([2], [0.0, -1.0], steps=10)
    assert done.time[0] == pytest.approx(t0 + 10 * 0.005)
    assert client.mujoco.joint_state(2, ["py"]).qvel[0] < 0
    names = {(e.kind, e.name) for e in client.scene.entities()}
    assert {("body", "box"), ("body", "target"), ("geom", "floor")} <= names
    moved = client.scene.set_pose("box", (0.1, -0.2, 0.3), env=0)
    assert moved.pos == pytest.approx((0.1, -0.2, 0.3))
    assert client.scene.pose("box", env=0).pos == pytest.approx((0.1, -0.2, 0.3))
    assert client.scene.pose("box", env=1).pos[2] < 0.2  # other envs untouched
    target = client.scene.set_pose("target", (0.2, 0.2, 0.01), env=0)  # a mocap body
    assert target.pos == pytest.approx((0.2, 0.2, 0.01))
    with pytest.raises(ValueError, match="neither a free joint nor mocap"):
        client.scene.set_pose("pusher", (0, 0, 0))
    with pytest.raises(KeyError, match="no joint named"):
        client.mujoco.joint_state(0, ["elbow"])


def test_sim_modes(tabletop) -> None:
    _, client = tabletop
    client.scene.set_mode("pause")
    frozen = client.scene.info().sim_time
    obs = client.step(np.ones((3, 2), dtype=np.float32))[0].copy()
    obs2 = client.step(np.ones((3, 2), dtype=np.float32))[0]
    assert client.scene.info().sim_time == frozen and np.array_equal(obs, obs2)
    stepped = client.scene.set_mode("step", steps=3)
    assert stepped.mode == "pause"
    assert stepped.sim_time == pytest.approx(frozen[0] + 3 * 4 * 0.005)
    client.scene.set_mode("run")
    deadline = time.monotonic() + 10
    while client.scene.info().sim_time[0] <= stepped.sim_time + 0.1:
        assert time.monotonic() < deadline, "run mode did not advance the simulation"
    info = client.scene.set_mode("lockstep")
    assert client.scene.info().sim_time[0] == pytest.approx(info.sim_time)


def test_randomised_reset_changes_only_the_chosen_envs(reacher) -> None:
    _, client = reacher
    identity = sv.SimulationContract(seed=7, restore_defaults=True)
    actions = np.random.default_rng(0).uniform(-1, 1, (20, 4, 2)).astype(np.float32)

    def rollout() -> np.ndarray:
        out = []
        for a in actions:
            out.append(client.step(a)[0].copy())
        return np.array(out)

    client.agent.reset(None, identity)
    start = client.obs.copy()
    plain = rollout()
    client.agent.reset(None, identity)
    heavy = sv.SimulationContract(  # the default initial-state noise, heavier and weaker
        mass_scale_low=2.0,
        mass_scale_high=3.0,
        gain_scale_low=0.5,
        gain_scale_high=0.6,
        qpos_noise=0.02,
        qvel_noise=0.02,
        seed=7,
    )
    answer = client.agent.reset([1, 3], heavy)
    assert np.array_equal(client.obs, start)  # same initial state: only the physics changed
    assert answer.env_ids == [1, 3] and min(answer.body_mass) > 2 * 0.3
    randomised = rollout()
    assert np.array_equal(plain[:, [0, 2]], randomised[:, [0, 2]])
    for env in (1, 3):
        assert np.abs(plain[:, env] - randomised[:, env]).max() > 1e-3
    with pytest.raises(ValueError, match="0 < low <= high"):
        client.agent.reset([0], {"mass_scale_low": 2.0, "mass_scale_high": 1.0})
    back = client.agent.reset(None, identity)  # restore_defaults: the model's own values
    mass = mujoco.MjModel.from_xml_path(str(model_path("reacher"))).body_mass.sum()
    assert back.body_mass == pytest.approx([mass] * 4)


def test_a_seeded_reset_is_repeatable_and_the_seed_chooses_the_start(reacher) -> None:
    """Two resets with one seed give the same observations, whatever came between; other seeds
    give others (the reacher's reset noises its joints and places its target)."""
    _, client = reacher
    seeds = [11, 12, 13, 14]
    first = client.reset(seeds=seeds)[0].copy()
    client.step(np.ones((4, 2), dtype=np.float32))
    client.reset()  # unseeded: draws on from each env's generator
    again = client.reset(seeds=seeds)[0].copy()
    np.testing.assert_array_equal(again, first)
    one = client.reset([2], seeds=[11])[0].copy()  # one env, the seed env 0 had above
    np.testing.assert_array_equal(one[2], first[0])
    other = client.reset(seeds=[21, 22, 23, 24])[0]
    for env in range(4):
        assert not np.array_equal(other[env], first[env]), f"env {env}: seed 21+ gave seed 11+'s"


def test_shm_vector_env_attaches_to_the_engine(reacher) -> None:
    handle, client = reacher
    client.close()  # detach (the engine keeps serving), then attach as a gymnasium VectorEnv
    envs = ShmVectorEnv.attach(handle.name, timeout=30)
    try:
        obs, _ = envs.reset(seed=3)
        assert obs.shape == (4, 6) and envs.single_action_space.shape == (2,)
        for _ in range(101):  # the episode truncates after 100 steps, then autoresets
            obs, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())
            if truncated.any():
                break
        assert truncated.all() and not terminated.any()
    finally:
        envs.close()  # detaches; an engine it did not launch keeps running
    client.__init__(handle.name, timeout=30)  # the fixture's client again


# -- Telemetry -----------------------------------------------------------------------------------
def test_telemetry_stream_of_1000_frames_loses_nothing(tabletop) -> None:
    _, client = tabletop
    schema = client.telemetry.schema()
    assert {"contact_force", "body_linvel"} <= set(schema.names)
    client.scene.set_mode("pause")
    stream = client.telemetry.stream(
        ["sim_time", "contact_count", "contact_force", "body_linvel"], [0, 2], 0, max_frames=1000
    )
    assert stream.sizes == [1, 1, 1, 12]
    client.scene.set_mode("run")  # the engine steps by itself; the frames come unasked
    frames = list(stream)
    client.scene.set_mode("lockstep")
    assert [f.message.seq for f in frames] == list(range(1000))
    times = np.array([stream.values(f)["sim_time"][0, 0] for f in frames])
    assert np.allclose(np.diff(times), 0.005)  # one frame per physics step
    last = stream.values(frames[-1])
    assert last["body_linvel"].shape == (2, 12) and last["contact_count"][0, 0] > 0
    assert last["contact_force"][0, 0] > 0  # the box rests on the floor


def test_telemetry_rate_is_in_simulated_time(tabletop) -> None:
    _, client = tabletop
    client.scene.set_mode("lockstep")
    stream = client.telemetry.stream(["sim_time"], [1], rate_hz=50, max_frames=5)
    for _ in range(6):
        client.step(np.zeros((3, 2), dtype=np.float32))  # 4 physics steps each: 50 Hz
    times = [stream.values(f)["sim_time"][0, 0] for f in stream]
    assert np.allclose(np.diff(times), 0.02)


# -- Camera, viewport, debug ---------------------------------------------------------------------
def _reference_frame(client: SharedMemoryClient, env: int, camera, shapes=()) -> np.ndarray:
    """The same state rendered here by mujoco.Renderer itself."""
    model = mujoco.MjModel.from_xml_path(str(model_path("tabletop")))
    data = mujoco.MjData(model)
    state = client.mujoco.joint_state(env)
    data.qpos[:] = state.qpos
    data.qvel[:] = state.qvel
    target = client.scene.pose("target", env=env)
    data.mocap_pos[0] = target.pos
    data.mocap_quat[0] = target.quat
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 64, 64) as renderer:
        renderer.update_scene(data, camera=camera)
        draw_debug(renderer.scene, list(shapes))
        return renderer.render().copy()


def test_camera_frames_equal_mujocos_renderer(tabletop, needs_gl) -> None:
    _, client = tabletop
    client.scene.set_mode("lockstep")
    cams = client.camera.list()
    assert [c.name for c in cams.cameras] == ["overhead", "side"]
    assert (cams.width, cams.height, cams.channels) == (64, 64, 3)
    client.debug.clear()
    client.step(np.full((3, 2), 0.5, dtype=np.float32))
    with client.camera.stream("side", [0, 2], rate_hz=30, max_frames=2) as stream:
        frames = list(stream)
    assert [f.message.seq for f in frames] == [0, 1]
    assert frames[0].pixels.shape == (2, 64, 64, 3)
    assert np.array_equal(frames[1].pixels[1], _reference_frame(client, 2, "side"))
    assert np.array_equal(client.image[0], _reference_frame(client, 0, "side"))


def test_debug_shapes_are_drawn_into_the_frames(tabletop, needs_gl) -> None:
    _, client = tabletop
    client.scene.set_mode("lockstep")
    client.debug.clear()
    with client.camera.stream("overhead", [1], max_frames=1) as stream:
        plain = stream.next().pixels[0]
    shapes = [
        client.debug.line((-0.3, -0.3, 0.1), (0.3, 0.3, 0.1), (1, 0, 1, 1), 4),
        client.debug.sphere((0.0, 0.25, 0.1), 0.05, (0, 1, 0, 1)),
        client.debug.text((-0.2, 0.2, 0.1), "hello", (1, 1, 0, 1)),
    ]
    assert client.debug.draw(shapes, [1]) == 3
    with client.camera.stream("overhead", [1], max_frames=1) as stream:
        drawn = stream.next().pixels[0]
    client.debug.clear()
    assert not np.array_equal(plain, drawn)
    assert np.array_equal(drawn, _reference_frame(client, 1, "overhead", shapes))


def test_viewport_streams_the_free_camera(tabletop, needs_gl) -> None:
    _, client = tabletop
    info = client.viewport.info()
    assert (info.width, info.height) == (64, 64) and info.distance > 0
    with client.viewport.stream(1, 30, 1, lookat=(0, 0, 0), distance=1.5) as stream:
        frame = stream.next()
    cam = mujoco.MjvCamera()
    cam.lookat[:] = (0, 0, 0)
    cam.distance, cam.azimuth, cam.elevation = 1.5, 90.0, -45.0
    assert frame.message.camera == "viewport"
    assert np.array_equal(frame.pixels[0], _reference_frame(client, 1, cam))


def _scattered(model, n: int, seed: int) -> list:
    """``n`` datas of ``model`` in different states (pusher, box and target moved)."""
    rng = np.random.default_rng(seed)
    datas = []
    for _ in range(n):
        d = mujoco.MjData(model)
        d.qpos[:2] = rng.uniform(-0.3, 0.3, 2)
        d.qpos[2:4] = rng.uniform(-0.3, 0.3, 2)
        d.mocap_pos[0, :2] = rng.uniform(-0.3, 0.3, 2)
        mujoco.mj_forward(model, d)
        datas.append(d)
    return datas


def _overlay(i: int) -> list[sv.DebugShape]:
    """Debug shapes for env ``i``: none for every third env, else a line, sphere and label."""
    if i % 3 == 0:
        return []
    return [
        sv.DebugShape("line", (-0.3, -0.3, 0.1), (0.3, 0.1 * i, 0.1), 2 + i % 3, [1, 0, 1, 1]),
        sv.DebugShape("sphere", (0.05 * i - 0.2, 0.2, 0.1), size=0.04, rgba=[0, 1, 0, 1]),
        sv.DebugShape("text", (-0.2, 0.2, 0.1), rgba=[1, 1, 0, 1], text=f"env {i}"),
    ]


@pytest.mark.parametrize(("envs", "threads"), [(1, 1), (7, 1), (5, 2), (16, 2)])
def test_batch_renderer_pixels_equal_mujocos_renderer(envs: int, threads: int, needs_gl) -> None:
    model = mujoco.MjModel.from_xml_path(str(model_path("tabletop")))
    datas = _scattered(model, envs, seed=envs)
    debug = [_overlay(i) for i in range(envs)]
    free = mujoco.MjvCamera()
    free.lookat[:] = (0.1, 0, 0)
    free.distance, free.azimuth, free.elevation = 1.4, 60.0, -35.0
    ids = list(range(envs))[::-2]  # a subset, out of order: the others stay untouched
    with (
        BatchRenderer(model, 64, 64, threads=threads) as batch,
        mujoco.Renderer(model, 64, 64) as ref,
    ):
        assert batch.threads == threads
        for camera in ("overhead", "side", "", free):
            out = np.zeros((envs, 64, 64, 3), dtype=np.uint8)
            batch.render([model] * envs, datas, ids, camera, out, debug)
            for i in range(envs):
                if i not in ids:
                    assert not out[i].any(), f"env {i} was not asked for but was drawn"
                    continue
                ref.update_scene(datas[i], camera=camera if camera != "" else -1)
                draw_debug(ref.scene, debug[i])
                assert np.array_equal(out[i], ref.render()), f"env {i}, camera {camera!r}"


def test_batch_renderer_refuses_bad_arguments(needs_gl) -> None:
    model = mujoco.MjModel.from_xml_path(str(model_path("tabletop")))
    with pytest.raises(ValueError, match="threads must be >= 1"):
        BatchRenderer(model, 64, 64, threads=0)
    with BatchRenderer(model, 32, 48, threads=1) as batch:
        data = _scattered(model, 1, seed=0)
        with pytest.raises(ValueError, match=r"out must be uint8 of shape \(envs, 48, 32, 3\)"):
            batch.render([model], data, [0], "overhead", np.zeros((1, 32, 48, 3), np.uint8))
        with pytest.raises(ValueError, match="camera 'nope' does not exist"):
            batch.render([model], data, [0], "nope", np.zeros((1, 48, 32, 3), np.uint8))
        out = np.zeros((1, 48, 32, 3), np.uint8)  # a size other than the model's offscreen one
        batch.render([model], data, [0], "side", out)
        with mujoco.Renderer(model, 48, 32) as ref:
            ref.update_scene(data[0], camera="side")
            assert np.array_equal(out[0], ref.render())


def test_batch_renderer_jobs_run_in_its_threads_and_hand_back_errors(needs_gl) -> None:
    model = mujoco.MjModel.from_xml_path(str(model_path("tabletop")))
    datas = _scattered(model, 6, seed=2)
    out = np.zeros((6, 64, 64, 3), dtype=np.uint8)
    with BatchRenderer(model, 64, 64, threads=2) as batch, mujoco.Renderer(model, 64, 64) as ref:
        job = batch.submit([model] * 6, datas, range(6), "side", out)  # returns at once
        job.wait()
        assert job.done()
        for i in range(6):
            ref.update_scene(datas[i], camera="side")
            assert np.array_equal(out[i], ref.render()), f"env {i}"
        broken = [None] * 6  # no MjData: each thread's part fails
        with pytest.raises(TypeError):
            batch.render([model] * 6, broken, range(6), "side", out)
        out[:] = 0
        batch.render([model] * 6, datas, [4], "side", out)  # the threads live on
        ref.update_scene(datas[4], camera="side")
        assert np.array_equal(out[4], ref.render()) and not out[:4].any()
    with pytest.raises(RuntimeError, match="closed"):
        batch.submit([model], datas[:1], [0], "side", out[:1])


def test_frames_of_many_envs_over_render_threads(needs_gl) -> None:
    with launch_engine(9, "tabletop", render_threads=2) as handle:
        client = SharedMemoryClient(handle.name, timeout=30)
        try:
            actions = np.random.default_rng(1).uniform(-1, 1, (9, 2)).astype(np.float32)
            for _ in range(3):
                client.step(actions)
            shapes = [client.debug.sphere((0.1, -0.1, 0.1), 0.05, (0, 1, 1, 1))]
            client.debug.draw(shapes, [3])
            ids = [8, 0, 3, 5]
            with client.camera.stream("overhead", ids, rate_hz=30, max_frames=1) as stream:
                frame = stream.next()
            for k, i in enumerate(ids):
                want = _reference_frame(client, i, "overhead", shapes if i == 3 else ())
                assert np.array_equal(frame.pixels[k], want), f"env {i}"
        finally:
            client.close(shutdown_engine=True)


def test_an_env_is_drawn_again_only_after_a_change(needs_gl) -> None:
    engine = MujocoEngine(3, "tabletop", render_threads=1)
    try:
        ring = engine.transport.seg.e2c
        image = engine.transport.image
        engine.answer(sv.CameraStreamRequest("overhead", [1], rate_hz=1e6, max_frames=0))

        def tick() -> None:
            engine._image_ticks()
            while ring.try_read() is not None:  # the client's part: read the frame message
                pass

        tick()
        first = image[1].copy()
        assert first.any()
        image[1] = 0  # marks the slot: a frame sent without drawing leaves it as it is
        tick()
        assert not image[1].any(), "the env was drawn again with nothing changed"
        engine.transport.actions[:] = 1.0
        engine.step_batch()  # the pusher moves
        tick()
        assert image[1].any() and not np.array_equal(image[1], first)
        with mujoco.Renderer(engine.model, 64, 64) as ref:
            ref.update_scene(engine.datas[1], camera="overhead")
            assert np.array_equal(image[1], ref.render())
        image[1] = 0
        engine.answer(sv.DebugDrawRequest([1], [_overlay(1)[1]], clear=True))  # any command
        tick()
        assert image[1].any()
    finally:
        engine.close()


# -- errors, lifetime ----------------------------------------------------------------------------
def _raw_reply(client: SharedMemoryClient, data: bytes) -> cmd.Decoded:
    seg = client._seg
    seg.c2e.write(data)
    seg.action.ring()
    deadline = time.monotonic() + 10
    while (reply := seg.e2c.try_read()) is None:
        assert time.monotonic() < deadline, "the engine did not answer"
        time.sleep(0.001)
    return cmd.decode(reply)


def _envelope_of_unknown_payload(correlation_id: int) -> bytes:
    """A well-formed envelope whose payload is of a type no schema version defines."""
    fb = cmd.fb
    b = flatbuffers.Builder(64)
    fb.PingRequestStart(b)
    table = fb.PingRequestEnd(b)
    fb.EnvelopeStart(b)
    fb.EnvelopeAddCorrelationId(b, correlation_id)
    fb.EnvelopeAddMethod(b, 3000)
    fb.EnvelopeAddPayloadType(b, 200)
    fb.EnvelopeAddPayload(b, table)
    b.Finish(fb.EnvelopeEnd(b), file_identifier=b"MSHC")
    return bytes(b.Output())


def test_unknown_methods_and_malformed_envelopes_get_errors(tabletop) -> None:
    _, client = tabletop
    garbage = _raw_reply(client, b"not a flatbuffer at all")
    assert garbage.error and "not a mosaic shm Envelope" in garbage.error
    no_payload = _raw_reply(client, cmd.encode(None, 77, method=999, error="x"))
    assert no_payload.correlation_id == 77 and "without a request payload" in no_payload.error
    unknown = _raw_reply(client, _envelope_of_unknown_payload(correlation_id=55))
    assert unknown.correlation_id == 55 and "unknown payload type 200" in unknown.error
    with pytest.raises(NotImplementedError, match="does not serve CallRequest"):
        client.call("anything")
    assert client.ping(5).nonce == 5  # the engine lives on


def test_a_killed_engine_is_noticed_and_leaves_no_segment() -> None:
    handle = launch_engine(2, "reacher")
    client = SharedMemoryClient(handle.name, timeout=30)
    try:
        client.step(np.zeros((2, 2)))
        client.timeout = 1.0  # a TransportTimeoutError would mean: not noticed within 1 s
        os.kill(handle.pid, signal.SIGKILL)
        with pytest.raises(PeerGoneError):
            for _ in range(1000):
                client.step(np.zeros((2, 2)))
    finally:
        client.close()
        handle.close()
        left = segment_exists(handle.name)
        unlink_segment(handle.name)  # the test's own engine: gone even when the launcher fails
    assert not left, "the launcher left the killed engine's segment"


def test_a_killed_client_ends_the_engine_and_its_segment() -> None:
    handle = launch_engine(2, "reacher")
    code = (
        "import sys, time; from mosaic_sdk.shm.client import SharedMemoryClient as C; "
        "c = C(sys.argv[1]); c.step([0, 0, 0, 0]); print('attached', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, handle.name], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "attached"
        child.kill()
        child.wait()
        assert handle.wait(timeout=10) == 1  # the engine saw its client die and shut down
        assert not segment_exists(handle.name)
    finally:
        child.kill()
        handle.close()


def test_cli_starts_an_engine_from_one_command() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "engine", "mujoco", "--envs", "2"],
        stdout=subprocess.PIPE,
        text=True,
    )
    name = ""
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("MOSAIC_SHM_NAME="):
                name = line.strip().split("=", 1)[1]
                break
        client = SharedMemoryClient(name, timeout=30)
        assert client.step(np.zeros((2, 2)))[0].shape == (2, 6)
        client.close(shutdown_engine=True)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert name and not segment_exists(name)


def test_cli_serves_the_seeds_header_under_the_exact_name_asked() -> None:
    # `mosaic engine mujoco --layout lrbc --name N`: a seed-shaped client opens N itself
    # (no prefix) and reads the layout from the header.
    from mosaic_sdk.shm.lucky import LuckyClient

    name = f"LuckyEngine_test_cli_{os.getpid()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mosaic_sdk.cli", "engine", "mujoco", "--envs", "2"]
        + ["--layout", "lrbc", "--name", name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        printed = next(line for line in proc.stdout if line.startswith("MOSAIC_SHM_NAME="))
        assert printed.strip() == f"MOSAIC_SHM_NAME={name}"
        lucky = LuckyClient(name, timeout=30)
        obs, rewards, dones = lucky.step(np.zeros((2, 2), np.float32))
        assert obs.shape == (2, 6) and rewards.dtype == np.float32 and dones.dtype == np.uint8
        lucky.close()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert not segment_exists(name), "the engine left its segment"


def test_the_seed_shaped_client_randomises_the_engine_in_the_lrbc_layout() -> None:
    # As the seed writes it: LuckyClient(name).reset(env_ids, contract) on an engine that
    # writes the design's own header; the contract reaches the engine's domain randomisation.
    from mosaic_sdk.shm.lucky import LuckyClient

    handle = launch_engine(4, "reacher", layout="lrbc")
    lucky = LuckyClient(handle.name, timeout=30)
    try:
        assert lucky.obs.shape[0] == 4
        identity = {"seed": 7, "restore_defaults": True}
        actions = np.random.default_rng(1).uniform(-1, 1, (15, 4, 2)).astype(np.float32)

        def rollout() -> np.ndarray:
            return np.array([lucky.step(a)[0].copy() for a in actions])

        lucky.reset(None, identity)
        plain = rollout()
        lucky.reset(None, identity)
        lucky.reset([2], {"mass_scale_low": 3.0, "mass_scale_high": 3.0, "seed": 7})
        randomised = rollout()
        assert np.array_equal(plain[:, [0, 1, 3]], randomised[:, [0, 1, 3]])
        assert np.abs(plain[:, 2] - randomised[:, 2]).max() > 1e-3
        with pytest.raises(Exception, match="unknown keys \\['mass'\\]"):
            lucky.reset([0], {"mass": 2.0})
    finally:
        lucky.close()
        handle.close()
    assert not segment_exists(handle.name), "the engine left its segment"
