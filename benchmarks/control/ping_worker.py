"""A worker that answers control commands and does nothing else, for the control benchmark.

Registered through ``MOSAIC_PLUGINS=pinger=ping_worker:PingWorker`` with this directory on
``PYTHONPATH``; its child is this file run as a script (``--echo``: no runner, it answers the
lines of its stdin on its stdout, for the pipe baseline). It claims ``control_protocol=1``,
answers every command with one ``control_reply`` line (``stop`` ends the run with
``run_cancelled``) and otherwise waits.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

THIS = Path(__file__).resolve()


def _plugin() -> type:
    from mosaic_sdk import hookimpl
    from mosaic_sdk.contract import LaunchCommand, WorkerCapabilities, WorkerConfig, WorkerMetadata

    class PingWorker:
        @hookimpl
        def mosaic_worker_describe(self) -> tuple[WorkerMetadata, WorkerCapabilities]:
            return (
                WorkerMetadata(name="Pinger", version="1.0"),
                WorkerCapabilities(worker_type="pinger", control_protocol=1),
            )

        @hookimpl
        def mosaic_worker_config_model(self) -> type[WorkerConfig]:
            return WorkerConfig

        @hookimpl
        def mosaic_worker_launch_command(self, config_path, config, run_dir) -> LaunchCommand:  # type: ignore[no-untyped-def]
            return LaunchCommand(argv=(sys.executable, str(THIS), str(config_path)))

    return PingWorker


def __getattr__(name: str) -> type:
    if name == "PingWorker":
        return _plugin()
    raise AttributeError(name)


def serve(run_id: str) -> int:
    out = sys.stdout
    out.write(json.dumps({"type": "lifecycle", "event": "run_started", "run_id": run_id}) + "\n")
    out.flush()
    for raw in sys.stdin:
        msg = json.loads(raw)
        reply = {"type": "control_reply", "v": 1, "id": msg.get("id"), "cmd": msg.get("cmd")}
        reply.update(ok=True, run_id=run_id)
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if msg.get("cmd") == "stop":
            event = {"type": "lifecycle", "event": "run_cancelled", "run_id": run_id}
            event["payload"] = {"reason": "stop command", "completed_episodes": 0}
            out.write(json.dumps(event) + "\n")
            out.flush()
            return 0
    return 0


if __name__ == "__main__":
    if "--dry-run" in sys.argv:
        sys.exit(0)
    if sys.argv[1] == "--echo":
        sys.exit(serve("echo"))
    sys.exit(serve(json.loads(Path(sys.argv[1]).read_text())["run_id"]))
