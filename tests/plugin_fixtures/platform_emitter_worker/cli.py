"""The worker's CLI: lifecycle lines through gym_gui.core.worker.TelemetryEmitter, step and
episode lines printed in the proxy's shape (the episode index in metadata.episode_index, where
the proxy reads it, and as episode_index for the SDK)."""

from __future__ import annotations

import argparse
import json
import sys

from gym_gui.core.worker import TelemetryEmitter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    with open(args.config) as fh:
        config = json.load(fh)
    emitter = TelemetryEmitter(config["run_id"])
    emitter.run_started({"worker_type": "emitterworker", "config": config})
    steps = int(config.get("steps", 3))
    for step in range(steps):
        line = {"type": "step", "episode_index": 0, "step_index": step, "reward": 1.0}
        line["metadata"] = {"episode_index": 0}
        print(json.dumps(line), flush=True)
    episode = {"type": "episode", "episode_index": 0, "total_reward": float(steps)}
    episode["metadata"] = {"episode_index": 0}
    print(json.dumps({**episode, "steps": steps}), flush=True)
    emitter.run_completed({"episodes": 1, "total_reward": float(steps)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
