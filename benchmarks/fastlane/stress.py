"""FastLane stress: writer and reader in separate processes; torn frames and wrong metrics.

    python benchmarks/fastlane/stress.py [--seconds 10]

(i)   writer flat out at 84x84x3, reader flat out;
(ii)  1920x1080x3 at 60 frames/s, reader polling at 60 Hz;
(iii) the deployed algorithm (tests/fastlane/legacy_v1.py) flat out at 84x84x3, same check.

Every frame carries its number in its pixels and metrics (k, -k, k/2); the reader verifies
the whole frame (a torn frame is one whose pixels mix two frames) and the metrics (a mismatch
is metrics of another frame than the pixels). Uses tests/fastlane/fastlane_child.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = str(ROOT / "tests" / "fastlane" / "fastlane_child.py")


def run(writer_args: list[str], reader_args: list[str], impl: str = "native") -> dict:
    env = dict(os.environ, MOSAIC_ATOMICS=impl)
    rid = f"stress-{uuid.uuid4().hex[:8]}"
    cmd = [sys.executable, CHILD]
    writer = subprocess.Popen(
        cmd + [writer_args[0], rid, *writer_args[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        ready = writer.stdout.readline().strip()
        if ready != "READY":
            raise SystemExit(f"writer failed: {writer.stderr.read()}")
        reader = subprocess.run(
            cmd + [reader_args[0], rid, *reader_args[1:]], capture_output=True, text=True, env=env
        )
        if reader.returncode:
            raise SystemExit(f"reader failed: {reader.stderr}")
        w_out, w_err = writer.communicate(timeout=600)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
        from mosaic_sdk.fastlane import cleanup_stale_segment

        cleanup_stale_segment(rid)
    stats = json.loads(reader.stdout.strip().splitlines()[-1])
    wstats = json.loads(w_out.strip().splitlines()[-1])
    stats["published_per_s"] = wstats["published"] / wstats["seconds"]
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each run")
    args = parser.parse_args()
    s = str(args.seconds)
    w_secs = str(args.seconds + 1.0)  # the deployed writer runs a fixed time
    w_max = str(args.seconds * 3 + 60)  # ours stops when the reader is done (stdin closed)
    cases = [
        ("(i) 84x84x3 flat out", ["writer", "84", "84", "3", w_max, "0"], ["reader", s, "0"]),
        (
            "(i) 84x84x3 flat out, python atomics",
            ["writer", "84", "84", "3", w_max, "0"],
            ["reader", s, "0"],
        ),
        (
            "(ii) 1080p at 60 fps, reader 60 Hz",
            ["writer", "1920", "1080", "3", w_max, "60"],
            ["reader", s, "60"],
        ),
        ("(iii) deployed, 84x84x3 flat out", ["legacy-writer", w_secs], ["legacy-reader", s]),
    ]
    head = (
        f"{'case':<38}{'published/s':>12}{'reads/s':>10}{'distinct/s':>11}{'torn':>6}"
        f"{'wrong metrics':>15}{'retries':>9}"
    )
    print(f"FastLane stress, {args.seconds:g} s per case\n")
    print(head)
    print("-" * len(head))
    for label, wargs, rargs in cases:
        impl = "python" if "python" in label else "native"
        st = run(wargs, rargs, impl)
        secs = st["seconds"]
        distinct = st.get("distinct")
        print(
            f"{label:<38}{st['published_per_s']:>12.0f}{st['reads'] / secs:>10.0f}"
            + (f"{distinct / secs:>11.0f}" if distinct is not None else f"{'-':>11}")
            + f"{st['torn']:>6}{st['mismatched']:>15}{st['retries']:>9}"
        )
        if st.get("header_errors"):
            print(f"{'':<38}reads that crashed on a half-rewritten header: {st['header_errors']}")
    print(
        "\nreads/s counts successful reads (the same frame may be read again); distinct/s counts"
        "\ndifferent frames seen; retries = reads that found their slot being rewritten and"
        "\ntried again (deployed: reads that returned nothing)."
    )


if __name__ == "__main__":
    main()
