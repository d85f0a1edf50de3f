"""``mosaic engine mujoco``: a MuJoCo reference engine serving N envs over shared memory."""

from __future__ import annotations

import argparse
import importlib.util
import signal
from typing import Any

from mosaic_sdk.cli import UsageError


def _image_size(text: str) -> tuple[int, int]:
    if text == "none":
        return (0, 0)
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"image size {text!r}: give WIDTHxHEIGHT (e.g. 64x64) or 'none'"
        ) from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"image size {text!r} must be positive")
    return (width, height)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "engine",
        help="serve a reference physics engine over the shm transport",
        description="Start a reference engine that owns a shared-memory segment and serves "
        "the hot path and the engine services until its client closes it.",
    )
    engines = parser.add_subparsers(dest="engine", metavar="ENGINE")
    mj = engines.add_parser(
        "mujoco",
        help="MuJoCo: N envs of an MJCF model (the mujoco extra)",
        description="A MuJoCo engine: one MjData per env, stepped in batches; the Agent, "
        "MuJoCo, Telemetry, Scene, Camera, Viewport and Debug services on the command channel. "
        "Prints the segment name, then serves until the client sends Close (or dies).",
    )
    mj.add_argument("--envs", type=int, required=True, help="number of environments")
    mj.add_argument(
        "--model",
        default="reacher",
        help="a shipped model (reacher, tabletop) or an MJCF file (default: reacher)",
    )
    mj.add_argument(
        "--layout",
        choices=("mshm", "lrbc"),
        default="mshm",
        help="segment header: mshm (ours) or lrbc (the seed design's)",
    )
    mj.add_argument(
        "--name",
        help="segment name (default: a fresh one); with --layout lrbc exactly this name, else "
        "$LUCKY_SHM_NAME, as the design's clients open it",
    )
    mj.add_argument(
        "--image",
        type=_image_size,
        help="image region WIDTHxHEIGHT, or 'none' (default: 64x64 when the model has cameras)",
    )
    mj.add_argument("--seed", type=int, default=0, help="seed of the envs' random streams")
    mj.add_argument(
        "--gpu-obs",
        nargs="?",
        const="cuda:0",
        default=None,
        metavar="DEVICE",
        help="also export the observations as a CUDA buffer (cuda:N, default cuda:0) for "
        "client.obs_tensor(); needs a CUDA build of PyTorch and an NVIDIA GPU",
    )
    mj.set_defaults(handler=_run)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


class _Stopped(Exception):
    """SIGTERM arrived: raised in the main thread, out of whatever wait it was in."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # one is enough: the clean-up runs undisturbed
    raise _Stopped(signum)


def _run(args: argparse.Namespace) -> int:
    if args.envs < 1:
        raise UsageError(f"--envs must be at least 1, got {args.envs}")
    # The engine package imports mujoco: only when this command runs (CLI start-up time).
    from mosaic_sdk.shm.engines.launch import MUJOCO_HINT, launch_engine

    if importlib.util.find_spec("mujoco") is None:
        raise UsageError(
            f"mosaic engine mujoco needs MuJoCo, which is not installed: {MUJOCO_HINT}"
        )
    try:
        handle = launch_engine(
            args.envs,
            args.model,
            name=args.name,
            layout=args.layout,
            image_size=args.image,
            seed=args.seed,
            gpu_obs=args.gpu_obs,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"mosaic engine mujoco: serving {args.envs} envs of {args.model!r}", flush=True)
    print(f"MOSAIC_SHM_NAME={handle.name}", flush=True)

    # The handler only raises: the waiting and stopping happen here, not inside the handler
    # (a wait there would wait on the lock of the wait it interrupted).
    try:
        signal.signal(signal.SIGTERM, _stop)
        code = handle.wait()
        handle.close()
    except _Stopped as stopped:
        handle.close(timeout=0.0)  # SIGTERM to the engine: it closes and removes its segment
        return 128 + stopped.signum
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        handle.close(timeout=1.0)
        return 130
    return 0 if code == 0 else 1
