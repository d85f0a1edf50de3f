"""Interactive `step` round trip over the control protocol, CartPole, frames through FastLane.

Target: >= 2,000 steps/s with protocol version 1 and frames through FastLane, as workers
publish them by default: at most one frame per FastLane interval (16 ms, the viewer's 60 Hz),
and the latest state always shown (a step whose frame was skipped is published within one
interval after the commands stop). Baseline, measured in the same run: the deployed CleanRL
dialect 1.0, whose replies carry every frame as a JSON list (`render_payload`), on the same
worker (the example worker with `json_frames`). Variants, interleaved round by round:

- `v1+fastlane (pipe)`: `{"v": 1, "id", "cmd": "step"}` written to the worker's stdin, the
  `control_reply` line read back from its stdout, frames at the workers' default interval;
- `v1+fastlane (Session)`: the same through `mosaic_sdk.control.Session.step()` on a
  `start_session` session (reply validated into a typed model; the worker's stdout read by
  the run lifecycle and fed to the session);
- `v1+fastlane every frame (pipe)`: the same with ``MOSAIC_FASTLANE_INTERVAL_MS=0``: every
  step renders and publishes its frame;
- `CartPole render() alone`: frames/s of the env's own `render()` in this process, no
  protocol, no FastLane: the upper bound of any every-frame variant (pygame draws the frame and
  gymnasium copies it out of the surface);
- `dialect 1.0 + JSON frames (pipe)`: `{"cmd": "step"}` and its `step` line with the frame
  as a nested list.

Prints the median of each (over rounds), the ratio of the first to the baseline, and how many
frames the main variant published for its steps (and that the last state's frame came).

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
from mosaic_sdk.runner.supervision.session_launch import prepare_session, start_session
from mosaic_sdk.shm.segment import shm_unlink

CONFIG = {"env_id": "CartPole-v1", "policy": "balance"}


class Pipe:
    """A worker in interactive mode, spoken to over raw pipes."""

    def __init__(
        self, runs: Path, *, fastlane: bool, json_frames: bool, interval_ms: float | None = None
    ) -> None:
        prepared = prepare_session("example", {**CONFIG, "json_frames": json_frames}, runs_dir=runs)
        env = {**prepared.env, "MOSAIC_FASTLANE": "1" if fastlane else "0"}
        env.pop("MOSAIC_FASTLANE_INTERVAL_MS", None)  # None: the workers' default interval
        env.pop("CLEANRL_FASTLANE_INTERVAL_MS", None)
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


def rate_render(env: Any, frames: int) -> float:
    """CartPole's own ``render()`` calls per second (a step between two, as in a session)."""
    env.reset(seed=0)
    elapsed = 0.0
    for i in range(frames):
        _, _, terminated, truncated, _ = env.step(i % 2)
        if terminated or truncated:
            env.reset()
        start = time.perf_counter()
        env.render()
        elapsed += time.perf_counter() - start
    return frames / elapsed


def last_frame_shown(reply: dict[str, Any]) -> bool:
    """Whether the frame of ``reply``'s state reaches the segment with no further command."""
    from mosaic_sdk.control.frames import FrameWaiter
    from mosaic_sdk.control.protocol import FrameRef

    waiter = FrameWaiter()
    try:
        waiter.wait(FrameRef.model_validate(reply["frame"]), 5.0)
        return True
    except TimeoutError:
        return False
    finally:
        waiter.close()


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

    import gymnasium

    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        os.environ.setdefault("MOSAIC_HOME", str(Path(tmp) / "home"))
        ours = Pipe(runs, fastlane=True, json_frames=False)
        every = Pipe(runs, fastlane=True, json_frames=False, interval_ms=0.0)
        deployed = Pipe(runs, fastlane=False, json_frames=True)
        session = start_session("example", CONFIG, runs_dir=runs, fastlane=True)
        render_env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
        keys = ("pipe", "session", "every", "render", "dialect")
        rates: dict[str, list[float]] = {k: [] for k in keys}
        try:
            for _ in range(args.rounds):
                rates["pipe"].append(rate_v1_pipe(ours, args.steps))
                rates["session"].append(rate_v1_session(session, args.steps))
                rates["every"].append(rate_v1_pipe(every, args.steps))
                rates["render"].append(rate_render(render_env, args.steps))
                rates["dialect"].append(rate_dialect(deployed, args.baseline_steps))
            # The guarantee behind the main figure: a burst, then its last state's frame.
            before = ours.v1("reset", seed=1)["frame"]["frames_published"]
            for _ in range(args.steps):
                last = ours.v1("step")
                if last["episode_done"]:
                    break
            steps_done = last["step_index"]
            frames = last["frame"]["frames_published"] - before
            shown = last_frame_shown(last)
            every_frames = every.v1("step")["frame"]["frames_published"]
        finally:
            render_env.close()
            ours.close()
            every.close()
            deployed.close()
            session.shutdown()
            if session.run_id:
                shm_unlink(segment_name(session.run_id))
    pipe, sess, every_rate, render, dialect = (statistics.median(rates[k]) for k in keys)
    print(
        f"interactive step round trip, CartPole-v1, {args.rounds} rounds x {args.steps} steps "
        f"({args.baseline_steps} for the dialect)"
    )
    print(f"  v1 + FastLane, default interval (pipe):    {pipe:8.0f} steps/s")
    print(f"  v1 + FastLane, default interval (Session): {sess:8.0f} steps/s")
    print(f"  v1 + FastLane, every frame (pipe):         {every_rate:8.0f} steps/s  "
          f"(frames published: {every_frames})")  # fmt: skip
    print(f"  CartPole render() alone:                   {render:8.0f} frames/s  "
          "(bound of every-frame)")  # fmt: skip
    print(f"  dialect 1.0 + JSON frames:                 {dialect:8.1f} steps/s")
    print(
        f"  default interval: a burst of {steps_done} steps published {frames} frames; "
        f"the last state's frame {'came' if shown else 'DID NOT come'} without a command"
    )
    print(f"  ratio v1 pipe / dialect: {pipe / dialect:.1f}x; Session / dialect: "
          f"{sess / dialect:.1f}x; every frame / render alone: {every_rate / render:.2f}; "
          "goal >= 2000 steps/s")  # fmt: skip


if __name__ == "__main__":
    main()
