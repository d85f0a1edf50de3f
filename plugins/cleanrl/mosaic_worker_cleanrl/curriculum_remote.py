"""The curriculum env id in env subprocesses (``AsyncVectorEnv``, any start method).

The schedule's progress lives in the worker process (:class:`ScheduleProgress`). An env
subprocess needs two things from it: the env id registered, and the current stage at each
reset. The worker therefore:

- writes the stages and the current stage index to a small JSON file in the run directory
  (:func:`publish`, again at every stage change, replaced atomically) and names the file in
  the variables env subprocesses start with (:data:`CURRICULUM_VAR`);
- counts the episodes env subprocesses report through telemetry (their records carry the
  stage they were played in) towards the progress (:func:`remote_episode_feeder`).

In the env subprocess, the SDK's ``sitecustomize`` calls the worker's setup
(:func:`mosaic_worker_cleanrl.run_setup.prepare_env_subprocess`), which registers the
curriculum env id with a
:class:`RemoteProgress` that reads the file (:func:`register_remote`); its ``record`` does
nothing, the worker does the counting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mosaic_worker_cleanrl.curriculum_env import register_curriculum
from mosaic_worker_cleanrl.curriculum_schedule import CurriculumStage, ScheduleProgress

#: The variable that names the stage file in an env subprocess's environment.
CURRICULUM_VAR = "MOSAIC_INSTRUMENT_CLEANRL_CURRICULUM"
STAGE_FILE = ".curriculum_stage.json"


def publish(path: Path, progress: ScheduleProgress) -> None:
    """Write the stages and the current index to ``path`` (atomically)."""
    data = {
        "stages": [stage.model_dump(mode="json") for stage in progress.stages],
        "index": progress.index,
    }
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


class RemoteProgress:
    """The worker's progress as seen from an env subprocess: stages and the current index."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        data = json.loads(self.path.read_text())
        self.stages = [CurriculumStage.model_validate(s) for s in data["stages"]]
        self._index = int(data["index"])
        self._stamp = self.path.stat().st_mtime_ns

    @property
    def index(self) -> int:
        """The current stage (re-read when the file changed; the last one read otherwise)."""
        try:
            stamp = self.path.stat().st_mtime_ns
            if stamp != self._stamp:
                self._index = int(json.loads(self.path.read_text())["index"])
                self._stamp = stamp
        except (OSError, ValueError, KeyError):
            pass  # the run directory is going away: keep playing the stage we have
        return self._index

    def record(self, steps: int = 0, episode_return: float | None = None) -> None:
        """Nothing: the worker counts this env's episodes from its telemetry."""


def register_remote(path: str | Path, make: Callable[..., Any]) -> Callable[[], None]:
    """Register the curriculum env id in this (env sub)process, reading ``path``."""

    return register_curriculum(RemoteProgress(Path(path)), make)  # type: ignore[arg-type]


def remote_episode_feeder(progress: ScheduleProgress) -> Callable[[dict[str, Any]], None]:
    """What the worker's telemetry sink calls with each episode an env subprocess reported:
    a finished episode of the current stage counts towards it (steps and return)."""

    def feed(record: dict[str, Any]) -> None:
        metadata = record.get("metadata") or {}
        if metadata.get("unfinished") or metadata.get("curriculum_stage") != progress.index:
            return
        progress.record(int(record["steps"]), float(record["total_reward"]))

    return feed


__all__ = [
    "CURRICULUM_VAR",
    "STAGE_FILE",
    "RemoteProgress",
    "publish",
    "register_remote",
    "remote_episode_feeder",
]
