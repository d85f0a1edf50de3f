"""The env side of a curriculum: one env id that switches between the stages' envs.

The worker registers :data:`CURRICULUM_ENV_ID` with gymnasium for the run and passes it to the
algorithm as its ``--env-id``; the training loop needs no change. Each
:class:`CurriculumEnv` (one per sub-env of the vector env) reports its steps and episode
returns to the shared :class:`~mosaic_worker_cleanrl.curriculum_schedule.ScheduleProgress` and moves
to the current stage's env at its next ``reset`` (an episode boundary). Every stage must have
the same observation and action spaces; render sizes may differ (FastLane re-creates its
ring when the frame size changes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium

from mosaic_worker_cleanrl.curriculum_schedule import CurriculumStage, ScheduleProgress
from mosaic_worker_cleanrl.env_families import register_env_families, wrap_observations

CURRICULUM_ENV_ID = "mosaic/Curriculum-v0"


def make_stage_env(
    make: Callable[..., Any], stage: CurriculumStage, render_mode: str | None = None
) -> Any:
    kwargs = dict(stage.env_kwargs)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return make(stage.env_id, **kwargs)


def check_stage_spaces(stages: list[CurriculumStage], make: Callable[..., Any]) -> None:
    """Raise ``ValueError`` unless every stage has the first stage's spaces (as the agent
    sees them: MiniGrid's image, not its per-level mission text)."""

    register_env_families()
    first: tuple[Any, Any] | None = None
    for i, stage in enumerate(stages):
        try:
            env = wrap_observations(make_stage_env(make, stage))
        except gymnasium.error.Error as exc:
            raise ValueError(f"curriculum stage {i} ({stage.env_id}): {exc}") from None
        try:
            spaces = (env.observation_space, env.action_space)
        finally:
            env.close()
        if first is None:
            first = spaces
        elif spaces != first:
            raise ValueError(
                f"curriculum stage {i} ({stage.env_id}) has spaces {spaces[0]} / {spaces[1]} "
                f"but stage 0 has {first[0]} / {first[1]}; every stage needs the same spaces"
            )


class CurriculumEnv(gymnasium.Env):  # type: ignore[type-arg]
    """Plays the current stage's env; switches stage at reset."""

    def __init__(
        self,
        progress: ScheduleProgress,
        make: Callable[..., Any],
        render_mode: str | None = None,
    ) -> None:
        self.progress = progress
        self._make = make
        self.render_mode = render_mode
        self._index = progress.index
        self.env = make_stage_env(make, progress.stages[self._index], render_mode)
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.metadata = {
            "render_modes": ["rgb_array"],
            "render_fps": self.env.metadata.get("render_fps", 30),
        }
        self._return = 0.0

    @property
    def stage_index(self) -> int:
        return self._index

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self.progress.index != self._index:
            self.env.close()
            self._index = self.progress.index
            self.env = make_stage_env(
                self._make, self.progress.stages[self._index], self.render_mode
            )
        self._return = 0.0
        obs, info = self.env.reset(seed=seed, options=options)
        info = dict(info)
        info["curriculum_stage"] = self._index
        return obs, info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        done = bool(terminated or truncated)
        self.progress.record(1, self._return if done else None)
        info = dict(info)
        info["curriculum_stage"] = self._index
        return obs, reward, terminated, truncated, info

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def register_curriculum(progress: ScheduleProgress, make: Callable[..., Any]) -> Callable[[], None]:
    """Register :data:`CURRICULUM_ENV_ID` for this run; returns the function that removes it."""

    def entry_point(**kwargs: Any) -> CurriculumEnv:
        return CurriculumEnv(progress, make, render_mode=kwargs.get("render_mode"))

    gymnasium.register(id=CURRICULUM_ENV_ID, entry_point=entry_point, disable_env_checker=True)

    def unregister() -> None:
        gymnasium.registry.pop(CURRICULUM_ENV_ID, None)

    return unregister


__all__ = [
    "CURRICULUM_ENV_ID",
    "CurriculumEnv",
    "check_stage_spaces",
    "make_stage_env",
    "register_curriculum",
]
