"""Long lines and \\r progress bars through the runner's readers: linear, not quadratic.

A child writes one line of N MB (64 KiB per write, as a worker writing to a pipe does) and
we measure the CPU time this process spends reading it to EOF with
``WorkerProcess.read_lines`` (the child's start-up and writing are not counted): with the
default maximum line length (16 MiB: the line is cut, the rest counted and dropped) and with
a maximum above N (the line is kept whole). Beside it, in the same run, the reader as it was before
(``pending + chunks``, then a split of the whole buffer on every read), re-implemented here.
Target: a 100 MB line costs at most ~2x a 50 MB line.

The second table drains M MB of tqdm-style ``\\r`` redraws on stderr (no newline at all):
our stderr drain against the old one (``pending += chunk`` and a split per read).

    python benchmarks/runner/bench_long_lines.py [--sizes 25,50,100] [--repeat 3]
        [--baseline-sizes 25,50,100] [--progress-sizes 10,20,40]
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import time

from mosaic_sdk.runner.supervision.lines import CutLine
from mosaic_sdk.runner.supervision.process import WorkerProcess

MB = 1_000_000
CHUNK = 1 << 16


def writer_argv(size: int) -> list[str]:
    """A child that writes one line of ``size`` bytes (and its newline) in 64 KiB writes."""
    code = (
        "import os\n"
        f"size = {size}; block = b'x' * {CHUNK}\n"
        "while size > 0:\n"
        "    n = min(size, len(block)); os.write(1, block[:n]); size -= n\n"
        "os.write(1, b'\\n')\n"
    )
    return [sys.executable, "-c", code]


def progress_argv(size: int) -> list[str]:
    """A child that writes ``size`` bytes of ``\\r`` redraws (about 80 bytes each) to stderr."""
    code = (
        "import os\n"
        f"size = {size}; i = 0; buf = []\n"
        "while size > 0:\n"
        "    line = ('\\r%6d/100000 |' % i + '#' * (i % 60)).encode(); i += 1\n"
        "    buf.append(line); size -= len(line)\n"
        "    if len(buf) == 400: os.write(2, b''.join(buf)); buf = []\n"
        "os.write(2, b''.join(buf))\n"
    )
    return [sys.executable, "-c", code]


def ours(size: int, max_line: int) -> tuple[float, int]:
    """CPU seconds to read the line to EOF; the bytes of the line we got."""
    proc = WorkerProcess(writer_argv(size), max_line_bytes=max_line)
    start = time.process_time()
    got = 0
    while True:
        lines, eof = proc.read_lines(None)
        for line in lines:
            got += len(line) + (line.dropped if type(line) is CutLine else 0)
        if eof:
            break
    elapsed = time.process_time() - start
    proc.wait()
    proc.close()
    return elapsed, got


def old_reader(size: int) -> tuple[float, int]:
    """The reader as it was: ``data = pending + b"".join(chunks)``, split the whole of it."""
    proc = subprocess.Popen(writer_argv(size), stdout=subprocess.PIPE)
    start = time.process_time()
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    pending = b""
    got = 0
    eof = False
    while not eof:
        poller.poll(None)
        chunks = []
        for _ in range(16):
            chunk = os.read(fd, CHUNK)
            if not chunk:
                eof = True
                break
            chunks.append(chunk)
            if len(chunk) < CHUNK or not poller.poll(0):
                break
        data = pending + b"".join(chunks)
        *complete, pending = data.split(b"\n")
        got += sum(len(line) for line in complete)
    elapsed = time.process_time() - start
    proc.wait()
    proc.stdout.close()
    return elapsed, got


def progress_ours(size: int) -> tuple[float, int]:
    count = 0

    def on_lines(lines: list[bytes], partial: bool) -> None:
        nonlocal count
        count += len(lines)

    proc = WorkerProcess(progress_argv(size), on_stderr_lines=on_lines)
    start = time.process_time()
    proc.wait()
    proc.join_stderr()
    elapsed = time.process_time() - start
    proc.close()
    return elapsed, count


def progress_old(size: int) -> tuple[float, int]:
    proc = subprocess.Popen(progress_argv(size), stderr=subprocess.PIPE)
    start = time.process_time()
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    pending = b""
    count = 0
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            break
        pending += chunk
        *complete, pending = pending.split(b"\n")
        count += len(complete)
    count += 1 if pending else 0
    elapsed = time.process_time() - start
    proc.wait()
    proc.stderr.close()
    return elapsed, count


def sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="25,50,100", help="line sizes in MB for our reader")
    ap.add_argument("--repeat", type=int, default=3, help="runs of our reader per size")
    ap.add_argument(
        "--baseline-sizes", default="25,50,100", help="sizes for the old reader (slow: ~70 s)"
    )
    ap.add_argument("--baseline-repeat", type=int, default=1)
    ap.add_argument("--progress-sizes", default="10,20,40", help="MB of \\r redraws")
    args = ap.parse_args()

    print("one line of N MB read to EOF (CPU seconds of the reader, median; MB per CPU s)")
    print(f"{'MB':>5} {'ours cut 16MiB':>16} {'ours whole':>12} {'old reader':>12} {'old/ours':>9}")
    medians: dict[str, dict[int, float]] = {"cut": {}, "whole": {}, "old": {}}
    for mb in sorted(set(sizes(args.sizes)) | set(sizes(args.baseline_sizes))):
        size = mb * MB
        row = {}
        if mb in sizes(args.sizes):
            for name, limit in (("cut", 16 * 1024 * 1024), ("whole", size + 1)):
                runs = []
                for _ in range(args.repeat):
                    t, got = ours(size, limit)
                    assert got == size, (got, size)
                    runs.append(t)
                row[name] = medians[name][mb] = statistics.median(runs)
        if mb in sizes(args.baseline_sizes):
            runs = []
            for _ in range(args.baseline_repeat):
                t, got = old_reader(size)
                assert got == size, (got, size)
                runs.append(t)
            row["old"] = medians["old"][mb] = statistics.median(runs)

        def fmt(key: str, row: dict[str, float] = row, mb: int = mb) -> str:
            return f"{row[key]:.3f} ({mb / row[key]:.0f})" if key in row else "-"

        ratio = f"{row['old'] / row['cut']:.0f}x" if "old" in row and "cut" in row else "-"
        print(f"{mb:>5} {fmt('cut'):>16} {fmt('whole'):>12} {fmt('old'):>12} {ratio:>9}")
    for name, label in (("cut", "ours cut"), ("whole", "ours whole"), ("old", "old reader")):
        m = medians[name]
        if 50 in m and 100 in m:
            print(
                f"{label}: a 100 MB line costs {m[100] / m[50]:.2f}x a 50 MB line (target <= ~2x)"
            )

    print("\n\\r progress redraws on stderr, no newline (CPU seconds to drain; lines handed on)")
    print(f"{'MB':>5} {'ours':>16} {'old drain':>16} {'old/ours':>9}")
    for mb in sizes(args.progress_sizes):
        t_ours, n_ours = progress_ours(mb * MB)
        t_old, n_old = progress_old(mb * MB)
        print(
            f"{mb:>5} {t_ours:>9.3f} ({n_ours:>5}) {t_old:>9.3f} ({n_old:>5}) "
            f"{t_old / t_ours:>8.1f}x"
        )


if __name__ == "__main__":
    main()
