"""Curriculum schedules: stages of envs, each ending on steps, episodes or mean return.

A stage is ``{"env_id": "...", "until": "steps>=20000|episode_return>=150"}`` (or the
shorthand keys ``steps``, ``episodes``, ``episode_return``). Conditions combined with ``|``
end the stage when any of them holds; ``episode_return`` compares the mean return of the
stage's last ``return_window`` episodes. A stage without a condition ends after
:data:`DEFAULT_STAGE_STEPS` steps; the last stage never ends (it runs until the training
budget is spent).

:class:`ScheduleProgress` is the shared counter every sub-env of a vector env reports to; it
decides when the schedule moves on. It is plain Python (no gymnasium): the env side lives in
:mod:`mosaic_worker_cleanrl.curriculum_env`.
"""

from __future__ import annotations

import collections
import re
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_STAGE_STEPS = 100_000
CONDITION_KINDS = ("steps", "episodes", "episode_return")
_CONDITION = re.compile(r"^\s*(steps|episodes|episode_return)\s*>=\s*(-?[0-9.eE+-]+)\s*$")


def parse_conditions(text: str) -> list[tuple[str, float]]:
    """``"steps>=100|episode_return>=0.5"`` -> ``[("steps", 100.0), ("episode_return", 0.5)]``."""
    out = []
    for part in text.split("|"):
        match = _CONDITION.match(part)
        if not match:
            raise ValueError(
                f"bad stage condition {part.strip()!r}: write KIND>=NUMBER with KIND one of "
                f"{', '.join(CONDITION_KINDS)}, several joined by '|'"
            )
        try:
            value = float(match.group(2))
        except ValueError:
            raise ValueError(f"bad number in stage condition {part.strip()!r}") from None
        out.append((match.group(1), value))
    return out


class CurriculumStage(BaseModel):
    """One stage of a curriculum."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str = Field(min_length=1, description="Gymnasium env id of this stage")
    env_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for gymnasium.make"
    )
    until: str | None = Field(
        None, description="End condition, e.g. 'steps>=20000|episode_return>=150'"
    )
    steps: int | None = Field(None, ge=1, description="Shorthand for until='steps>=N'")
    episodes: int | None = Field(None, ge=1, description="Shorthand for until='episodes>=N'")
    episode_return: float | None = Field(
        None, description="Shorthand for until='episode_return>=X'"
    )
    return_window: int = Field(20, ge=1, description="Episodes averaged for episode_return")

    @field_validator("until")
    @classmethod
    def _check_until(cls, value: str | None) -> str | None:
        if value is not None:
            parse_conditions(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _accept_condition_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "condition" in data and "until" not in data:
            data = dict(data)
            data["until"] = data.pop("condition")
        return data

    def conditions(self) -> list[tuple[str, float]]:
        """The stage's end conditions (OR), the default when none is given."""
        found = parse_conditions(self.until) if self.until else []
        for kind in CONDITION_KINDS:
            value = getattr(self, kind)
            if value is not None:
                found.append((kind, float(value)))
        return found or [("steps", float(DEFAULT_STAGE_STEPS))]

    def describe(self) -> str:
        return "|".join(f"{k}>={v:g}" for k, v in self.conditions())


class ScheduleProgress:
    """Counts steps, episodes and returns of the current stage; advances the schedule.

    ``on_advance(old_index, new_index, stats)`` is called (under a lock, once) when a stage
    ends. Thread-safe, so several sub-envs may report.
    """

    def __init__(
        self,
        stages: list[CurriculumStage],
        on_advance: Callable[[int, int, dict[str, Any]], None] | None = None,
    ) -> None:
        if not stages:
            raise ValueError("a curriculum needs at least one stage")
        self.stages = stages
        self.on_advance = on_advance
        self.index = 0
        self._lock = threading.Lock()
        self._reset_counters()
        self.history: list[dict[str, Any]] = []

    def _reset_counters(self) -> None:
        self.steps = 0
        self.episodes = 0
        window = self.stages[self.index].return_window
        self.returns: collections.deque[float] = collections.deque(maxlen=window)

    @property
    def stage(self) -> CurriculumStage:
        return self.stages[self.index]

    @property
    def finished_all(self) -> bool:
        return self.index == len(self.stages) - 1

    def stats(self) -> dict[str, Any]:
        mean = sum(self.returns) / len(self.returns) if self.returns else None
        return {
            "stage": self.index,
            "env_id": self.stage.env_id,
            "steps": self.steps,
            "episodes": self.episodes,
            "mean_return": mean,
        }

    def _met(self) -> bool:
        for kind, value in self.stage.conditions():
            if kind == "steps" and self.steps >= value:
                return True
            if kind == "episodes" and self.episodes >= value:
                return True
            if (
                kind == "episode_return"
                and len(self.returns) == self.returns.maxlen
                and sum(self.returns) / len(self.returns) >= value
            ):
                return True
        return False

    def record(self, steps: int = 0, episode_return: float | None = None) -> None:
        """Report ``steps`` env steps and, when an episode ended, its return."""
        with self._lock:
            self.steps += steps
            if episode_return is not None:
                self.episodes += 1
                self.returns.append(float(episode_return))
            if not self.finished_all and self._met():
                old = self.index
                stats = self.stats()
                self.history.append(stats)
                self.index += 1
                self._reset_counters()
                if self.on_advance is not None:
                    self.on_advance(old, self.index, stats)


__all__ = [
    "CONDITION_KINDS",
    "DEFAULT_STAGE_STEPS",
    "CurriculumStage",
    "ScheduleProgress",
    "parse_conditions",
]
