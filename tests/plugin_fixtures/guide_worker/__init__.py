"""A worker written exactly the way the platform's worker package guide shows (upstream style):
a dataclass config, hand-written JSON prints, and a get_worker_metadata() factory."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metadata:
    name: str
    version: str
    description: str
    author: str
    homepage: str
    upstream_library: str
    upstream_version: str
    license: str


@dataclass(frozen=True)
class Capabilities:
    worker_type: str
    supported_paradigms: tuple
    env_families: tuple
    action_spaces: tuple
    observation_spaces: tuple
    max_agents: int
    supports_checkpointing: bool
    requires_gpu: bool


def get_worker_metadata() -> tuple:
    return (
        Metadata(
            "Guide Worker", "1.0.0", "written to the guide", "someone", "", "mylib", "1.0.0", "MIT"
        ),
        Capabilities(
            "guide", ("sequential",), ("gymnasium",), ("discrete",), ("vector",), 1, False, False
        ),
    )
