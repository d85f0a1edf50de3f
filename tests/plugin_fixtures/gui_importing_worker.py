"""An upstream-style factory that imports the platform's classes from ``gym_gui.core.worker``
inside the factory (as the guide's step 4 does), wraps no library (``None``), and passes only
the capability fields the guide passes."""

from __future__ import annotations


def get_worker_metadata() -> tuple:
    from gym_gui.core.worker import WorkerCapabilities, WorkerMetadata

    metadata = WorkerMetadata(
        name="GUI-importing Worker",
        version="0.3.0",
        description="imports gym_gui.core.worker",
        author="someone",
        homepage="",
        upstream_library=None,
        upstream_version=None,
        license="MIT",
    )
    capabilities = WorkerCapabilities(
        worker_type="guidelike",
        supported_paradigms=("sequential",),
        env_families=("gymnasium",),
        action_spaces=("discrete",),
        observation_spaces=("vector",),
        max_agents=1,
        supports_checkpointing=True,
        requires_gpu=False,
    )
    return metadata, capabilities
