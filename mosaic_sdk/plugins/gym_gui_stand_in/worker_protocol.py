"""The platform's worker contract types, as the stand-in's ``gym_gui.core.worker`` gives them:
``WorkerMetadata``, ``WorkerCapabilities`` (frozen dataclasses with the platform's fields, in
its order, with its types) and the ``WorkerConfig`` / ``WorkerRuntime`` protocols."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol, runtime_checkable


@dataclass(frozen=True)
class WorkerMetadata:
    """Who the worker is (the platform's eight fields, all required, as upstream)."""

    name: str
    version: str
    description: str
    author: str
    homepage: str
    upstream_library: Optional[str]  # noqa: UP045 - the platform's spelling, kept
    upstream_version: Optional[str]  # noqa: UP045
    license: str


@dataclass(frozen=True)
class WorkerCapabilities:
    """What the worker can do: the platform's 14 fields, which it all requires; here the eight
    after ``max_agents`` default as in the SDK contract (the guide's example passes only some)."""

    worker_type: str
    supported_paradigms: tuple[str, ...]
    env_families: tuple[str, ...]
    action_spaces: tuple[str, ...]
    observation_spaces: tuple[str, ...]
    max_agents: int
    supports_self_play: bool = False
    supports_population: bool = False
    supports_checkpointing: bool = False
    supports_pause_resume: bool = False
    requires_gpu: bool = False
    gpu_memory_mb: Optional[int] = None  # noqa: UP045
    cpu_cores: int = 1
    estimated_memory_mb: int = 512

    def supports_paradigm(self, paradigm: str) -> bool:
        return paradigm in self.supported_paradigms

    def supports_env_family(self, family: str) -> bool:
        return family in self.env_families

    def is_multi_agent(self) -> bool:
        return self.max_agents > 1


@runtime_checkable
class WorkerConfig(Protocol):
    """A worker's config: ``run_id``, ``seed``, ``to_dict()`` and ``from_dict()``."""

    run_id: str
    seed: Optional[int]  # noqa: UP045

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerConfig: ...


@runtime_checkable
class WorkerRuntime(Protocol):
    """A worker's runtime: ``run()`` returns a summary dict."""

    def run(self) -> dict[str, Any]: ...


__all__ = ["WorkerCapabilities", "WorkerConfig", "WorkerMetadata", "WorkerRuntime"]
