"""The meta-path finder that provides ``gym_gui.core.worker`` when ``gym_gui`` is absent."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: The only names the stand-in answers, parents first.
STAND_IN_MODULES: tuple[str, ...] = ("gym_gui", "gym_gui.core", "gym_gui.core.worker")

#: Attribute set to True on every stand-in module.
STAND_IN_MARK = "__mosaic_stand_in__"

_CORE_WORKER_SOURCE = Path(__file__).with_name("core_worker.py")

_PACKAGE_DOCS = {
    "gym_gui": "The SDK's stand-in for the MOSAIC GUI package, which is not installed here: "
    "it holds only core.worker (see mosaic_sdk.plugins.gym_gui_stand_in).",
    "gym_gui.core": "The SDK's stand-in for gym_gui.core: it holds only worker.",
}


def is_stand_in(module: Any) -> bool:
    """Whether ``module`` is one of the stand-in modules (not a real ``gym_gui``)."""
    return getattr(module, STAND_IN_MARK, False) is True


class _EmptyPackageLoader(importlib.abc.Loader):
    """Makes ``gym_gui`` and ``gym_gui.core``: empty packages with no search path, so the
    import system finds no submodule in them other than the ones this finder serves."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__doc__ = _PACKAGE_DOCS[module.__name__]
        setattr(module, STAND_IN_MARK, True)


_LOADER = _EmptyPackageLoader()


class GymGuiStandInFinder(importlib.abc.MetaPathFinder):
    """Serves :data:`STAND_IN_MODULES`, only while no real ``gym_gui`` can be imported."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in STAND_IN_MODULES:
            return None
        if fullname == "gym_gui":
            if self._importable_elsewhere(fullname, path, target):
                return None
        elif not is_stand_in(sys.modules.get(fullname.rpartition(".")[0])):
            return None  # below a real gym_gui: never fill in its gaps
        if fullname == "gym_gui.core.worker":
            return importlib.util.spec_from_file_location(fullname, _CORE_WORKER_SOURCE)
        return importlib.machinery.ModuleSpec(fullname, _LOADER, is_package=True)

    def _importable_elsewhere(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> bool:
        for finder in list(sys.meta_path):
            if isinstance(finder, GymGuiStandInFinder):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            try:
                if find(fullname, path, target) is not None:
                    return True
            except Exception:  # noqa: BLE001 - a broken finder is not a gym_gui
                continue
        return False


def install_gym_gui_stand_in() -> GymGuiStandInFinder:
    """Append the finder to ``sys.meta_path`` unless it is there; return it.

    Idempotent and harmless when ``gym_gui`` is installed: then the finder never answers.
    """
    for finder in sys.meta_path:
        if isinstance(finder, GymGuiStandInFinder):
            return finder
    finder = GymGuiStandInFinder()
    sys.meta_path.append(finder)
    return finder


def uninstall_gym_gui_stand_in() -> None:
    """Remove the finder and forget the stand-in modules already imported (for tests)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GymGuiStandInFinder)]
    for name in reversed(STAND_IN_MODULES):
        if is_stand_in(sys.modules.get(name)):
            del sys.modules[name]


__all__ = [
    "STAND_IN_MARK",
    "STAND_IN_MODULES",
    "GymGuiStandInFinder",
    "install_gym_gui_stand_in",
    "is_stand_in",
    "uninstall_gym_gui_stand_in",
]
