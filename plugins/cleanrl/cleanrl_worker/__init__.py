"""mosaic-worker-cleanrl: CleanRL's single-file algorithms as a MOSAIC worker (see README.md).

Public entry points: :func:`algorithm_table` (what ``mosaic workers show cleanrl`` lists) and
:class:`CleanRLConfig` (the run configuration). Both are imported lazily so that importing
the package stays cheap for discovery.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def algorithm_table(cleanrl_path: str | None = None) -> list[dict[str, Any]]:
    """One row per registered algorithm: name, module, source, importable, missing modules."""
    from cleanrl_worker.registry import algorithm_table as table

    return table(cleanrl_path)


def __getattr__(name: str) -> Any:
    if name == "CleanRLConfig":
        from cleanrl_worker.config import CleanRLConfig

        return CleanRLConfig
    raise AttributeError(f"module 'cleanrl_worker' has no attribute {name!r}")


__all__ = ["CleanRLConfig", "__version__", "algorithm_table"]
