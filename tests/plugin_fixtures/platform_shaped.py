"""Factories returning dataclasses shaped exactly like the platform's ``WorkerMetadata`` and
``WorkerCapabilities``: frozen, every field required (no defaults), the platform's field order
and types, ``Optional`` where the platform says so, tuples for the vocabularies.

Registered through ``MOSAIC_PLUGINS`` (e.g. ``plain=platform_shaped:with_none``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class PlatformMetadata:
    name: str
    version: str
    description: str
    author: str
    homepage: str
    upstream_library: Optional[str]  # noqa: UP045 - spelled as the platform spells it
    upstream_version: Optional[str]  # noqa: UP045
    license: str


@dataclass(frozen=True)
class PlatformCapabilities:
    worker_type: str
    supported_paradigms: tuple[str, ...]
    env_families: tuple[str, ...]
    action_spaces: tuple[str, ...]
    observation_spaces: tuple[str, ...]
    max_agents: int
    supports_self_play: bool
    supports_population: bool
    supports_checkpointing: bool
    supports_pause_resume: bool
    requires_gpu: bool
    gpu_memory_mb: Optional[int]  # noqa: UP045
    cpu_cores: int
    estimated_memory_mb: int


def metadata(**changes: object) -> PlatformMetadata:
    fields: dict[str, object] = {
        "name": "Plain Worker",
        "version": "1.2.0",
        "description": "wraps no library",
        "author": "someone",
        "homepage": "https://example.org/plain",
        "upstream_library": None,
        "upstream_version": None,
        "license": "MIT",
    }
    fields.update(changes)
    return PlatformMetadata(**fields)  # type: ignore[arg-type]


def capabilities(worker_type: str, **changes: object) -> PlatformCapabilities:
    fields: dict[str, object] = {
        "worker_type": worker_type,
        "supported_paradigms": ("sequential", "turn_based"),
        "env_families": ("gymnasium", "pettingzoo"),
        "action_spaces": ("discrete", "continuous"),
        "observation_spaces": ("vector", "image"),
        "max_agents": 4,
        "supports_self_play": True,
        "supports_population": False,
        "supports_checkpointing": True,
        "supports_pause_resume": False,
        "requires_gpu": False,
        "gpu_memory_mb": None,
        "cpu_cores": 2,
        "estimated_memory_mb": 768,
    }
    fields.update(changes)
    return PlatformCapabilities(**fields)  # type: ignore[arg-type]


def with_none() -> tuple[PlatformMetadata, PlatformCapabilities]:
    """A worker that wraps no library: every Optional field is None."""
    return metadata(), capabilities("plain")


def with_values() -> tuple[PlatformMetadata, PlatformCapabilities]:
    """The same worker with every Optional field set."""
    return (
        metadata(upstream_library="mylib", upstream_version="3.1.4"),
        capabilities("valued", requires_gpu=True, gpu_memory_mb=2048),
    )
