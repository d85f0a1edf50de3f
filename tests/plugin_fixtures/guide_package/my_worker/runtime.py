import json
import sys
import time
from typing import Any, Dict

from my_worker.config import MyWorkerConfig  # not in the guide; see FIXTURE.md

class MyWorkerRuntime:
    def __init__(self, config: MyWorkerConfig):
        self.config = config

    def run(self) -> Dict[str, Any]:
        self._emit_lifecycle("run_started", {
            "env_id": self.config.env_id,
            "algorithm": self.config.algorithm,
        })

        try:
            result = self._train()
            summary = {"status": "completed", **result}
            self._emit_lifecycle("run_completed", summary)
            return summary
        except Exception as e:
            self._emit_lifecycle("run_failed", {"error": str(e)})
            raise

    def _train(self) -> Dict[str, Any]:
        """Your training logic goes here."""
        for step in range(self.config.total_steps):
            time.sleep(0.001)  # ... train one step ... (see FIXTURE.md)

            # Emit step telemetry every N steps
            if step % 100 == 0:
                self._emit_step(step, reward=1.0)

            # Emit heartbeat every 60s
            if step % 10_000 == 0:
                self._emit_lifecycle("heartbeat", {"step": step})

        return {"total_steps": self.config.total_steps}

    def _emit_step(self, step: int, reward: float):
        event = {
            "event_type": "step",
            "run_id": self.config.run_id,
            "step_index": step,
            "reward": reward,
        }
        print(json.dumps(event), file=sys.stdout, flush=True)

    def _emit_lifecycle(self, event_name: str, payload: dict):
        event = {
            "event": event_name,
            "run_id": self.config.run_id,
            "timestamp": time.time(),
            "payload": payload,
        }
        print(json.dumps(event), file=sys.stdout, flush=True)
