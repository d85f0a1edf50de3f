"""Factories returning dataclasses shaped exactly like the platform's ``WorkerMetadata`` and
``WorkerCapabilities``: frozen, every field required (no defaults), the platform's field order
and types, ``Optional`` where the platform says so, tuples for the vocabularies.

Registered through ``MOSAIC_PLUGINS`` (e.g. ``plain=platform_shaped:with_none``).

Also the platform's discovery as its code does it (UPSTREAM.md, "Worker contract and
discovery"): :func:`write_gym_gui` makes a ``gym_gui.core.worker`` package whose classes are
these dataclasses, and :func:`platform_discover` loads entry points as the platform does
(``ep.load()()``, a 2-tuple, ``isinstance`` against that package's classes). Run as a script
(``python platform_shaped.py``, with this directory and the package's root on
``PYTHONPATH``), it prints what it finds among the installed entry points as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Optional


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


GYM_GUI_CORE_WORKER = """\
from platform_shaped import PlatformCapabilities as WorkerCapabilities
from platform_shaped import PlatformMetadata as WorkerMetadata
"""


def write_gym_gui(root: Path) -> Path:
    """A ``gym_gui`` package in ``root`` whose ``core.worker`` has the platform-shaped classes;
    returns ``root`` (put it on ``sys.path``)."""
    package = root / "gym_gui" / "core" / "worker"
    package.mkdir(parents=True)
    (root / "gym_gui" / "__init__.py").write_text("")
    (root / "gym_gui" / "core" / "__init__.py").write_text("")
    (package / "__init__.py").write_text(GYM_GUI_CORE_WORKER)
    return root


def platform_discover(
    entry_points: Any,
) -> tuple[dict[str, tuple[Any, Any]], dict[str, str]]:
    """What the platform's discovery keeps (name: (metadata, capabilities)), and why it skips
    the others, by its rules."""
    from gym_gui.core.worker import (  # type: ignore[import-not-found]
        WorkerCapabilities as GuiCapabilities,
    )
    from gym_gui.core.worker import (  # type: ignore[import-not-found]
        WorkerMetadata as GuiMetadata,
    )

    found: dict[str, tuple[Any, Any]] = {}
    skipped: dict[str, str] = {}
    for ep in entry_points:
        try:
            factory = ep.load()
            result = factory()
        except Exception as exc:  # noqa: BLE001 - the platform logs and skips
            skipped[ep.name] = f"{type(exc).__name__}: {exc}"
            continue
        if not isinstance(result, tuple) or len(result) != 2:
            skipped[ep.name] = f"not a 2-tuple: {type(result)}"
            continue
        meta, caps = result
        if not isinstance(meta, GuiMetadata):
            skipped[ep.name] = f"invalid metadata type: {type(meta)}"
            continue
        if not isinstance(caps, GuiCapabilities):
            skipped[ep.name] = f"invalid capabilities type: {type(caps)}"
            continue
        found[ep.name] = (meta, caps)
    return found, skipped


if __name__ == "__main__":
    found, skipped = platform_discover(importlib_metadata.entry_points(group="mosaic.workers"))
    print(
        json.dumps(
            {
                "found": {
                    name: {
                        "metadata_class": f"{type(m).__module__}.{type(m).__qualname__}",
                        "name": m.name,
                        "worker_type": c.worker_type,
                    }
                    for name, (m, c) in found.items()
                },
                "skipped": skipped,
            }
        )
    )
