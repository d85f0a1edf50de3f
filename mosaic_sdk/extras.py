"""Optional dependencies: importing one, or saying which pip command installs it.

The SDK's core install stays small; pictures and file formats that need a large library live
in extras of the distribution (``pyproject.toml``)::

    mosaic-worker-sdk[images]    Pillow: ``mosaic fastlane snapshot`` (PNG, JPEG, HUD text)
    mosaic-worker-sdk[plot]      matplotlib (and Pillow): ``mosaic runs plot``
    mosaic-worker-sdk[parquet]   pyarrow: ``mosaic runs export --format parquet``
    mosaic-worker-sdk[tensorboard]  tensorboardX: series as TensorBoard event files

:func:`require` imports a module of an extra or raises :class:`MissingExtraError`, whose
message names the feature, the missing module and the ``pip install`` line that fixes it.
Standard library only: any layer may use it.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

DISTRIBUTION = "mosaic-worker-sdk"

#: extra name -> the requirements it adds (``pyproject.toml`` says the same; a test checks)
EXTRAS = {
    "images": ("Pillow>=10.1",),
    "plot": ("matplotlib>=3.7", "Pillow>=10.1"),
    "parquet": ("pyarrow>=14",),
    "tensorboard": ("tensorboardX>=2.6",),
}


class MissingExtraError(ImportError):
    """A feature needs an optional dependency that is not installed (one-line message)."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra

    @property
    def install_command(self) -> str:
        return install_command(self.extra)


def install_command(extra: str) -> str:
    """The pip command that installs ``extra`` of the SDK."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def _libraries(extra: str) -> str:
    return " and ".join(re.split(r"[<>=!~; ]", req, maxsplit=1)[0] for req in EXTRAS[extra])


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` (part of ``extra``) or raise :class:`MissingExtraError`.

    ``feature`` says what needs it, e.g. ``"mosaic runs plot"``."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(sorted(EXTRAS))}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{feature} needs {_libraries(extra)} ({exc}); install the SDK's {extra!r} extra: "
            f"{install_command(extra)} (from a checkout: pip install -e '.[{extra}]')",
            extra,
        ) from None


__all__ = ["DISTRIBUTION", "EXTRAS", "MissingExtraError", "install_command", "require"]
