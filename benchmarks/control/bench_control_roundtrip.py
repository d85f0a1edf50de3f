"""Control round trip: ``ping`` -> reply through a run's control socket, as ``mosaic control``
sends it. Goal: median <= 2 ms.

A real ``mosaic run`` (a child process) of a worker that only answers commands
(``ping_worker.py``); this process is the client and sends each ping with
:func:`mosaic_sdk.runner.control.control_client.send_command` (the checks of the socket, a
connection, one line each way: what ``mosaic control`` does after its start-up). Beside it, in
the same run:

- ``socket echo``: a bare Unix-socket echo server in a child process, one connection per
  request (the floor of the transport: no relay, no worker);
- ``pipe echo``: the same worker without a runner, one line to its stdin and its reply read
  from its stdout (the floor of the worker's side);
- ``mosaic control`` as a process (``python -m mosaic_sdk.cli control RUN ping``), start-up
  included, beside ``python -c pass``.

    python benchmarks/control/bench_control_roundtrip.py [--pings 2000] [--cli 15]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

ECHO_SERVER = r"""
import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    data = b""
    while not data.endswith(b"\n"):
        chunk = c.recv(4096)
        if not chunk: break
        data += chunk
    if data == b"quit\n": break
    c.sendall(data); c.close()
"""


def stats(samples: list[float]) -> tuple[float, float]:
    """(median, p99) in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1e3, p99 * 1e3


def setup_env() -> None:
    os.environ["PYTHONPATH"] = str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["MOSAIC_PLUGINS"] = "pinger=ping_worker:PingWorker"
    os.environ["MOSAIC_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    sys.path.insert(0, str(HERE))


def start_run(tmp: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    from mosaic_sdk.runner.storage.paths import runs_dir_for

    store, rid = tmp / "bench.sqlite", "01JBENCHCONTROL00000000000"
    argv = [sys.executable, "-m", "mosaic_sdk.cli", "run", "pinger", "--store", str(store)]
    argv += ["--run-id", rid, "--no-preflight", "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    sock = runs_dir_for(store) / rid / "control.sock"
    deadline = time.monotonic() + 60
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("mosaic run did not start its control socket")
        time.sleep(0.01)
    return proc, rid, store


def ours(sock: Path, n: int) -> list[float]:
    from mosaic_sdk.runner.control.control_client import send_command

    out = []
    for _ in range(n):
        t = time.perf_counter()
        reply = send_command(sock, {"cmd": "ping"})
        out.append(time.perf_counter() - t)
        assert reply["ok"] is True, reply
    return out


def socket_echo(tmp: Path, n: int) -> list[float]:
    path = str(tmp / "echo.sock")
    server = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, path], stdout=subprocess.PIPE)
    assert server.stdout is not None and server.stdout.readline() == b"ready\n"
    line = json.dumps({"cmd": "ping"}).encode() + b"\n"
    out = []
    for _ in range(n):
        t = time.perf_counter()
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(line)
        data = b""
        while not data.endswith(b"\n"):
            data += s.recv(4096)
        s.close()
        out.append(time.perf_counter() - t)
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b"quit\n")
    s.close()
    server.wait(10)
    return out


def pipe_echo(n: int) -> list[float]:
    worker = subprocess.Popen(
        [sys.executable, str(HERE / "ping_worker.py"), "--echo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdout.readline()  # run_started
    out = []
    for i in range(n):
        t = time.perf_counter()
        worker.stdin.write(json.dumps({"v": 1, "id": str(i), "cmd": "ping"}).encode() + b"\n")
        worker.stdin.flush()
        worker.stdout.readline()
        out.append(time.perf_counter() - t)
    worker.stdin.close()
    worker.wait(10)
    return out


def processes(argvs: dict[str, list[str]], rounds: int) -> dict[str, list[float]]:
    """Wall time of each command, interleaved ``rounds`` times."""
    out: dict[str, list[float]] = {k: [] for k in argvs}
    for _ in range(rounds):
        for name, argv in argvs.items():
            t = time.perf_counter()
            done = subprocess.run(argv, capture_output=True)
            out[name].append(time.perf_counter() - t)
            assert done.returncode == 0, done.stderr
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=2000, help="round trips per figure")
    parser.add_argument("--cli", type=int, default=15, help="mosaic control processes")
    args = parser.parse_args()
    setup_env()
    with tempfile.TemporaryDirectory(prefix="mosaic-bench-control-") as tmp_name:
        tmp = Path(tmp_name)
        run, rid, store = start_run(tmp)
        from mosaic_sdk.runner.storage.paths import runs_dir_for

        sock = runs_dir_for(store) / rid / "control.sock"
        try:
            ours(sock, 50)  # warm-up
            figures = {
                "ping through mosaic run": ours(sock, args.pings),
                "socket echo (no runner, no worker)": socket_echo(tmp, args.pings),
                "pipe echo (the worker, no runner)": pipe_echo(args.pings),
            }
            cli = [sys.executable, "-m", "mosaic_sdk.cli", "control", rid, "ping"]
            cli += ["--store", str(store)]
            procs = processes(
                {
                    "mosaic control ping (process)": cli,
                    "python -c pass": [sys.executable, "-c", "pass"],
                },
                args.cli,
            )
            from mosaic_sdk.runner.control.control_client import send_command

            send_command(sock, {"cmd": "stop"})
            run.wait(30)
        finally:
            if run.poll() is None:
                run.terminate()
                run.wait(30)
    print(f"control round trip, {args.pings} pings each (load average {os.getloadavg()[0]:.1f})")
    base = stats(figures["socket echo (no runner, no worker)"])[0]
    for name, samples in figures.items():
        med, p99 = stats(samples)
        print(
            f"  {name:38s} median {med:7.3f} ms  p99 {p99:7.3f} ms  ({med / base:.1f}x socket echo)"
        )
    med_ours = stats(figures["ping through mosaic run"])[0]
    print(f"  goal p50 <= 2 ms: {'met' if med_ours <= 2.0 else 'NOT met'} ({med_ours:.3f} ms)")
    print(f"process start included, medians of {args.cli} interleaved runs:")
    for name, samples in procs.items():
        med, p99 = stats(samples)
        print(f"  {name:38s} median {med:7.1f} ms  max {max(samples) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
