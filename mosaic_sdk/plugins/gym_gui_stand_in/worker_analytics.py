"""The platform's ``analytics.json`` manifest, as the stand-in's ``gym_gui.core.worker`` has it."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional


@dataclass(frozen=True)
class TensorBoardMetadata:
    """Where the run's TensorBoard logs are (``log_dir`` relative to the run directory)."""

    log_dir: str
    enabled: bool
    port: Optional[int] = None  # noqa: UP045 - the platform's spelling, kept
    url: Optional[str] = None  # noqa: UP045


@dataclass(frozen=True)
class WandBMetadata:
    """The run's Weights & Biases run."""

    project: str
    entity: Optional[str]  # noqa: UP045
    run_id: str
    run_name: str
    url: str
    enabled: bool


@dataclass(frozen=True)
class CheckpointMetadata:
    """The run's checkpoints (paths relative to the run directory)."""

    directory: str
    format: str
    files: list[str] = field(default_factory=list)
    best_checkpoint: Optional[str] = None  # noqa: UP045
    final_checkpoint: Optional[str] = None  # noqa: UP045


@dataclass(frozen=True)
class ArtifactsMetadata:
    """All artifacts of a run; each part is optional."""

    tensorboard: Optional[TensorBoardMetadata] = None  # noqa: UP045
    wandb: Optional[WandBMetadata] = None  # noqa: UP045
    checkpoints: Optional[CheckpointMetadata] = None  # noqa: UP045
    logs_dir: Optional[str] = None  # noqa: UP045
    videos_dir: Optional[str] = None  # noqa: UP045


_PARTS: tuple[tuple[str, type], ...] = (
    ("tensorboard", TensorBoardMetadata),
    ("wandb", WandBMetadata),
    ("checkpoints", CheckpointMetadata),
)


@dataclass(frozen=True)
class WorkerAnalyticsManifest:
    """The platform's ``analytics.json``: run id, worker type, artifacts, free metadata."""

    run_id: str
    worker_type: str
    artifacts: ArtifactsMetadata
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        parts = {key: getattr(self.artifacts, key) for key, _cls in _PARTS}
        artifacts = {key: asdict(part) for key, part in parts.items() if part is not None}
        dirs = {key: getattr(self.artifacts, key) for key in ("logs_dir", "videos_dir")}
        artifacts.update({key: value for key, value in dirs.items() if value})
        return {
            "run_id": self.run_id,
            "worker_type": self.worker_type,
            "artifacts": artifacts,
            "metadata": self.metadata,
        }

    def save(self, path: Path | str) -> None:
        """Write the manifest to ``path`` (parents created), atomically."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(), indent=2)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path | str) -> WorkerAnalyticsManifest:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerAnalyticsManifest:
        raw = data.get("artifacts") or {}
        parts = {key: part_cls(**raw[key]) for key, part_cls in _PARTS if key in raw}
        artifacts = ArtifactsMetadata(
            **parts, logs_dir=raw.get("logs_dir"), videos_dir=raw.get("videos_dir")
        )
        return cls(
            run_id=data["run_id"],
            worker_type=data["worker_type"],
            artifacts=artifacts,
            metadata=data.get("metadata", {}),
        )


__all__ = [
    "ArtifactsMetadata",
    "CheckpointMetadata",
    "TensorBoardMetadata",
    "WandBMetadata",
    "WorkerAnalyticsManifest",
]
