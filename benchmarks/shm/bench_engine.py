"""The MuJoCo reference engine (issue 35): commands, camera stream, batch step, each beside its
baseline in the same run.

- command round trip: the engine's services (ping, joint state, entity pose) beside the bare
  transport's ping (a ``SharedMemoryTransport`` that only serves commands), each with the
  command path of this tree ("new": the lean ``wire`` codec, command waits spinning with
  their own budget) and the path before it ("old": the FlatBuffers runtime's codec,
  ``MOSAIC_SHM_CODEC=reference``, and command waits sharing the 100 us step budget), measured in
  interleaved rounds so that both see the same machine load; target median < 100 us. Then
  the pieces of one round trip: encode/decode per codec, the ring copy, the engine's dispatch,
  and the wake-up (a bare step round trip is two wake-ups: futex only vs spinning);
- camera stream: 64 envs x 64x64 RGB at 30 frames/s per env requested, frames/s achieved (the
  client steps the envs between frames, so each frame is drawn anew) beside ``mujoco.Renderer``
  rendering the same 64 views in this process (the baseline), where a batch's time goes
  (mjv_updateScene, mjr_render, mjr_readPixels, the row flip), ``BatchRenderer`` in-process with
  1 and 2 threads, and the streamed pixels compared with that renderer's;
- batch step with the real model (``reacher``): the round trip of ``client.step`` beside the
  engine's own ``step_batch`` in this process (the physics), for growing env counts; transport
  overhead = round trip - physics (target < 1 ms), and the largest count whose round trip fits
  50 Hz (20 ms).

    python benchmarks/shm/bench_engine.py [--quick] [--commands-only]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from mosaic_sdk.shm.engines import load_mujoco  # noqa: E402

mujoco = load_mujoco()
from mosaic_sdk.shm import commands as cmd  # noqa: E402
from mosaic_sdk.shm import services as sv  # noqa: E402
from mosaic_sdk.shm.client import SharedMemoryClient  # noqa: E402
from mosaic_sdk.shm.engines import model_path  # noqa: E402
from mosaic_sdk.shm.engines.launch import launch_engine  # noqa: E402
from mosaic_sdk.shm.engines.mujoco_engine import MujocoEngine  # noqa: E402
from mosaic_sdk.shm.engines.render import BatchRenderer, Drawer  # noqa: E402
from mosaic_sdk.shm.processes import cpus  # noqa: E402
from mosaic_sdk.shm.segment import segment_name, unlink_segment  # noqa: E402
from mosaic_sdk.shm.sync import DEFAULT_COMMAND_SPIN, TransportTimeoutError  # noqa: E402
from mosaic_sdk.shm.transport import SharedMemoryTransport  # noqa: E402


def _us(samples: list[float]) -> str:
    a = np.array(samples) * 1e6
    return f"median {np.median(a):8.1f} us  p90 {np.percentile(a, 90):8.1f} us"


def _timed(fn, n: int, warmup: int = 20) -> list[float]:  # noqa: ANN001
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


# the path before this tree's command work: the runtime's codec, 100 us command spin budget
OLD = {"MOSAIC_SHM_CODEC": "reference", "MOSAIC_SHM_COMMAND_SPIN_US": "100"}
NEW = {"MOSAIC_SHM_CODEC": "wire", "MOSAIC_SHM_COMMAND_SPIN_US": str(DEFAULT_COMMAND_SPIN * 1e6)}


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` (an engine started meanwhile inherits them)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _bare_engine(name: str, env: dict[str, str], spin: float | None = None) -> None:
    os.environ.update(env)
    cmd.set_codec(env["MOSAIC_SHM_CODEC"])
    t = SharedMemoryTransport(1, 1, 1, name=name, spin=spin)
    try:
        while t.wait_for_actions() is not None:
            t.publish_frame()
    finally:
        t.close()


@contextlib.contextmanager
def _bare(env: dict[str, str], spin: float | None = None) -> Iterator[SharedMemoryClient]:
    """A client of a bare transport (commands and empty steps only) in a forked process."""
    name = segment_name()
    p = mp.get_context("fork").Process(target=_bare_engine, args=(name, env, spin), daemon=True)
    p.start()
    try:
        with _environ(env):
            client = SharedMemoryClient(name, spin=spin)
        try:
            yield client
        finally:
            cmd.set_codec(env["MOSAIC_SHM_CODEC"])
            client.close(shutdown_engine=True)
    finally:
        p.join(5)
        unlink_segment(name)


def _interleaved(cases: dict[str, tuple[dict[str, str], Any]], n: int, rounds: int = 10):  # noqa: ANN202
    """Samples of each case (its codec set for it), alternating rounds of ``n // rounds``."""
    out: dict[str, list[float]] = {k: [] for k in cases}
    for env, fn in cases.values():
        cmd.set_codec(env["MOSAIC_SHM_CODEC"])
        _timed(fn, 0, warmup=50)
    for _ in range(rounds):
        for key, (env, fn) in cases.items():
            cmd.set_codec(env["MOSAIC_SHM_CODEC"])
            out[key] += _timed(fn, max(1, n // rounds), warmup=5)
    cmd.set_codec("wire")
    return out


def bench_commands(n: int) -> None:
    print(f"== command round trip ({n} requests each, old/new interleaved)")
    print(f"   load average {os.getloadavg()[0]:.2f} at the start")
    with contextlib.ExitStack() as stack:
        bare = {k: stack.enter_context(_bare(env)) for k, env in (("old", OLD), ("new", NEW))}
        engines = {}
        for key, env in (("old", OLD), ("new", NEW)):
            with _environ(env):
                handle = stack.enter_context(launch_engine(16, "reacher"))
                client = SharedMemoryClient(handle.name)
            stack.callback(client.close, shutdown_engine=True)
            engines[key] = client
        cases: dict[str, tuple[dict[str, str], Any]] = {}
        for key, env in (("old", OLD), ("new", NEW)):
            c, e = bare[key], engines[key]
            cases[f"bare transport ping|{key}"] = (env, lambda c=c: c.ping(1))
            cases[f"engine ping|{key}"] = (env, lambda e=e: e.ping(1))
            cases[f"joint_state|{key}"] = (env, lambda e=e: e.mujoco.joint_state(3, ["x", "y"]))
            cases[f"entity pose|{key}"] = (env, lambda e=e: e.scene.pose("pointer", 3))
        samples = _interleaved(cases, n)
    base = float(np.median(samples["bare transport ping|new"]))
    print(f"   load average {os.getloadavg()[0]:.2f} at the end")
    print(f"  {'':31s} {'new (wire codec, command spin)':42s} {'old (runtime codec)':42s} old/new")
    for label in ("bare transport ping", "engine ping", "joint_state", "entity pose"):
        new, old = samples[f"{label}|new"], samples[f"{label}|old"]
        ratio = np.median(old) / np.median(new)
        tag = "baseline" if label.startswith("bare") else f"{np.median(new) / base:.2f}x bare"
        print(f"  {label:31s} {_us(new)}  {_us(old)}  {ratio:5.2f}x   ({tag})")
    verdict = "yes" if np.median(samples["engine ping|new"]) < 100e-6 else "no"
    print(f"  engine ping median under 100 us: {verdict}")
    bench_telemetry()


def bench_telemetry(frames: int = 1000) -> None:
    """A stream of ``frames`` telemetry frames (one per physics step, the engine running by
    itself): how long it takes to arrive, and whether every frame came, old and new."""
    print(f"== telemetry stream: {frames} frames, one per physics step, old and new")
    for key, env in (("new", NEW), ("old", OLD)):
        cmd.set_codec(env["MOSAIC_SHM_CODEC"])
        with _environ(env), launch_engine(4, "tabletop", image_size=(0, 0)) as engine:
            client = SharedMemoryClient(engine.name, timeout=30)
            client.scene.set_mode("pause")
            names = ["sim_time", "contact_count", "contact_force", "body_linvel"]
            stream = client.telemetry.stream(names, [0, 2], 0, max_frames=frames)
            t0 = time.perf_counter()
            client.scene.set_mode("run")
            got = [f.message.seq for f in stream]
            took = time.perf_counter() - t0
            client.scene.set_mode("lockstep")
            client.close(shutdown_engine=True)
        lost = "none lost" if got == list(range(frames)) else f"LOST/REORDERED ({len(got)} came)"
        rate = len(got) / took
        print(f"  {key}: {len(got)} frames in {took * 1e3:7.1f} ms ({rate:8.0f}/s), {lost}")
    cmd.set_codec("wire")


def _med(samples: list[float]) -> str:
    return f"{np.median(samples) * 1e6:7.1f} us"


def bench_pieces(n: int) -> None:
    """Where one command round trip goes: codec, ring copy, dispatch, wake-up."""
    print("== pieces of a command round trip (in-process medians, then the wake-up)")
    cmd.set_codec("wire")
    pose = sv.EntityPose(3, "body", "pointer", (1.0, 2.0, 3.0))
    joints = sv.JointStateResponse(["x", "y"], [1, 1], [1, 1], [0.1, 0.2], [0.3, 0.4], 1.5)
    messages = [
        ("ping request", cmd.PingRequest(nonce=1), None),
        ("ping response", cmd.PingResponse(nonce=1, frame_seq=5), None),
        ("joint_state request", sv.JointStateRequest(3, ["x", "y"]), None),
        ("joint_state response", joints, None),
        ("entity pose request", sv.GetEntityPoseRequest(3, "body", "pointer"), None),
        ("entity pose response", pose, cmd.fb.Method.GetEntityPose),
    ]
    head = ("encode wire", "encode runtime", "decode wire", "decode runtime")
    print(f"  {'':22s}" + "".join(f"{h:>16s}" for h in head))
    for label, message, method in messages:
        data = cmd.encode(message, 7, method=method)
        row = [
            _timed(lambda m=message, k=method: cmd.encode(m, 7, method=k), n),
            _timed(lambda m=message, k=method: cmd.encode_reference(m, 7, method=k), n),
            _timed(lambda d=data: cmd.decode(d), n),
            _timed(lambda d=data: cmd.decode_reference(d), n),
        ]
        print(f"  {label:22s}" + "".join(f"{_med(r):>16s}" for r in row))
    engine = MujocoEngine(16, "reacher")
    try:
        ring = engine.transport.seg.e2c
        data = cmd.encode(joints, 7)
        copy = _timed(lambda: (ring.try_write(data), ring.try_read()), n)
        print(f"  ring write + read of a {len(data)}-byte entry: {_med(copy)}")
        for label, message in (
            ("ping", cmd.PingRequest(1)),
            ("joint_state", sv.JointStateRequest(3, ["x", "y"])),
            ("entity pose", sv.GetEntityPoseRequest(3, "body", "pointer")),
        ):
            answer = _timed(lambda m=message: engine.answer(m), n)
            print(f"  engine dispatch + answer, {label}: {_med(answer)}")
    finally:
        engine.close()
    for label, spin in (("futex only (spin 0)", 0.0), ("spinning (spin 1 ms)", 1e-3)):
        with _bare(NEW, spin=spin) as client:
            rt = _timed(client.step, n)
        print(f"  bare step round trip = two wake-ups, {label:22s}: {_us(rt)}")


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _views(model, envs: int) -> list:  # noqa: ANN001
    """``envs`` datas of ``model`` in different states (what a batch of envs looks like)."""
    rng = np.random.default_rng(0)
    datas = []
    for _ in range(envs):
        d = mujoco.MjData(model)
        d.qpos[:4] = rng.uniform(-0.3, 0.3, 4)
        d.mocap_pos[0, :2] = rng.uniform(-0.3, 0.3, 2)
        mujoco.mj_forward(model, d)
        datas.append(d)
    return datas


def _renderer_bound(model, datas: list, reps: int) -> tuple[float, float]:  # noqa: ANN001
    """mujoco.Renderer drawing every view, in this process: (batches/s, CPU ms per batch)."""
    with mujoco.Renderer(model, 64, 64) as r:

        def render_all() -> None:
            for d in datas:
                r.update_scene(d, camera="overhead")
                r.render()

        cpu0 = time.process_time()
        wall = _timed(render_all, reps, warmup=2)
        cpu = (time.process_time() - cpu0) / (reps + 2)
    return 1.0 / float(np.median(wall)), cpu * 1e3


def _phases(model, datas: list, reps: int) -> dict[str, float]:  # noqa: ANN001
    """Median ms per batch of each step of drawing every view, as mujoco.Renderer does it."""
    drawer = Drawer(model, 64, 64)
    cam = mujoco.MjvCamera()
    cam.type, cam.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, 0
    out = np.empty((len(datas), 64, 64, 3), np.uint8)
    totals: dict[str, list[float]] = {k: [] for k in ("update", "render", "read", "copy")}
    try:
        for _ in range(reps):
            t = dict.fromkeys(totals, 0.0)
            for i, d in enumerate(datas):
                a = time.perf_counter()
                mujoco.mjv_updateScene(
                    model, d, drawer.option, None, cam, mujoco.mjtCatBit.mjCAT_ALL, drawer.scene
                )
                b = time.perf_counter()
                mujoco.mjr_render(drawer.rect, drawer.scene, drawer.con)
                c = time.perf_counter()
                mujoco.mjr_readPixels(drawer.rows, None, drawer.rect, drawer.con)
                e = time.perf_counter()
                out[i] = drawer.rows[::-1]
                f = time.perf_counter()
                t["update"] += b - a
                t["render"] += c - b
                t["read"] += e - c
                t["copy"] += f - e
            for k, v in t.items():
                totals[k].append(v)
    finally:
        drawer.close()
    return {k: float(np.median(v)) * 1e3 for k, v in totals.items()}


def bench_camera(seconds: float, envs: int = 64) -> None:
    print(f"== camera stream: {envs} envs x 64x64 RGB, 30 frames/s per env requested")
    print(f"  load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    reps = 10
    model = mujoco.MjModel.from_xml_path(str(model_path("tabletop")))
    datas = _views(model, envs)
    xml = model_path("tabletop").read_text()
    before = {'size="0.6 0.6 0.1"': 'size="0.6 0.6 0.01"', ' numslices="12" numstacks="4"': ""}
    for now, was in before.items():  # the model's drawing detail until now (same physics)
        assert now in xml, f"tabletop.xml changed: {now} is gone"
        xml = xml.replace(now, was)
    old = mujoco.MjModel.from_xml_string(xml)
    old_bound, old_cpu = _renderer_bound(old, _views(old, envs), reps)
    bound, bound_cpu = _renderer_bound(model, datas, reps)
    phases = _phases(model, datas, reps)
    batch, batch_cpu = {}, {}
    for threads in (1, 2):
        with BatchRenderer(model, 64, 64, threads=threads) as br:
            out = np.empty((envs, 64, 64, 3), np.uint8)
            ids = list(range(envs))
            cpu0 = time.process_time()  # every thread of this process
            wall = _timed(lambda: br.render([model] * envs, datas, ids, "overhead", out), reps, 2)  # noqa: B023
            batch_cpu[threads] = (time.process_time() - cpu0) / (reps + 2) * 1e3
            batch[threads] = 1.0 / float(np.median(wall))
    print(
        f"  baseline: mujoco.Renderer in-process, {envs} views: {bound:6.1f} batches/s "
        f"({bound_cpu:5.1f} ms CPU per batch); the model as it was (floor of 14,400 quads, "
        "MuJoCo's default 28 slices x 16 stacks): "
        f"{old_bound:6.1f} batches/s ({old_cpu:5.1f} ms CPU)"
    )
    print(
        "  where a batch's time goes (ms, medians): "
        + ", ".join(f"{k} {v:5.1f}" for k, v in phases.items())
        + " (with a software GL such as llvmpipe, read includes the drawing)"
    )
    print(
        f"  BatchRenderer in-process: 1 thread {batch[1]:6.1f} batches/s "
        f"({batch[1] / bound:.2f}x baseline, {batch_cpu[1]:5.1f} ms CPU), 2 threads "
        f"{batch[2]:6.1f} batches/s ({batch[2] / bound:.2f}x baseline, {batch_cpu[2]:5.1f} ms CPU)"
    )
    cores = cpus()
    print(
        f"  what {cores} idle CPUs allow at these CPU costs: mujoco.Renderer "
        f"{cores * 1e3 / bound_cpu:5.1f} batches/s (the model as it was: "
        f"{cores * 1e3 / old_cpu:5.1f}), BatchRenderer {cores * 1e3 / min(batch_cpu.values()):5.1f}"
    )
    with launch_engine(envs, "tabletop", image_size=(64, 64)) as engine:
        client = SharedMemoryClient(engine.name, timeout=30)
        actions = np.random.default_rng(0).uniform(-1, 1, (envs, 2)).astype(np.float32)
        client.step(actions)
        stream = client.camera.stream("overhead", rate_hz=30)
        stream.next()
        cpu0, t0, frames = _cpu_seconds(engine.pid), time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:  # a new state for every frame
            client.step(actions)
            last = stream.next()
            frames += 1
        rate = frames / (time.perf_counter() - t0)
        cpu1 = _cpu_seconds(engine.pid)
        last = stream.next()  # handed over after the client read the one before: the last state
        state = client.mujoco.joint_state(5)
        target = client.scene.pose("target", 5)
        t0, still = time.perf_counter(), 0
        while time.perf_counter() - t0 < min(seconds, 1.0):  # nothing changes between frames
            stream.next()
            still += 1
        still_rate = still / (time.perf_counter() - t0)
        stream.stop()
        quiet, _ = _steps_beside(client, actions, None, seconds)
        stream = client.camera.stream("overhead", rate_hz=30)
        busy, beside = _steps_beside(client, actions, stream, seconds)
        stream.stop()
        client.close(shutdown_engine=True)
    data = mujoco.MjData(model)
    data.qpos[:] = state.qpos
    data.qvel[:] = state.qvel
    data.mocap_pos[0] = target.pos
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 64, 64) as r:
        r.update_scene(data, camera="overhead")
        same = np.array_equal(r.render(), last.pixels[5])
    per_frame = (cpu1 - cpu0) / frames if cpu0 is not None and cpu1 is not None else None
    cpu = f"{per_frame * 1e3:.1f} ms" if per_frame else "n/a"
    print(
        f"  streamed through the engine, a step between frames: {rate:6.1f} frames/s per env "
        f"({rate / 30:.2f}x the 30 fps asked, {rate / bound:.2f}x the in-process baseline; "
        f"engine CPU {cpu} per frame incl. the step); pixels equal to mujoco.Renderer's: {same}"
    )
    if per_frame:
        print(
            f"  the engine's CPU cost allows {cores / per_frame:5.1f} frames/s per env on idle CPUs"
        )
    print(
        f"  streamed, nothing changed between frames (sent without drawing): "
        f"{still_rate:6.1f} frames/s per env"
    )
    print(
        f"  hot-path step of the {envs} envs, no stream: {_us(quiet)}; beside a 30 Hz stream of "
        f"all {envs} (a frame is drawn between two steps when due): {_us(busy)}, "
        f"p99 {np.percentile(busy, 99) * 1e3:.1f} ms, {beside:.1f} frames/s per env"
    )
    print(f"  load average after: {os.getloadavg()[0]:.2f}")


def _steps_beside(client, actions, stream, seconds: float) -> tuple[list[float], float]:  # noqa: ANN001
    """Step round trips for ``seconds``, reading ``stream``'s frames as they come (if any)."""
    rts, frames, t0 = [], 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        t = time.perf_counter()
        client.step(actions)
        rts.append(time.perf_counter() - t)
        if stream is not None:
            try:
                stream.next(timeout=0)
                frames += 1
            except TransportTimeoutError:
                pass
    return rts, frames / (time.perf_counter() - t0)


def bench_step(counts: list[int], n: int) -> None:
    print("== batch step, reacher model (physics = the engine's own step_batch in-process)")
    best = None
    for envs in counts:
        local = MujocoEngine(envs, "reacher")
        try:
            local.transport.actions[:] = 0.1
            physics = _timed(local.step_batch, n, warmup=3)
        finally:
            local.close()
        with launch_engine(envs, "reacher") as engine:
            client = SharedMemoryClient(engine.name, timeout=60)
            actions = np.full((envs, 2), 0.1, dtype=np.float32)
            rt = _timed(lambda: client.step(actions), n, warmup=3)  # noqa: B023
            client.close(shutdown_engine=True)
        overhead = float(np.median(rt) - np.median(physics))
        fits = np.median(rt) <= 0.020
        best = envs if fits else best
        print(
            f"  {envs:5d} envs: round trip {_us(rt)} | physics {_us(physics)} | "
            f"transport overhead {overhead * 1e6:7.1f} us | 50 Hz: {'yes' if fits else 'no'}"
        )
    print(f"  largest env count within 50 Hz: {best}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--commands-only", action="store_true", help="only the command channel")
    args = parser.parse_args()
    n = 200 if args.quick else 2000
    print(
        f"mujoco {mujoco.__version__}, MUJOCO_GL={os.environ['MUJOCO_GL']}, {os.cpu_count()} CPUs"
    )
    bench_commands(n)
    bench_pieces(n)
    if args.commands_only:
        return
    bench_camera(3.0 if args.quick else 10.0)
    bench_step(
        [64, 256, 1024] if args.quick else [64, 256, 512, 1024, 2048, 4096],
        30 if args.quick else 100,
    )


if __name__ == "__main__":
    main()
