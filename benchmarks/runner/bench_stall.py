"""Time to notice a stall: from a hung worker's last line to the runner's stored ``stalled``
event, and to the end of the run under ``--on-stall cancel``, beside the configured limit.

The worker (``hang_worker.py``) writes a few lines and then stays alive writing nothing. For
each case, ``--repeat`` runs; medians. Measured from the last line's own ``ts_unix_ns`` (the
worker's clock, the same machine's wall clock) to:

- the ``stalled`` event's ``ts_unix_ns`` (when the runner decided),
- the moment a reader of the store first sees the event (polled every 5 ms),
- under ``cancel``: the moment ``run()`` returned, the run stored ``failed``.

The baseline is the limit itself (the least any detector could take) and main's runner, which
never notices (a hung worker runs until someone stops it). Cases: ``--stall-after`` L, and a
worker that declares a heartbeat interval L/3 (limit 3 x interval = L).

    python benchmarks/runner/bench_stall.py [--limit 1.0] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def setup_env() -> None:
    os.environ["PYTHONPATH"] = str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["MOSAIC_PLUGINS"] = "hang=hang_worker:HangWorker"
    sys.path.insert(0, str(HERE))


def last_worker_line_ns(conn: sqlite3.Connection, run_id: str) -> int:
    """``ts_unix_ns`` of the worker's last line (its newest step or non-synthesised event)."""
    rows = conn.execute(
        "SELECT line_no, ts_unix_ns FROM steps WHERE run_id = ? UNION ALL "
        "SELECT line_no, ts_unix_ns FROM events WHERE run_id = ? AND synthesised = 0 "
        "ORDER BY line_no DESC LIMIT 1",
        (run_id, run_id),
    ).fetchall()
    return int(rows[0][1])


def one(tmp: Path, rep: int, config: dict[str, Any], limit: float | None, action: str) -> dict:
    from mosaic_sdk.runner.reporting import Reporter
    from mosaic_sdk.runner.supervisor import RunSupervisor, resolve_worker

    store = tmp / f"stall-{action}-{rep}-{'declared' if limit is None else 'flag'}.sqlite"
    sup = RunSupervisor(
        resolve_worker("hang"),
        config,
        store=store,
        runs_dir=tmp / "runs",
        grace=2.0,
        stall_after=limit,
        on_stall=action,
        reporter=Reporter(),
    )
    ended_ns: list[int] = []
    results: list[Any] = []

    def run() -> None:
        results.append(sup.run())
        ended_ns.append(time.time_ns())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    seen_ns = None
    deadline = time.monotonic() + 120
    while seen_ns is None and time.monotonic() < deadline:
        row = conn.execute(
            "SELECT ts_unix_ns FROM events WHERE run_id = ? AND event = 'stalled'", (sup.run_id,)
        ).fetchone()
        if row is not None:
            seen_ns = time.time_ns()
            event_ns = int(row[0])
            break
        time.sleep(0.005)
    assert seen_ns is not None, "no stalled event within 120 s"
    if action == "warn":
        sup.cancel("benchmark over")
    thread.join(60)
    last_ns = last_worker_line_ns(conn, sup.run_id)
    conn.close()
    result = results[0]
    out = {
        "decided": (event_ns - last_ns) / 1e9,
        "stored": (seen_ns - last_ns) / 1e9,
        "status": result.status,
        "error": result.error,
    }
    if action == "cancel":
        out["ended"] = (ended_ns[0] - last_ns) / 1e9
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=float, default=1.0, help="the stall limit (s)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    setup_env()
    limit = args.limit
    cases = [
        (f"--stall-after {limit:g}, warn", {"lines": 10}, limit, "warn"),
        (f"--stall-after {limit:g}, cancel", {"lines": 10}, limit, "cancel"),
        (
            f"declared heartbeat {limit / 3:.3g} s, warn",
            {"lines": 10, "heartbeat_interval": limit / 3},
            None,
            "warn",
        ),
    ]
    rows = []
    ok = True
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["MOSAIC_HOME"] = str(tmp / "home")
        for rep in range(args.repeat):  # the cases interleaved: the load hits them alike
            for i, (_, config, lim, action) in enumerate(cases):
                got = one(tmp, rep, config, lim, action)
                if action == "cancel":
                    ok &= got["status"] == "failed" and got["error"].startswith("stalled")
                if rep == 0:
                    rows.append([])
                rows[i].append(got)
    print(f"time to notice a stall, limit {limit:g} s, median of {args.repeat} runs (s)")
    print(f"{'case':<36} {'decided':>8} {'stored':>8} {'ended':>8} {'limit':>6} {'over':>7}")
    for (name, _, _, _), got in zip(cases, rows, strict=True):
        decided = statistics.median(g["decided"] for g in got)
        stored = statistics.median(g["stored"] for g in got)
        ended = [g["ended"] for g in got if "ended" in g]
        shown = f"{statistics.median(ended):>8.3f}" if ended else f"{'-':>8}"
        print(
            f"{name:<36} {decided:>8.3f} {stored:>8.3f} {shown} {limit:>6.2f} "
            f"{stored - limit:>+7.3f}"
        )
    print(
        "baseline: the limit itself (no detector can be faster); main's runner never notices "
        "(a hung worker runs until it is stopped by hand)"
    )
    print(
        f"cancelled runs ended failed 'stalled: ...': {ok}; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
