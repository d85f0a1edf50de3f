"""Discovery cost per installed SDK worker: the ``platform_factory`` entry point beside today's
module entry point. Target: under 50 ms per worker.

For every installed ``mosaic.workers`` entry point of an SDK worker, each case runs in a fresh
interpreter (discovery happens once per process, so the cold import is the cost that counts),
times only the discovery of that one worker inside the process (``perf_counter``), and the
cases are interleaved over ``--runs`` rounds; medians are printed.

- ``import plugin module``: ``import pkg.plugin`` alone, the floor every form pays;
- ``SDK, module entry point`` (baseline): ``discover_workers`` of ``name = "pkg.plugin"``,
  the form SDK workers declared before, after a discovery without workers in the same
  process (the plugin framework and its built-in plugins are a fixed cost, paid once);
- ``SDK, factory entry point`` (ours): the same with ``name = "pkg.plugin:get_worker_metadata"``;
- ``platform, module`` (baseline): the platform's ``ep.load()()`` on the module form, with
  ``gym_gui.core.worker`` imported first as the platform has it: the time until it fails with
  ``'module' object is not callable``;
- ``platform, factory`` (ours): the platform's ``ep.load()()`` of the factory, the
  ``isinstance`` checks included.

The platform cases run *cold* (the first SDK worker in the process: it pays for importing
pydantic and pluggy, which the SDK's models need), with *pydantic in* (imported first, as the
platform's GUI does for its own validation) and *warm* (``mosaic_sdk.contract`` and
``mosaic_sdk.hookspecs`` imported first, as after any earlier SDK worker). The target applies
per worker, so to the warm figures; the difference to cold is paid once per process, by the
first SDK worker, whichever entry point it declares.

``gym_gui.core.worker`` is a platform-shaped package written into a temporary directory
(frozen dataclasses with the platform's fields), or the platform's own with
``--gym-gui-root DIR`` (the directory holding its ``gym_gui`` package).

    python benchmarks/plugins/discovery_cost.py [--runs 15] [--gym-gui-root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

PLATFORM_SHAPED = """\
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class WorkerMetadata:
    name: str
    version: str
    description: str
    author: str
    homepage: str
    upstream_library: Optional[str]
    upstream_version: Optional[str]
    license: str


@dataclass(frozen=True)
class WorkerCapabilities:
    worker_type: str
    supported_paradigms: tuple
    env_families: tuple
    action_spaces: tuple
    observation_spaces: tuple
    max_agents: int
    supports_self_play: bool
    supports_population: bool
    supports_checkpointing: bool
    supports_pause_resume: bool
    requires_gpu: bool
    gpu_memory_mb: Optional[int]
    cpu_cores: int
    estimated_memory_mb: int
"""

#: One case in a fresh interpreter: prints the milliseconds of the timed part as JSON.
PROBE = r"""
import importlib, json, sys, time
from importlib.metadata import EntryPoint
mode, name, value = sys.argv[1:4]
if mode.startswith("sdk"):
    from mosaic_sdk.plugins.discovery import discover_workers
    env = {"MOSAIC_DISABLE_PLUGIN_AUTOLOAD": "1"}
    discover_workers(environ=env)  # the fixed, once-per-process part (the built-in plugins)
    env["MOSAIC_PLUGINS"] = f"{name}={value}"
    t0 = time.perf_counter()
    discover_workers(environ=env).get(name)
    ms = (time.perf_counter() - t0) * 1e3
elif mode == "import":
    t0 = time.perf_counter()
    importlib.import_module(value.partition(":")[0])
    ms = (time.perf_counter() - t0) * 1e3
