"""The worker's configuration: the SDK's ``WorkerConfig`` (``run_id``, ``seed``) plus ours.

Every field has a default, so ``mosaic run {{ cookiecutter.worker_type }}`` works without a
config file. Unknown keys are refused with a message naming them; values are validated by
pydantic (``episodes=0`` is an error that says what is allowed).
Add the hyper-parameters of your algorithm here.
"""

from __future__ import annotations
{% if cookiecutter.paradigm == "turn_based" %}
from typing import Literal
{% endif %}
from mosaic_sdk.contract import WorkerConfig
from pydantic import Field

DEFAULT_ENV_ID = {{ cookiecutter.env_id|py_str }}


class {{ cookiecutter.package_name|replace("_", " ")|title|replace(" ", "") }}Config(WorkerConfig):
    """Configuration of one run."""

    env_id: str = Field(
        DEFAULT_ENV_ID,
        description="The module of a PettingZoo env with {{ 'env() (AEC, turn-based)' if cookiecutter.paradigm == 'turn_based' else 'parallel_env()' }}",
    )
    episodes: int = Field(5, ge=1, le=1_000_000, description="Games (episodes) to play")
{%- if cookiecutter.paradigm == 'simultaneous' %}
    max_cycles: int = Field(
        15, ge=1, le=100_000, description="Steps after which the env truncates a game"
    )
{%- endif %}
    learning_rate: float = Field(
        0.1, gt=0, le=1, description="Step size of the action-preference update"
    )
    exploration: float = Field(
        0.1, ge=0, le=1, description="Probability of a uniformly random (legal) action"
    )
    shared_policy: bool = Field(
        {{ "True" if cookiecutter.paradigm == "turn_based" else "False" }},
        description="One policy for every agent (self-play) instead of one policy per agent",
    )
    step_delay_ms: float = Field(
        0.0, ge=0, le=10_000, description="Sleep per {{ 'move' if cookiecutter.paradigm == 'turn_based' else 'step' }} (watch a run live)"
    )
    step_every: int = Field(1, ge=1, description="Write every Nth step line (episode ends always)")
    heartbeat_interval: float | None = Field(
        None, gt=0, description="Seconds between heartbeats (None: the SDK default)"
    )
{%- if cookiecutter.paradigm == "turn_based" %}
    mode: Literal["train", "interactive"] = Field(
        "train",
        description="'train' plays and learns; 'interactive' first learns from `episodes` "
        "games, then serves reset/step commands on stdin: a person plays `human` against the "
        "policy (`mosaic play {{ cookiecutter.worker_type }}`)",
    )
    human: str | None = Field(
        None, description="Interactive mode: the agent a person plays (None: the last agent)"
    )
{%- endif %}
{%- if cookiecutter.include_fastlane %}
    fastlane: bool | None = Field(
        None,
        description="Publish the board to FastLane (the run's stream and one per agent): true "
        "on, false off, null (default) as the launcher says (MOSAIC_FASTLANE=1 or "
        "MOSAIC_FASTLANE_ONLY=1)",
    )
{%- endif %}


#: The name the rest of the package uses.
Config = {{ cookiecutter.package_name|replace("_", " ")|title|replace(" ", "") }}Config
