"""End to end: a worker writes N step lines as fast as it can; `mosaic run` stores all of them.

Prints our lines/s (run_worker: batched writes on a writer thread) beside the naive baseline
measured in the same run (read each line, one INSERT and one COMMIT per line, same pragmas),
and checks that the store holds every line (0 lost). Each repetition runs twice, alternating:
with no observer plugin, and with one no-op observer of ``mosaic_telemetry_steps`` /
``mosaic_telemetry_episodes`` (its rows are delivered on its own thread); the ratio of the two
medians is what an observer costs ingest. With ``--agents N`` (4 by default; 1 to leave it
out) each repetition runs a third time: a multi-agent run as ``example_ma`` writes it, the same
number of step lines spread over N agents (``agent_id`` on every step and episode line), and
the store's counts per agent are checked against what the worker wrote. Run health is tracked
in every run, with the stall limit ``--stall-after`` (default 60 s: on, never reached; 0 turns
it off).

    python benchmarks/runner/bench_e2e.py [--lines 1000000] [--baseline-lines 20000] [--agents 4]
        [--stall-after 60]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mosaic_sdk import hookimpl

HERE = Path(__file__).resolve().parent


def setup_env() -> None:
    os.environ["PYTHONPATH"] = str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["MOSAIC_PLUGINS"] = "flood=flood_worker:FloodWorker"
    sys.path.insert(0, str(HERE))


def worker_alone(lines: int, tmp: Path) -> float:
    """Lines/s of the flood worker writing to a pipe drained by `cat` (the upper bound)."""
    cfg = tmp / "alone.json"
    cfg.write_text(json.dumps({"run_id": "alone", "lines": lines}))
    start = time.perf_counter()
    worker = subprocess.Popen(
        [sys.executable, str(HERE / "flood_worker.py"), str(cfg)], stdout=subprocess.PIPE
    )
    sink = subprocess.run(["wc", "-l"], stdin=worker.stdout, capture_output=True, text=True)
    worker.wait()
    elapsed = time.perf_counter() - start
    assert int(sink.stdout.split()[0]) >= lines
    return lines / elapsed


def cpu_seconds() -> tuple[float, float]:
    """CPU time (user + system) of this process and of its reaped children so far."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


CPU: dict[str, list[float]] = {
    "runner": [],
    "worker": [],
    "runner+observer": [],
    "runner, agents": [],
    "worker, agents": [],
}


class NoOpObserver:
    """Implements both observer hooks and does nothing with the rows."""

    @hookimpl
    def mosaic_telemetry_steps(self, run_id: str, steps: list) -> None:
        pass

    @hookimpl
    def mosaic_telemetry_episodes(self, run_id: str, episodes: list) -> None:
        pass


def ours(
    lines: int,
    tmp: Path,
    rep: int,
    observer: bool = False,
    agents: int = 1,
    stall_after: float = 60.0,
) -> tuple[float, int, int, dict]:
    from mosaic_sdk.runner.supervisor import resolve_worker, run_worker

    kind = "-observed" if observer else f"-{agents}-agents" if agents > 1 else ""
    store = tmp / f"ours-{rep}{kind}.sqlite"
    handle = resolve_worker("flood")  # discovery is not part of the measured run
    if observer:
        handle.pm.register(NoOpObserver(), name="noop")
    config = {"lines": lines, "agents": agents} if agents > 1 else {"lines": lines}
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    result = run_worker(handle, config, store=store, runs_dir=tmp / "runs", stall_after=stall_after)
    elapsed = time.perf_counter() - start
    cpu1 = cpu_seconds()
    key = "runner+observer" if observer else "runner, agents" if agents > 1 else "runner"
    CPU[key].append((cpu1[0] - cpu0[0]) / lines * 1e6)
    CPU["worker, agents" if agents > 1 else "worker"].append((cpu1[1] - cpu0[1]) / lines * 1e6)
    conn = sqlite3.connect(store)
    [(stored,)] = conn.execute("SELECT count(*) FROM steps WHERE run_id = ?", (result.run_id,))
    conn.close()
    assert result.status == "completed", result.error
    report = result.observers[0] if result.observers else {}
    if agents > 1:
        report = {"wrong_agents": agent_count_errors(store, result.run_id, lines, agents)}
    return lines / elapsed, stored, result.counts["steps"], report


