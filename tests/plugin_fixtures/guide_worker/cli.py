"""The guide's CLI: --config, flat dataclass config, telemetry printed by hand."""

from __future__ import annotations

import argparse
import json
import sys
import time


def emit(obj: dict) -> None:
    print(json.dumps(obj), file=sys.stdout, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--grpc", action="store_true")
    parser.add_argument("--grpc-target", default="127.0.0.1:50055")
    args = parser.parse_args(argv)
    with open(args.config) as fh:
        config = json.load(fh)
    run_id = config["run_id"]
    steps = int(config.get("total_steps", 10))
    emit(
        {
            "event": "run_started",
            "run_id": run_id,
            "timestamp": time.time(),
            "payload": {"env_id": "CartPole-v1", "algorithm": config.get("algorithm")},
        }
    )
    print("a library prints this line")  # stdout pollution, as happens upstream
    for step in range(steps):
        emit({"event_type": "step", "run_id": run_id, "step_index": step, "reward": 1.0})
    emit(
        {
            "event": "run_completed",
            "run_id": run_id,
            "timestamp": time.time(),
            "payload": {"status": "completed", "total_steps": steps},
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
