"""Names a package exports but imports only on first use (PEP 562 module ``__getattr__``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping
from typing import Any


class LazyExports:
    """The lazy names of one package: ``{name: module that defines it}``."""

    def __init__(
        self,
        package: str,
        names: Mapping[str, str],
        eager: Iterable[str] = (),
        moved: Mapping[str, str] | None = None,
    ) -> None:
        self.package = package
        self.names = dict(names)
        self.eager = list(eager)
        # Public names that moved away: {name: the module that defines it now}. Reading one
        # fails with one line naming its new import (Gymnasium's habit); nothing is aliased.
        self.moved = dict(moved or {})

    def get(self, name: str) -> Any:
        """Import the module that defines ``name`` and return it; cached in the package."""
        new_home = self.moved.get(name)
        if new_home is not None:
            raise AttributeError(
                f"{self.package}.{name} moved: import it with 'from {new_home} import {name}'"
            )
        module = self.names.get(name)
        if module is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[self.package], name, value)  # the next read is a plain lookup
        return value

    def all(self) -> list[str]:
        """``__all__``: the eager names given, then the lazy ones, sorted."""
        return sorted({*self.eager, *self.names})

    def dir(self) -> list[str]:
        """``__dir__``: what the package holds now plus every lazy name."""
        return sorted({*vars(sys.modules[self.package]), *self.names})
