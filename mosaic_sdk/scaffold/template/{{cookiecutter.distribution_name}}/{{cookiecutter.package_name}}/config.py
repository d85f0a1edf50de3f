{%- set pz = cookiecutter.env_family == "pettingzoo" %}
{%- set tb = cookiecutter.paradigm == "turn_based" -%}
"""The worker's configuration: the SDK's ``WorkerConfig`` (``run_id``, ``seed``) plus ours.

Every field has a default, so ``mosaic run {{ cookiecutter.worker_type }}`` works without a
config file. Unknown keys are refused with a message naming them; values are validated by
pydantic (``episodes=0`` is an error that says what is allowed).
Add the hyper-parameters of your algorithm here.
"""

from __future__ import annotations
{% if not pz or tb %}
from typing import Literal
{% endif %}
from mosaic_sdk.contract import WorkerConfig
from pydantic import Field

DEFAULT_ENV_ID = {{ cookiecutter.env_id|py_str }}


class {{ cookiecutter.package_name|replace("_", " ")|title|replace(" ", "") }}Config(WorkerConfig):
    """Configuration of one run."""
{% if pz %}
    env_id: str = Field(
        DEFAULT_ENV_ID,
        description="The module of a PettingZoo env with {{ 'env() (AEC, turn-based)' if tb else 'parallel_env()' }}",
    )
    episodes: int = Field(5, ge=1, le=1_000_000, description="Games (episodes) to play")
{%- if not tb %}
    max_cycles: int = Field(
        15, ge=1, le=100_000, description="Steps after which the env truncates a game"
    )
{%- endif %}
{%- else %}
    env_id: str = Field(DEFAULT_ENV_ID, description="Any registered gymnasium env id")
    episodes: int = Field(5, ge=1, le=1_000_000, description="Episodes to run")
    max_steps_per_episode: int | None = Field(
        None, ge=1, description="Truncate episodes after this many steps (None: the env's limit)"
    )
{%- endif %}
    learning_rate: float = Field(
        0.1, gt=0, le=1, description="Step size of the action-preference update"
    )
    exploration: float = Field(
        0.1, ge=0, le=1, description="Probability of a uniformly random{{ ' (legal)' if pz }} action"
    )
{%- if pz %}
    shared_policy: bool = Field(
        {{ "True" if tb else "False" }},
        description="One policy for every agent (self-play) instead of one policy per agent",
    )
{%- endif %}
    step_delay_ms: float = Field(
        0.0, ge=0, le=10_000, description="Sleep per {{ 'move' if pz and tb else 'step' }} (watch a run live)"
    )
    step_every: int = Field(1, ge=1, description="Write every Nth step line (episode ends always)")
    heartbeat_interval: float | None = Field(
        None, gt=0, description="Seconds between heartbeats (None: the SDK default)"
    )
{%- if not pz or tb %}
    mode: Literal["train", "interactive"] = Field(
        "train",
{%- if not pz %}
        description="'train' learns; 'interactive' serves reset/step commands on stdin "
        "(the SDK's control protocol; `mosaic play {{ cookiecutter.worker_type }}`)",
    )
{%- else %}
        description="'train' plays and learns; 'interactive' first learns from `episodes` "
        "games, then serves reset/step commands on stdin: a person plays `human` against the "
        "policy (`mosaic play {{ cookiecutter.worker_type }}`)",
    )
    human: str | None = Field(
        None, description="Interactive mode: the agent a person plays (None: the last agent)"
    )
{%- endif %}
{%- endif %}
{%- if cookiecutter.include_fastlane %}
    fastlane: bool | None = Field(
        None,
{%- if pz %}
        description="Publish the board to FastLane (the run's stream and one per agent): true "
        "on, false off, null (default) as the launcher says (MOSAIC_FASTLANE=1 or "
        "MOSAIC_FASTLANE_ONLY=1)",
{%- else %}
        description="Publish rendered frames to FastLane: true on, false off, null (default) "
        "as the launcher says (MOSAIC_FASTLANE=1 or MOSAIC_FASTLANE_ONLY=1)",
{%- endif %}
    )
{%- endif %}


#: The name the rest of the package uses.
Config = {{ cookiecutter.package_name|replace("_", " ")|title|replace(" ", "") }}Config
