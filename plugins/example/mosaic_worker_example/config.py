"""The example worker's configuration: the SDK's WorkerConfig plus our own fields.

Every field has a default, so `mosaic run example` works with no config file at all.
Unknown keys are rejected by the base class with a message that names them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mosaic_sdk.contract import WorkerConfig


class ExampleConfig(WorkerConfig):
    env_id: str = Field("CartPole-v1", description="Any registered gymnasium env id")
    episodes: int = Field(5, ge=1, le=1_000_000, description="Episodes to run")
    max_steps_per_episode: int | None = Field(
        None, ge=1, description="Truncate episodes after this many steps (None: the env's limit)"
    )
    policy: Literal["balance", "random", "reinforce"] = Field(
        "balance",
        description="'balance' pushes the cart under the pole (CartPole only); 'random' samples; "
        "'reinforce' learns (REINFORCE, a linear softmax policy; discrete actions) and reports "
        "its loss and entropy as series",
    )
    learning_rate: float = Field(0.5, gt=0, description="Step size of policy 'reinforce'")
    gamma: float = Field(0.99, ge=0, le=1, description="Discount of policy 'reinforce'")
    resume_from: str | None = Field(
        None,
        description="A checkpoint of this worker (the checkpoint_saved event's path) whose "
        "policy 'reinforce' weights the run starts from (population-based training resumes "
        "trials this way)",
    )
    step_every: int = Field(1, ge=1, description="Write every Nth step line (episode ends always)")
    include_observations: bool = Field(True, description="Put observations into step lines")
    heartbeat_interval: float | None = Field(
        None, gt=0, description="Seconds between heartbeats (None: MOSAIC_HEARTBEAT_INTERVAL or 30)"
    )
    step_delay_ms: float = Field(0.0, ge=0, description="Sleep per step, to watch a slow run")
    mode: Literal["train", "interactive"] = Field(
        "train",
        description="'train' runs the episodes; 'interactive' serves reset/step commands on "
        "stdin (the control protocol; `mosaic play example`)",
    )
    json_frames: bool = Field(
        False,
        description="Interactive mode: dialect-1.0 replies carry every frame as a JSON list, as "
        "the deployed CleanRL worker does (slow; FastLane is the fast path)",
    )
    fastlane: bool | None = Field(
        None,
        description="Publish rendered frames to FastLane: true on, false off, null (default) "
        "as the launcher says (MOSAIC_FASTLANE=1 or MOSAIC_FASTLANE_ONLY=1)",
    )