else:
    from gym_gui.core.worker import WorkerCapabilities, WorkerMetadata
    if mode.endswith("warm"):  # what an earlier SDK worker in this process has imported
        import mosaic_sdk.contract, mosaic_sdk.hookspecs
    elif mode.endswith("pydantic"):  # the GUI imports pydantic for its own validation
        from pydantic import BaseModel, Field
    ep = EntryPoint(name, value, "mosaic.workers")
    t0 = time.perf_counter()
    ok = True
    try:
        meta, caps = ep.load()()
        ok = isinstance(meta, WorkerMetadata) and isinstance(caps, WorkerCapabilities)
    except TypeError:
        ok = False
    ms = (time.perf_counter() - t0) * 1e3
    if ok != ("factory" in mode):
        raise SystemExit(f"{mode}: the platform check gave {ok}")
print(json.dumps(ms))
"""

CASES = {
    "import": "import plugin module, cold",
    "sdk-module": "SDK, module entry point (baseline)",
    "sdk-factory": "SDK, factory entry point (ours)",
    "platform-module": "platform, module, cold (fails)",
    "platform-factory": "platform, factory, cold (ours)",
    "platform-module-pydantic": "platform, module, pydantic in (fails)",
    "platform-factory-pydantic": "platform, factory, pydantic in (ours)",
    "platform-module-warm": "platform, module, warm (fails)",
    "platform-factory-warm": "platform, factory, warm (ours)",
}


def sdk_workers() -> list[tuple[str, str, str]]:
    """(name, module entry point, factory entry point or "") of each installed SDK worker."""
    found = []
    for ep in metadata.entry_points(group="mosaic.workers"):
        module, _, attr = ep.value.partition(":")
        obj = ep.load()
        if attr and hasattr(obj, "__mosaic_plugin__"):
            found.append((ep.name, module, ep.value))
        elif not attr and hasattr(obj, "mosaic_worker_describe"):
            found.append((ep.name, module, ""))  # not switched to platform_factory yet
    return sorted(found)


def once(mode: str, name: str, value: str, env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode, name, value],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} {name}: {done.stderr[-2000:]}")
    return float(json.loads(done.stdout))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--gym-gui-root", type=Path, default=None)
    args = p.parse_args()
    workers = sdk_workers()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.gym_gui_root
        if root is None:
            root = Path(tmp)
            (root / "gym_gui" / "core" / "worker").mkdir(parents=True)
            (root / "gym_gui" / "__init__.py").write_text("")
            (root / "gym_gui" / "core" / "__init__.py").write_text("")
            (root / "gym_gui" / "core" / "worker" / "__init__.py").write_text(PLATFORM_SHAPED)
        old = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": str(root) + (os.pathsep + old if old else "")}
        times: dict[tuple[str, str], list[float]] = {}
        plan = []
        for name, module, factory in workers:
            for mode in CASES:
                value = factory if "factory" in mode else module
                if value:
                    plan.append((mode, name, value))
        for mode, name, value in plan:  # warm the file cache
            once(mode, name, value, env)
        for _ in range(args.runs):
            for mode, name, value in plan:  # interleaved, so drifting load hits all alike
                times.setdefault((name, mode), []).append(once(mode, name, value, env))
    gui = "the platform's" if args.gym_gui_root else "a platform-shaped"
    print(f"discovery of one worker, ms, median of {args.runs} fresh processes ({gui} gym_gui)")
    print(f"{'worker':<16} {'case':<38} {'ms':>8} {'vs baseline':>12}")
    for name, _, factory in workers:
        med = {m: statistics.median(times[(name, m)]) for (n, m) in times if n == name}
        for mode, label in CASES.items():
            if mode not in med:
                print(f"{name:<16} {label:<38} {'n/a':>8}  (module entry point: not switched)")
                continue
            base = med.get(mode.replace("factory", "module"))
            ratio = f"{med[mode] / base:.2f}x" if "factory" in mode and base else ""
            print(f"{name:<16} {label:<38} {med[mode]:>8.1f} {ratio:>12}")
        if factory:
            worst = max(med["sdk-factory"], med["platform-factory-warm"])
            verdict = "met" if worst < 50 else "NOT met"
            print(
                f"{name:<16} {'target < 50 ms per worker (warm)':<38} {worst:>8.1f} {verdict:>12}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
