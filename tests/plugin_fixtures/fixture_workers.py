"""Small in-test workers for discovery tests (registered through MOSAIC_PLUGINS)."""

from __future__ import annotations

from types import SimpleNamespace

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import WorkerCapabilities, WorkerMetadata


class GoodWorker:
    @hookimpl
    def mosaic_worker_describe(self):
        return WorkerMetadata(name="Good", version="1.0", license="MIT"), WorkerCapabilities(
            worker_type="good"
        )


class MismatchedWorker:
    @hookimpl
    def mosaic_worker_describe(self):
        return WorkerMetadata(name="M", version="1.0"), WorkerCapabilities(worker_type="other")


class InvalidDescription:
    @hookimpl
    def mosaic_worker_describe(self):
        return WorkerMetadata(name="I", version="1.0"), {"worker_type": "invalid", "max_agents": 0}


def upstream_factory():
    """The platform's style: a callable returning (metadata, capabilities) as plain objects."""
    meta = SimpleNamespace(
        name="Legacy Worker",
        version="2.0.0",
        description="old style",
        author="someone",
        homepage="",
        upstream_library="mylib",
        upstream_version="1.0",
        license="MIT",
    )
    caps = SimpleNamespace(
        worker_type="legacy",
        supported_paradigms=["sequential"],
        env_families=["gymnasium"],
        action_spaces=["discrete"],
        observation_spaces=["vector"],
        max_agents=1,
        supports_self_play=False,
        supports_population=False,
        supports_checkpointing=True,
        supports_pause_resume=False,
        requires_gpu=False,
        gpu_memory_mb=None,
        cpu_cores=1,
        estimated_memory_mb=256,
    )
    return meta, caps


def not_a_pair():
    return "nope"


NOT_CALLABLE = 42
