"""Interactive `step` round trip over the control protocol, CartPole, frames through FastLane.

Target: >= 2,000 steps/s with protocol version 1 and every frame published to FastLane.
Baseline, measured in the same run: the deployed CleanRL dialect 1.0, whose replies carry
every frame as a JSON list (`render_payload`), on the same worker (the example worker with
`json_frames`). Both render every step. Three variants, interleaved round by round:

- `v1+fastlane (pipe)`: `{"v": 1, "id", "cmd": "step"}` written to the worker's stdin, the
  `control_reply` line read back from its stdout, frames published to FastLane;
- `v1+fastlane (Session)`: the same through `mosaic_sdk.control.Session.step()` on a
  `start_session` session (reply validated into a typed model; the worker's stdout read by
  the run lifecycle and fed to the session);
- `v1+fastlane at 60 fps (pipe)`: the same with ``MOSAIC_FASTLANE_INTERVAL_MS=16``: a frame
  at most every 16 ms, so most steps do not render (CartPole's pygame render is most of a
  step's cost);
- `dialect 1.0 + JSON frames (pipe)`: `{"cmd": "step"}` and its `step` line with the frame
  as a nested list.

Prints the median steps/s of each (over rounds), and the ratio of the first to the baseline.

    python benchmarks/control/bench_interactive.py [--rounds 5] [--steps 1000] [--baseline-steps 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from mosaic_sdk.control.session import Session
from mosaic_sdk.fastlane.layout import segment_name
from mosaic_sdk.runner.session_launch import prepare_session, start_session
from mosaic_sdk.shm.segment import shm_unlink

CONFIG = {"env_id": "CartPole-v1", "policy": "balance"}


class Pipe:
    """A worker in interactive mode, spoken to over raw pipes."""

    def __init__(
        self, runs: Path, *, fastlane: bool, json_frames: bool, interval_ms: float | None = None
    ) -> None:
        prepared = prepare_session("example", {**CONFIG, "json_frames": json_frames}, runs_dir=runs)
        env = {**prepared.env, "MOSAIC_FASTLANE": "1" if fastlane else "0"}
        if interval_ms is not None:
            env["MOSAIC_FASTLANE_INTERVAL_MS"] = str(interval_ms)
        self.run_id = prepared.run_id
        self.proc = subprocess.Popen(
            prepared.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        self.ids = 0
        self.until(lambda d: d.get("type") == "init")

    def send(self, obj: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(obj).encode() + b"\n")
        self.stdin.flush()

    def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the worker closed its stdout")
            data = json.loads(line)
            if predicate(data):
                return data

    def v1(self, cmd: str, **args: Any) -> dict[str, Any]:
        self.ids += 1
        cid = str(self.ids)
        self.send({"v": 1, "id": cid, "cmd": cmd, **args})
        reply = self.until(lambda d: d.get("type") == "control_reply" and d.get("id") == cid)
        if not reply["ok"]:
            raise RuntimeError(reply["error"])
        return reply

    def dialect(self, command: dict[str, Any], reply_type: str) -> dict[str, Any]:
        self.send(command)
        return self.until(lambda d: d.get("type") in (reply_type, "error") and "seq" not in d)

    def close(self) -> None:
        try:
            self.stdin.close()
            self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            shm_unlink(segment_name(self.run_id))


def rate_v1_pipe(worker: Pipe, steps: int) -> float:
    worker.v1("reset", seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        if worker.v1("step")["episode_done"]:
            worker.v1("reset")
    return steps / (time.perf_counter() - start)


def rate_v1_session(session: Session, steps: int) -> float:
    session.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        if session.step().episode_done:
            session.reset()
    return steps / (time.perf_counter() - start)


def rate_dialect(worker: Pipe, steps: int) -> float:
    worker.dialect({"cmd": "reset", "seed": 0}, "ready")
    start = time.perf_counter()
    for _ in range(steps):
        line = worker.dialect({"cmd": "step"}, "step")
        if line.get("type") == "error":
            raise RuntimeError(line["message"])
        assert "render_payload" in line  # the frame, as JSON
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument(
        "--baseline-steps",
        type=int,
        default=50,
        help="steps per round of the JSON-frame dialect (each moves a ~2.5 MB line)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        os.environ.setdefault("MOSAIC_HOME", str(Path(tmp) / "home"))
        ours = Pipe(runs, fastlane=True, json_frames=False)
        throttled = Pipe(runs, fastlane=True, json_frames=False, interval_ms=16.0)
        deployed = Pipe(runs, fastlane=False, json_frames=True)
        session = start_session("example", CONFIG, runs_dir=runs, fastlane=True)
        rates: dict[str, list[float]] = {"pipe": [], "session": [], "dialect": [], "60fps": []}
        try:
            for _ in range(args.rounds):
                rates["pipe"].append(rate_v1_pipe(ours, args.steps))
                rates["session"].append(rate_v1_session(session, args.steps))
                rates["60fps"].append(rate_v1_pipe(throttled, args.steps))
                rates["dialect"].append(rate_dialect(deployed, args.baseline_steps))
            last = ours.v1("step")
            frames = last["frame"]["frames_published"] if last["frame"] else 0
        finally:
            ours.close()
            throttled.close()
            deployed.close()
            session.shutdown()
            if session.run_id:
                shm_unlink(segment_name(session.run_id))
    pipe, sess, dialect, fps60 = (
        statistics.median(rates[k]) for k in ("pipe", "session", "dialect", "60fps")
    )
    print(
        f"interactive step round trip, CartPole-v1, {args.rounds} rounds x {args.steps} steps "
        f"({args.baseline_steps} for the dialect)"
    )
    print(f"  v1 + FastLane frames (pipe):     {pipe:8.0f} steps/s  (frames published: {frames})")
    print(f"  v1 + FastLane frames (Session):  {sess:8.0f} steps/s")
    print(f"  v1 + FastLane at 60 fps (pipe):  {fps60:8.0f} steps/s  (interval 16 ms)")
    print(f"  dialect 1.0 + JSON frames:       {dialect:8.1f} steps/s")
    print(f"  ratio v1 pipe / dialect: {pipe / dialect:.1f}x; Session / dialect: "
          f"{sess / dialect:.1f}x; goal >= 2000 steps/s")  # fmt: skip


if __name__ == "__main__":
    main()
