"""The env-subprocess patch: telemetry back through ``info`` from an ``AsyncVectorEnv``'s
workers, the ``sitecustomize`` that patches them and nothing else, and the export window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import pytest

from mosaic_sdk.instrument.env_telemetry import INFO_KEY, TelemetrySink
from mosaic_sdk.instrument.gym_patch import Instrumentation
from mosaic_sdk.instrument.subprocess_patch import (
    PREFIX,
    SITE_DIR,
    SWITCH,
    child_variables,
    consume,
    exported_to_processes,
    subprocess_environment,
)


class RecordingEmitter:
    def __init__(self) -> None:
        self.steps: list[tuple[Any, ...]] = []
        self.episodes: list[tuple[Any, ...]] = []

    def step(self, episode: int, step: int, reward: float, **kw: Any) -> bool:
        self.steps.append((episode, step, reward))
        return True

    def episode(self, episode: int, total: float, steps: int, **kw: Any) -> int:
        self.episodes.append((episode, total, steps, kw.get("metadata")))
        return 0


def test_envs_of_an_async_vector_env_report_through_info() -> None:
    emitter = RecordingEmitter()
    sink = TelemetrySink(emitter, step_every=1)
    with Instrumentation(sink, "relay-test"):
        envs = gymnasium.vector.AsyncVectorEnv(
            [lambda: gymnasium.make("CartPole-v1", max_episode_steps=5)] * 2
        )
        envs.reset(seed=0)
        for _ in range(12):
            envs.step(envs.action_space.sample())
        envs.close()
    indices = [e[0] for e in emitter.episodes]
    assert len(indices) >= 4 and len(set(indices)) == len(indices)
    assert all(steps <= 5 for _, _, steps, _ in emitter.episodes)
    by_episode: dict[int, int] = {}
    for episode, _, _ in emitter.steps:
        by_episode[episode] = by_episode.get(episode, 0) + 1
    for episode, _, steps, meta in emitter.episodes:
        if not meta.get("unfinished"):
            assert by_episode[episode] == steps


def test_subprocess_wrapper_puts_records_in_info_not_on_a_stream() -> None:
    sink = TelemetrySink(None, step_every=1, owner_pid=-1)
    with Instrumentation(sink, "child-test"):
        env = gymnasium.make("CartPole-v1", max_episode_steps=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert info[INFO_KEY][0]["kind"] == "step" and "origin" in info[INFO_KEY][0]
    _, _, _, truncated, info = env.step(0)
    assert truncated and [r["kind"] for r in info[INFO_KEY]] == ["step", "episode"]


def test_site_directory_holds_only_sitecustomize() -> None:
    assert sorted(p.name for p in SITE_DIR.iterdir() if p.name != "__pycache__") == [
        "sitecustomize.py"
    ]


PROBE = (
    "import os, sys; "
    "print('shadowed', os.environ.get('SHADOWED_RAN')); "
    "print('gymnasium', 'gymnasium' in sys.modules); "
    "print('switches', sorted(k for k in os.environ if k.startswith('MOSAIC_INSTRUMENT_'))); "
    "print('site', any('_site' in p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)))"
    "; print('setup', os.environ.get('SETUP_SAW')); import gymnasium; "
    "print('patched', type(getattr(gymnasium.make, '__self__', None)).__name__)"
)

# Started clean, it exports `variables` (argv[1]) and runs PROBE in itself or in a spawned
# multiprocessing child: the two kinds of interpreter the switch may reach.
LAUNCH = (
    "import json, os, sys, multiprocessing as mp\n"
    "os.environ.update(json.loads(sys.argv[1]))\n"
    "if sys.argv[2] == 'spawn':\n"
    "    p = mp.get_context('spawn').Process(target=exec, args=(sys.argv[3],))\n"
    "    p.start(); p.join(); sys.exit(p.exitcode)\n"
    "import subprocess\n"
    "sys.exit(subprocess.run([sys.executable, '-c', sys.argv[3]]).returncode)\n"
)


# A worker's own set-up in the env subprocess: it sees the instrumentation before it is
# installed, and the variables (its own among them).
SETUP = (
    "import os\n"
    "def setup(inst, variables):\n"
    "    assert type(inst).__name__ == 'Instrumentation' and inst.patches == []\n"
    "    os.environ['SETUP_SAW'] = variables['MOSAIC_INSTRUMENT_PROBE_OWN']\n"
)


def _probe(tmp_path: Path, how: str, switch: str = "1", setup: bool = False) -> dict[str, str]:
    shadow = tmp_path / "shadow"
    shadow.mkdir(exist_ok=True)
    (shadow / "sitecustomize.py").write_text("import os\nos.environ['SHADOWED_RAN'] = 'yes'\n")
    (shadow / "probe_setup.py").write_text(SETUP)
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIX)}
    # the shadowed sitecustomize first, then what this test runs with (this checkout)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(shadow), env.get("PYTHONPATH")] if p)
    own = {PREFIX + "PROBE_OWN": "its own"}
    options: dict[str, Any] = {"setup": "probe_setup:setup", "extra": own} if setup else {}
    variables = subprocess_environment(env, render_frames=False, owner_pid=1, **options)
    variables[SWITCH] = switch
    out = subprocess.run([sys.executable, "-c", LAUNCH, json.dumps(variables), how, PROBE],
                         env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())


def test_a_multiprocessing_child_is_patched_and_consumes_the_switch(tmp_path: Path) -> None:
    got = _probe(tmp_path, "spawn")
    assert got["shadowed"] == "yes"  # the sitecustomize ours shadows still ran
    assert got["gymnasium"] == "True" and got["patched"] == "Instrumentation"
    assert got["switches"] == "[]" and got["site"] == "False"  # its own children start clean


def test_a_workers_setup_runs_in_the_env_subprocess_before_the_patch(tmp_path: Path) -> None:
    got = _probe(tmp_path, "spawn", setup=True)
    assert got["setup"] == "its own" and got["patched"] == "Instrumentation"
    assert got["switches"] == "[]"  # the worker's own variable is consumed too
    assert _probe(tmp_path, "spawn")["setup"] == "None"


def test_a_workers_own_variable_must_carry_the_prefix() -> None:
    with pytest.raises(ValueError, match=PREFIX):
        child_variables(render_frames=False, owner_pid=1, extra={"OTHER": "1"})


def test_any_other_python_process_is_not_patched_and_consumes_the_switch(
    tmp_path: Path,
) -> None:
    got = _probe(tmp_path, "subprocess")
    assert got["shadowed"] == "yes"
    assert got["gymnasium"] == "False" and got["patched"] == "NoneType"
    assert got["switches"] == "[]" and got["site"] == "False"


def test_switch_off_patches_nothing_but_is_still_consumed(tmp_path: Path) -> None:
    got = _probe(tmp_path, "spawn", switch="0")
    assert got["shadowed"] == "yes" and got["gymnasium"] == "False"
    assert got["patched"] == "NoneType" and got["switches"] == "[]"


def test_consume_removes_the_variables_and_only_our_directory() -> None:
    path = os.pathsep.join([str(SITE_DIR), "/a", str(SITE_DIR), "/b"])
    environ = {SWITCH: "1", PREFIX + "PID": "7", "HOME": "/h", "PYTHONPATH": path}
    taken = consume(environ)
    assert taken == {SWITCH: "1", PREFIX + "PID": "7"}
    assert environ == {"HOME": "/h", "PYTHONPATH": os.pathsep.join(["/a", "/b"])}
    only_ours = {SWITCH: "1", "PYTHONPATH": str(SITE_DIR)}
    consume(only_ours)
    assert only_ours == {}


def _child_switches() -> str:
    out = subprocess.run(
        [sys.executable, "-c", f"import os; print(os.environ.get({SWITCH!r}))"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return out.stdout.strip()


def _report(queue: Any) -> None:
    queue.put((os.environ.get(SWITCH), str(SITE_DIR) in os.environ.get("PYTHONPATH", "")))


def test_only_processes_this_thread_starts_in_the_block_get_the_variables() -> None:
    import multiprocessing as mp
    import threading

    before = dict(os.environ)
    variables = {SWITCH: "1", PREFIX + "PID": str(os.getpid())}
    ctx = mp.get_context("fork")
    seen: dict[str, Any] = {}
    with exported_to_processes(variables):
        queue = ctx.Queue()
        proc = ctx.Process(target=_report, args=(queue,))
        proc.start()  # started by this thread: exported while it starts...
        seen["forked"] = queue.get(timeout=30)  # ...and a forked child drops them at once
        proc.join(timeout=30)
        seen["during"] = os.environ.get(SWITCH)
        seen["subprocess"] = _child_switches()  # not a multiprocessing start
        other = threading.Thread(target=lambda: seen.update(thread=_exports_for_other_thread(ctx)))
        other.start()
        other.join(timeout=60)
    assert seen == {"forked": (None, False), "during": None, "subprocess": "None",
                    "thread": (None, False)}  # fmt: skip
    assert dict(os.environ) == before
    assert mp.process.BaseProcess.start.__name__ == "start"  # restored


def _exports_for_other_thread(ctx: Any) -> tuple[Any, bool]:
    queue = ctx.Queue()
    proc = ctx.Process(target=_report, args=(queue,))
    proc.start()
    got = queue.get(timeout=30)
    proc.join(timeout=30)
    return got


def test_a_spawned_process_started_in_the_block_is_patched_and_consumes_them() -> None:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    variables = {SWITCH: "1", PREFIX + "PID": str(os.getpid())}
    with exported_to_processes(variables):
        queue = ctx.Queue()
        proc = ctx.Process(target=_report_environment, args=(queue,))
        proc.start()
        got = queue.get(timeout=60)
        proc.join(timeout=30)
    assert os.environ.get(SWITCH) is None
    assert got == {"patched": "Instrumentation", "switches": [], "site": False}


def _report_environment(queue: Any) -> None:
    queue.put({
        "patched": type(getattr(gymnasium.make, "__self__", None)).__name__,
        "switches": sorted(k for k in os.environ if k.startswith(PREFIX)),
        "site": str(SITE_DIR) in os.environ.get("PYTHONPATH", ""),
    })  # fmt: skip
