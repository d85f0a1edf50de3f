"""A worker config arrives flat or nested in a job descriptor (``metadata.worker.config``):
:func:`unwrap_job_descriptor` is the one place that tells them apart.

Layer 1: standard library only, so the ``gym_gui`` stand-in's config loader uses it without
importing pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def unwrap_job_descriptor(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the worker config from either the flat form or a job descriptor.

    A job descriptor nests it under ``metadata.worker.config``; a ``run_id`` found at the
    descriptor's top level (or under ``metadata``) is used when the nested config has none.
    """
    metadata = data.get("metadata")
    if isinstance(metadata, Mapping):
        worker = metadata.get("worker")
        if isinstance(worker, Mapping) and isinstance(worker.get("config"), Mapping):
            config = dict(worker["config"])
            if "run_id" not in config:
                for source in (data, metadata):
                    if isinstance(source.get("run_id"), str):
                        config["run_id"] = source["run_id"]
                        break
            return config
    return dict(data)