def agent_count_errors(store: Path, run_id: str, lines: int, agents: int) -> list[str]:
    """What the store's counts per agent get wrong against what the flood worker wrote
    (``[]``: every agent has its steps and episodes, and no row lacks its agent)."""
    from flood_worker import agent_names

    from mosaic_sdk.runner.storage.store import RunStore

    steps = lines // agents
    want = {name: (steps, steps // 1000) for name in agent_names(agents)}
    with RunStore(store, readonly=True) as s:
        got = {a["agent_id"]: (a["steps"], a["episodes"]) for a in s.agents(run_id)}
    return [
        f"{name}: {got.get(name)} (steps, episodes) stored, {want.get(name)} written"
        for name in sorted(set(want) | set(got), key=str)
        if got.get(name) != want.get(name)
    ]


def naive(lines: int, tmp: Path, rep: int) -> float:
    """One INSERT and one COMMIT per line, same table shape and pragmas."""
    from mosaic_sdk.runner.storage import schema as store_sql
    from mosaic_sdk.telemetry.reader import classify_line

    path = tmp / f"naive-{rep}.sqlite"
    conn = store_sql.connect(path)
    cfg = tmp / "naive.json"
    cfg.write_text(json.dumps({"run_id": "naive", "lines": lines}))
    start = time.perf_counter()
    worker = subprocess.Popen(
        [sys.executable, str(HERE / "flood_worker.py"), str(cfg)], stdout=subprocess.PIPE
    )
    assert worker.stdout is not None
    n = 0
    for n, raw in enumerate(worker.stdout, 1):
        item = classify_line(raw)
        d = item.data
        if item.kind == "step":
            conn.execute("BEGIN")
            conn.execute(
                store_sql.INSERT_STEP,
                (
                    "naive",
                    n,
                    d.get("seq"),
                    d.get("episode_index"),
                    d.get("step_index"),
                    d.get("reward"),
                    d.get("terminated"),
                    d.get("truncated"),
                    d.get("ts_unix_ns"),
                    item.text,
                    d.get("agent_id"),
                ),
            )
            conn.execute("COMMIT")
    worker.wait()
    elapsed = time.perf_counter() - start
    [(stored,)] = conn.execute("SELECT count(*) FROM steps")
    conn.close()
    assert stored == lines
    return lines / elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--baseline-lines", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--agents", type=int, default=4, help="agents of the multi-agent runs (1: none)")
    p.add_argument("--stall-after", type=float, default=60.0, help="0: no stall limit")
    args = p.parse_args()
    if args.agents > 1 and args.lines % args.agents:
        p.error(f"--lines ({args.lines}) must be a multiple of --agents ({args.agents})")
    setup_env()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["MOSAIC_HOME"] = str(tmp / "home")
        alone = worker_alone(args.lines, tmp)
        rates, lost, observed_rates, observed_lost, missed = [], [], [], [], []
        agent_rates: list[float] = []
        agent_lost: list[int] = []
        agent_errors: list[str] = []
        for rep in range(args.repeat):
            rate, stored, counted, _ = ours(args.lines, tmp, rep, stall_after=args.stall_after)
            rates.append(rate)
            lost.append(args.lines - stored)
            assert counted == stored
            rate, stored, counted, report = ours(
                args.lines, tmp, rep, observer=True, stall_after=args.stall_after
            )
            observed_rates.append(rate)
            observed_lost.append(args.lines - stored)
            missed.append(report["missed_steps"] + report["missed_episodes"])
            assert counted == stored
            if args.agents > 1:
                rate, stored, counted, report = ours(
                    args.lines, tmp, rep, agents=args.agents, stall_after=args.stall_after
                )
                agent_rates.append(rate)
                agent_lost.append(args.lines - stored)
                agent_errors.extend(report["wrong_agents"])
                assert counted == stored
        base = statistics.median(naive(args.baseline_lines, tmp, rep) for rep in range(args.repeat))
    ours_rate = statistics.median(rates)
    observed = statistics.median(observed_rates)
    print(
        f"end to end: {args.lines:,} step lines per run, median of {args.repeat} runs; "
        f"run health on, stall limit {args.stall_after:g} s"
    )
    print(f"{'measure':<44} {'lines/s':>12} {'ratio':>8} {'goal':>14}")
    print(
        f"{'mosaic run (batched, writer thread)':<44} {ours_rate:>12,.0f} "
        f"{ours_rate / base:>7.1f}x {'>= 100,000':>14}"
    )
    print(
        f"{'mosaic run + 1 no-op observer':<44} {observed:>12,.0f} "
        f"{observed / base:>7.1f}x {'>= 100,000':>14}"
    )
    if agent_rates:
        multi = statistics.median(agent_rates)
        label = f"mosaic run, {args.agents} agents (agent_id)"
        print(f"{label:<44} {multi:>12,.0f} {multi / base:>7.1f}x {'>= 100,000':>14}")
    print(f"{'naive: 1 INSERT + 1 COMMIT per line':<44} {base:>12,.0f} {1.0:>7.1f}x {'':>14}")
    print(
        f"{'worker alone, into `wc -l` (upper bound)':<44} {alone:>12,.0f} "
        f"{alone / base:>7.1f}x {'':>14}"
    )
    per_run = [f"{r / 1000:.1f}k" for r in rates]
    print(
        f"per run (in run order), lines/s: 1 agent {per_run}, with the observer "
        f"{[f'{r / 1000:.1f}k' for r in observed_rates]}"
        + (
            f", {args.agents} agents {[f'{r / 1000:.1f}k' for r in agent_rates]}"
            if agent_rates
            else ""
        )
    )
    print(f"lines lost per run: {lost}, with the observer: {observed_lost} (goal: 0)")
    if agent_rates:
        print(
            f"{args.agents} agents / 1 agent: {multi / ours_rate:.3f}x (medians); step lines "
            f"lost per run: {agent_lost} (goal: 0); counts per agent: "
            + ("all correct" if not agent_errors else "; ".join(agent_errors))
        )
    print(
        f"observer / no observer: {observed / ours_rate:.3f}x (medians); rows the observer "
        f"missed (too slow) per run: {missed}"
    )
    print(
        f"CPU per line: runner {statistics.median(CPU['runner']):.2f} us (all threads), "
        f"with the observer {statistics.median(CPU['runner+observer']):.2f} us, "
        + (
            f"{args.agents} agents {statistics.median(CPU['runner, agents']):.2f} us, "
            if agent_rates
            else ""
        )
        + f"worker {statistics.median(CPU['worker']):.2f} us"
        + (
            f" ({args.agents} agents {statistics.median(CPU['worker, agents']):.2f} us)"
            if agent_rates
            else ""
        )
        + "; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    )
    ok = all(n == 0 for n in lost + observed_lost + agent_lost) and not agent_errors
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
