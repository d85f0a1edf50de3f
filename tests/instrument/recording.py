"""A stand-in for the telemetry emitter that keeps what the instrumentation writes."""

from __future__ import annotations

from typing import Any


class RecordingEmitter:
    """The ``step`` and ``episode`` calls of a :class:`~mosaic_sdk.instrument.TelemetrySink`."""

    def __init__(self) -> None:
        self.steps: list[tuple[int, int, float, dict[str, Any]]] = []
        self.episodes: list[dict[str, Any]] = []

    def step(self, episode: int, step: int, reward: float, **kw: Any) -> bool:
        self.steps.append((episode, step, reward, kw))
        return True

    def episode(self, episode: int, total: float, steps: int, **kw: Any) -> int:
        self.episodes.append({"index": episode, "return": total, "steps": steps, **kw})
        return 0

    def finished(self) -> list[dict[str, Any]]:
        return [e for e in self.episodes if not (e.get("metadata") or {}).get("unfinished")]

    def unfinished(self) -> list[dict[str, Any]]:
        return [e for e in self.episodes if (e.get("metadata") or {}).get("unfinished")]
