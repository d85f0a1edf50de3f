"""Optional dependencies: importing one, or saying which pip command installs it."""

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
    "submit": ("grpcio>=1.60", "protobuf>=4.25"),
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
