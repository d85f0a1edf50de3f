"""mosaic-worker-cleanrl: CleanRL's single-file algorithms as a MOSAIC worker (see README.md).

Public entry points: :func:`algorithm_table` (what ``mosaic workers show cleanrl`` lists),
:func:`algo_params_schemas` (the JSON Schema of each algorithm's ``algo_params``) and
:class:`CleanRLConfig` (the run configuration). Both are imported lazily so that importing
the package stays cheap for discovery.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def algorithm_table(
    cleanrl_path: str | None = None, gym_compat: str = "auto"
) -> list[dict[str, Any]]:
    """One row per registered algorithm: name, module, source, whether it runs here and why
    not, missing modules, its number of ``algo_params`` (see
    :func:`mosaic_worker_cleanrl.registry.algorithm_table`)."""
    # start-up time: discovery imports this module
    from mosaic_worker_cleanrl.registry import algorithm_table as table

    return table(cleanrl_path, gym_compat)


def algo_params_schemas(cleanrl_path: str | None = None) -> dict[str, dict[str, Any]]:
    """``{algo: JSON Schema of its algo_params}``, read from each script's own arguments."""
    # start-up time: discovery imports this module
    from mosaic_worker_cleanrl.registry import algo_params_schemas as schemas

    return schemas(cleanrl_path)


def __getattr__(name: str) -> Any:
    if name == "CleanRLConfig":
        # start-up time: discovery imports this module
        from mosaic_worker_cleanrl.config import CleanRLConfig

        return CleanRLConfig
    raise AttributeError(f"module 'mosaic_worker_cleanrl' has no attribute {name!r}")


__all__ = ["CleanRLConfig", "__version__", "algo_params_schemas", "algorithm_table"]
