"""What the ``sitecustomize`` patch does in an env subprocess, and how the worker asks for it.

:func:`subprocess_environment` returns the variables the worker adds to ``os.environ`` for
its children: ``PYTHONPATH`` gains the directory that holds only our ``sitecustomize``, and
``CLEANRL_WORKER_SITECUSTOMIZE=1`` switches it on. :func:`install_in_subprocess` runs in the
child at interpreter start-up and patches ``gymnasium.make`` (telemetry through ``info``,
render mode for FastLane, the compatibility layer when asked).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SWITCH = "CLEANRL_WORKER_SITECUSTOMIZE"
SITE_DIR = Path(__file__).resolve().parent / "_site"


def subprocess_environment(
    environ: Mapping[str, str],
    *,
    compat: bool,
    render_frames: bool,
    owner_pid: int,
    steps: bool = True,
    step_every: int = 20,
    step_rate: float | None = None,
) -> dict[str, str]:
    """Variables that switch the patch on in children of this process."""
    path = environ.get("PYTHONPATH", "")
    parts = [p for p in path.split(os.pathsep) if p and Path(p).resolve() != SITE_DIR]
    return {
        "PYTHONPATH": os.pathsep.join([str(SITE_DIR), *parts]),
        SWITCH: "1",
        "CLEANRL_WORKER_GYM_COMPAT": "1" if compat else "0",
        "CLEANRL_WORKER_RENDER": "1" if render_frames else "0",
        "CLEANRL_WORKER_PID": str(owner_pid),
        "CLEANRL_WORKER_STEPS": "1" if steps else "0",
        "CLEANRL_WORKER_STEP_EVERY": str(step_every),
        "CLEANRL_WORKER_STEP_RATE": str(step_rate or 0),
    }


def install_in_subprocess(environ: Mapping[str, str]) -> object | None:
    """Patch gymnasium in this (child) process; returns the Instrumentation, or None when the
    switch is off or this is the worker process itself."""
    if environ.get(SWITCH) != "1":
        return None
    owner = int(environ.get("CLEANRL_WORKER_PID", "0") or 0)
    if owner == os.getpid():
        return None
    from cleanrl_worker.env_telemetry import TelemetrySink
    from cleanrl_worker.instrument import Instrumentation

    rate = float(environ.get("CLEANRL_WORKER_STEP_RATE", "0") or 0)
    every = int(environ.get("CLEANRL_WORKER_STEP_EVERY", "20") or 20)
    steps = environ.get("CLEANRL_WORKER_STEPS", "1") == "1"
    sink = TelemetrySink(
        None, steps=steps, step_every=every, step_rate=rate or None, owner_pid=owner
    )
    inst = Instrumentation(
        sink,
        environ.get("MOSAIC_RUN_ID", "subprocess"),
        compat=environ.get("CLEANRL_WORKER_GYM_COMPAT") == "1",
        render_frames=environ.get("CLEANRL_WORKER_RENDER") == "1",
    )
    return inst.install()


__all__ = ["SITE_DIR", "SWITCH", "install_in_subprocess", "subprocess_environment"]
