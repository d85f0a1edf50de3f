"""Built-in curriculum schedules, usable by name: ``"curriculum_schedule": "babyai_goto"``.

- ``babyai_goto`` (:data:`BABYAI_GOTO_CURRICULUM`): the GoTo progression of BabyAI, as the
  platform's documents schedule it: go to the red ball without distractors, with them, to any
  named object, then in a room full of objects; 200k steps per stage, the last to the end.
- ``babyai_doorkey`` (:data:`BABYAI_DOORKEY_CURRICULUM`): MiniGrid's DoorKey from 5x5 to
  16x16; a stage ends when the mean return of its last 20 episodes reaches 0.9, or after 300k
  steps.

Every stage observes the same 7x7x3 view (after ``ImgObsWrapper``) and has 7 actions, so one
agent plays them all. They need the ``minigrid`` extra.
"""

from __future__ import annotations

from typing import Any

BABYAI_GOTO_CURRICULUM: tuple[dict[str, Any], ...] = (
    {"env_id": "BabyAI-GoToRedBallNoDists-v0", "steps": 200_000},
    {"env_id": "BabyAI-GoToRedBall-v0", "steps": 200_000},
    {"env_id": "BabyAI-GoToObj-v0", "steps": 200_000},
    {"env_id": "BabyAI-GoToLocal-v0"},
)

BABYAI_DOORKEY_CURRICULUM: tuple[dict[str, Any], ...] = (
    {"env_id": "MiniGrid-DoorKey-5x5-v0", "until": "episode_return>=0.9|steps>=300000"},
    {"env_id": "MiniGrid-DoorKey-6x6-v0", "until": "episode_return>=0.9|steps>=300000"},
    {"env_id": "MiniGrid-DoorKey-8x8-v0", "until": "episode_return>=0.9|steps>=300000"},
    {"env_id": "MiniGrid-DoorKey-16x16-v0"},
)

PRESETS: dict[str, tuple[dict[str, Any], ...]] = {
    "babyai_goto": BABYAI_GOTO_CURRICULUM,
    "babyai_doorkey": BABYAI_DOORKEY_CURRICULUM,
}


def preset_schedule(name: str) -> list[dict[str, Any]]:
    """The stages of preset ``name`` (copies); ``ValueError`` naming the presets otherwise."""
    try:
        stages = PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown curriculum preset {name!r}; presets: {', '.join(sorted(PRESETS))} "
            "(or give the stages as a list)"
        ) from None
    return [dict(stage) for stage in stages]


__all__ = ["BABYAI_DOORKEY_CURRICULUM", "BABYAI_GOTO_CURRICULUM", "PRESETS", "preset_schedule"]
