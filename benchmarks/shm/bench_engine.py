"""The MuJoCo reference engine (issue 35): commands, camera stream, batch step, each beside its
baseline in the same run.

- command round trip: the engine's services (ping, joint state) beside the bare transport's
  ping (a ``SharedMemoryTransport`` that only serves commands); target median < 100 us;
- camera stream: 64 envs x 64x64 RGB at 30 frames/s per env requested, frames/s achieved beside
  ``mujoco.Renderer`` rendering the same 64 views in this process (the rendering bound), and
  the streamed pixels compared with that renderer's;
- batch step with the real model (``reacher``): the round trip of ``client.step`` beside the
  engine's own ``step_batch`` in this process (the physics), for growing env counts; transport
  overhead = round trip - physics (target < 1 ms), and the largest count whose round trip fits
  50 Hz (20 ms).

    python benchmarks/shm/bench_engine.py [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

import numpy as np

from mosaic_sdk.shm.engines import load_mujoco  # noqa: E402

mujoco = load_mujoco()
from mosaic_sdk.shm.client import SharedMemoryClient  # noqa: E402
from mosaic_sdk.shm.engines import model_path  # noqa: E402
from mosaic_sdk.shm.engines.launch import launch_engine  # noqa: E402
from mosaic_sdk.shm.engines.mujoco_engine import MujocoEngine  # noqa: E402
from mosaic_sdk.shm.segment import segment_name, unlink_segment  # noqa: E402
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


def _bare_engine(name: str) -> None:
    t = SharedMemoryTransport(1, 1, 1, name=name)
    try:
        while t.wait_for_actions() is not None:
            t.publish_frame()
    finally:
        t.close()


def bench_commands(n: int) -> None:
    print(f"== command round trip ({n} requests each)")
    name = segment_name()
    p = mp.get_context("fork").Process(target=_bare_engine, args=(name,), daemon=True)
    p.start()
    try:
        bare = SharedMemoryClient(name)
        base = _timed(lambda: bare.ping(1), n)
        bare.close(shutdown_engine=True)
    finally:
        p.join(5)
        unlink_segment(name)
    with launch_engine(16, "reacher") as engine:
        client = SharedMemoryClient(engine.name)
        ping = _timed(lambda: client.ping(1), n)
        joints = _timed(lambda: client.mujoco.joint_state(3, ["x", "y"]), n)
        pose = _timed(lambda: client.scene.pose("pointer", 3), n)
        client.close(shutdown_engine=True)
    ref = np.median(base)
    print(f"  baseline: bare transport ping   {_us(base)}")
    for label, s in (("engine ping", ping), ("joint_state", joints), ("entity pose", pose)):
        print(f"  {label:31s} {_us(s)}  ({np.median(s) / ref:.2f}x baseline)")


def bench_camera(seconds: float, envs: int = 64) -> None:
    print(f"== camera stream: {envs} envs x 64x64 RGB, 30 frames/s per env requested")
    model = mujoco.MjModel.from_xml_path(str(model_path("tabletop")))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 64, 64) as r:

        def render_all() -> None:
            for _ in range(envs):
                r.update_scene(data, camera="overhead")
                r.render()

        base = _timed(render_all, 10, warmup=2)
    bound = 1.0 / float(np.median(base))
    with launch_engine(envs, "tabletop", image_size=(64, 64)) as engine:
        client = SharedMemoryClient(engine.name, timeout=30)
        stream = client.camera.stream("overhead", rate_hz=30)
        stream.next()
        t0, frames = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            last = stream.next()
            frames += 1
        rate = frames / (time.perf_counter() - t0)
        stream.stop()
        state = client.mujoco.joint_state(5)
        target = client.scene.pose("target", 5)
        client.close(shutdown_engine=True)
    data.qpos[:] = state.qpos
    data.qvel[:] = state.qvel
    data.mocap_pos[0] = target.pos
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 64, 64) as r:
        r.update_scene(data, camera="overhead")
        same = np.array_equal(r.render(), last.pixels[5])
    print(f"  baseline: mujoco.Renderer in-process, {envs} views: {bound:6.1f} batches/s")
    print(
        f"  streamed through the engine:              {rate:6.1f} frames/s per env "
        f"({rate / 30:.2f}x the 30 fps asked, {rate / bound:.2f}x the in-process bound); "
        f"pixels equal to mujoco.Renderer's: {same}"
    )


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
    args = parser.parse_args()
    n = 200 if args.quick else 2000
    print(
        f"mujoco {mujoco.__version__}, MUJOCO_GL={os.environ['MUJOCO_GL']}, {os.cpu_count()} CPUs"
    )
    bench_commands(n)
    bench_camera(3.0 if args.quick else 10.0)
    bench_step(
        [64, 256, 1024] if args.quick else [64, 256, 512, 1024, 2048, 4096],
        30 if args.quick else 100,
    )


if __name__ == "__main__":
    main()
