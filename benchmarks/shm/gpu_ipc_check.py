"""GPU observations over CUDA IPC, checked for real on a machine with an NVIDIA GPU.

An engine process (a fresh interpreter: CUDA does not survive a fork) exports its observations
as a CUDA buffer (``export_gpu_obs``); each step it adds the first action column to the CPU
obs region and uploads it, having first read the device buffer back into the CPU region when
the second action column says so (to see the client's writes). The client opens the
header's IPC handle (``obs_tensor()``) in each header layout (``SharedMemoryClient`` on
"mshm", ``LuckyClient`` on "lrbc") and checks:

- the header: mode 1 (CUDA IPC), the device, the handle;
- the tensor: float32 ``(num_envs, obs_size)`` on that device, the same device pointer as the
  opened handle and the same tensor object at every step (no copy);
- values: after a step it equals the CPU obs region; a write by the client into the tensor is
  seen by the engine at the next step (the same memory both ways).

Then it times, per step, getting the observations onto the trainer's GPU: the IPC tensor
(``step`` + ``obs_tensor()``) beside the seed design's CPU path (``step`` +
``torch.from_numpy(obs).cuda()``), medians over ``--steps`` steps, and prints the ratio.
With ``--mujoco`` it also starts the MuJoCo reference engine with ``gpu_obs`` and compares its
tensor with its CPU obs after a few steps (needs the mujoco extra).

    python benchmarks/shm/gpu_ipc_check.py [--envs 4096] [--obs 100] [--steps 300] [--mujoco]

Exit status 0 when every check passed; without torch's CUDA build or a GPU it says so and
exits 2.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from mosaic_sdk.shm.client import SharedMemoryClient
from mosaic_sdk.shm.gpu import GpuUnavailableError, cuda_runtime
from mosaic_sdk.shm.lucky import LuckyClient
from mosaic_sdk.shm.segment import segment_exists
from mosaic_sdk.shm.transport import SharedMemoryTransport

ACT = 12


def engine(name: str, layout: str, envs: int, obs: int) -> int:
    """The engine process: exports, then steps until the client closes it."""
    t = SharedMemoryTransport(envs, obs, ACT, name=name, layout=layout, timeout=120)
    gpu = t.export_gpu_obs(0)
    t.obs[:] = 0.0
    gpu.upload(t.obs)
    print("ready", flush=True)
    while (seq := t.wait_for_actions()) is not None:
        if t.actions[0, 1]:  # the client asks: read back what it wrote into the device buffer
            gpu.download(t.obs)
        t.obs[:] += t.actions[:, :1]
        gpu.upload(t.obs)
        t.publish_frame(seq)
    t.close_gpu_obs()
    t.close()
    return 0


def check(layout: str, envs: int, obs_size: int, steps: int) -> bool:
    import torch  # optional dependency: this script is for GPU machines

    name = f"gpu-check-{secrets.token_hex(4)}"
    args = [sys.executable, __file__, "--engine", name, layout, str(envs), str(obs_size)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    ok = True

    def verdict(what: str, good: bool) -> None:
        nonlocal ok
        ok = ok and good
        print(f"  [{'ok' if good else 'FAILED'}] {what}")

    print(f"layout {layout}: {envs} envs x {obs_size} obs")
    try:
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            print("  [FAILED] the engine did not start (its error is above)")
            return False
        view = None
        lucky = LuckyClient(name, timeout=60) if layout == "lrbc" else None
        client = lucky.client if lucky else SharedMemoryClient(name, timeout=60)
        try:
            f = client.gpu_fields
            print(
                f"  header: mode {f.mode} ({f.mode_name}), device {f.device}, "
                f"handle {f.handle[:16].hex()}..."
            )
            verdict("mode 1 (CUDA IPC) and gpu_available 1", f.mode == 1 and f.available == 1)
            tensor = lucky.obs_tensor() if lucky else client.obs_tensor()
            view = client.obs_cuda_array()
            assert view is not None
            print(
                f"  tensor: {tuple(tensor.shape)} {tensor.dtype} on {tensor.device}, "
                f"pointer 0x{tensor.data_ptr():x}"
            )
            verdict(
                "float32 (num_envs, obs_size) on the header's device",
                tuple(tensor.shape) == (envs, obs_size)
                and tensor.dtype == torch.float32
                and tensor.device == torch.device("cuda", f.device),
            )
            verdict("the tensor is the opened handle's memory", tensor.data_ptr() == view.ptr)
            client.step(np.ones((envs, ACT), np.float32))
            same = client.obs_tensor() is tensor
            verdict("the same tensor object after a step (no copy per step)", same)
            cpu = torch.from_numpy(client.obs.copy())
            verdict(
                "after a step the tensor equals the CPU obs (all 1)",
                torch.equal(tensor.cpu(), cpu) and bool((cpu == 1).all()),
            )
            tensor.fill_(10.0)
            torch.cuda.synchronize()
            client.step(np.ones((envs, ACT), np.float32))
            verdict(
                "a client write into the tensor reaches the engine (CPU obs all 11)",
                bool((client.obs == 11.0).all()),
            )
            verdict(
                "and the tensor shows the engine's next step (all 11)", bool((tensor == 11.0).all())
            )
            ipc, copy = [], []
            actions = np.zeros((envs, ACT), np.float32)
            for _ in range(steps):
                start = time.perf_counter()
                client.step(actions)
                client.obs_tensor().sum().item()
                ipc.append(time.perf_counter() - start)
                start = time.perf_counter()
                client.step(actions)
                torch.from_numpy(client.obs).cuda().sum().item()
                copy.append(time.perf_counter() - start)
            a, b = statistics.median(ipc), statistics.median(copy)
            print(
                f"  step + obs on the GPU, median of {steps}: IPC tensor {a * 1e6:.0f} us "
                f"(engine uploads), CPU obs + .cuda() {b * 1e6:.0f} us (baseline); "
                f"ratio {b / a:.2f}x"
            )
        finally:
            del view
            if lucky:
                lucky.client.close(shutdown_engine=True)
            else:
                client.close(shutdown_engine=True)
        verdict("the engine exited cleanly", process.wait(60) == 0)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    prefix = "" if layout == "lrbc" else "mosaic.shm."
    verdict("no segment left", not segment_exists(prefix + name))
    return ok


def check_mujoco(steps: int = 5) -> bool:
    import torch  # optional dependency: this script is for GPU machines

    from mosaic_sdk.shm.engines.launch import launch_engine

    print("MuJoCo engine (reacher, 8 envs, gpu_obs=cuda:0)")
    with launch_engine(8, "reacher", gpu_obs="cuda:0", image_size=(0, 0)) as handle:
        client = SharedMemoryClient(handle.name, timeout=60)
        try:
            tensor = client.obs_tensor()
            for _ in range(steps):
                client.step(np.full((8, client.actions.shape[1]), 0.3, np.float32))
            good = torch.equal(tensor.cpu(), torch.from_numpy(client.obs.copy()))
            print(
                f"  [{'ok' if good else 'FAILED'}] tensor equals the CPU obs after "
                f"{steps} steps (obs[0,:4] = {client.obs[0, :4]})"
            )
        finally:
            client.close(shutdown_engine=True)
    return good


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=4096)
    parser.add_argument("--obs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--mujoco", action="store_true", help="also check the MuJoCo engine")
    parser.add_argument("--engine", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.engine:
        name, layout, envs, obs = args.engine
        return engine(name, layout, int(envs), int(obs))
    try:
        cuda_runtime()
    except GpuUnavailableError as exc:
        print(f"no CUDA here, nothing checked: {exc}")
        return 2
    import torch  # optional dependency: this script is for GPU machines

    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    ok = all([check(layout, args.envs, args.obs, args.steps) for layout in ("mshm", "lrbc")])
    if args.mujoco:
        ok = check_mujoco() and ok
    print("ALL CHECKS PASSED" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
