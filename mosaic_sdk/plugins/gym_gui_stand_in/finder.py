"""The meta-path finder that provides the ``gym_gui`` names a worker imports when it is absent."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: Every served name, parents first: ``name -> (content module of this package or None for
#: an empty package, is_package)``. Nothing else below ``gym_gui`` ever resolves.
SERVED: dict[str, tuple[str | None, bool]] = {
    "gym_gui": (None, True),
    "gym_gui.core": (None, True),
    "gym_gui.core.worker": ("core_worker", False),
    "gym_gui.logging_config": ("logging_setup", True),
    "gym_gui.logging_config.log_constants": ("log_constants", False),
    "gym_gui.logging_config.helpers": ("logging_helpers", False),
    "gym_gui.config": (None, True),
    "gym_gui.config.paths": ("config_paths", False),
    "gym_gui.fastlane": ("fastlane", True),
    "gym_gui.fastlane.buffer": ("fastlane_buffer", False),
    "gym_gui.fastlane.tiling": ("fastlane_tiling", False),
    "gym_gui.fastlane.worker_helpers": ("fastlane_helpers", False),
    "gym_gui.telemetry": (None, True),
    "gym_gui.telemetry.semconv": ("semconv", False),
    "gym_gui.services": (None, True),
    "gym_gui.services.trainer": (None, True),
    "gym_gui.services.trainer.proto": (None, True),
    "gym_gui.services.trainer.proto.trainer_pb2": ("trainer_messages", False),
    "gym_gui.services.trainer.proto.trainer_pb2_grpc": ("trainer_stub", False),
}

#: Attribute set to True on every stand-in module.
STAND_IN_MARK = "__mosaic_stand_in__"

_PACKAGE = __name__.rpartition(".")[0]


def is_stand_in(module: Any) -> bool:
    """Whether ``module`` is one of the stand-in modules (not a real ``gym_gui``)."""
    return getattr(module, STAND_IN_MARK, False) is True


def content_module(name: str) -> ModuleType | None:
    """The module of this package that ``name`` (a served ``gym_gui`` name) presents."""
    content = SERVED[name][0]
    return None if content is None else importlib.import_module(f"{_PACKAGE}.{content}")


class _ServedLoader(importlib.abc.Loader):
    """Fills a fresh module with the public names of its content module. A package gets an
    empty search path, so the import system finds no submodule other than the served ones."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__
        content = content_module(name)
        setattr(module, STAND_IN_MARK, True)
        if content is None:
            module.__doc__ = (
                f"The SDK's stand-in for {name}: the MOSAIC GUI is not installed here "
                "(see mosaic_sdk.plugins.gym_gui_stand_in)."
            )
            return
        module.__doc__ = content.__doc__
        module.__all__ = list(getattr(content, "__all__", ()))  # type: ignore[attr-defined]
        for attr in module.__all__:
            setattr(module, attr, getattr(content, attr))
        for hook in ("__getattr__", "__dir__"):  # lazily made names (log constants)
            if hasattr(content, hook):
                setattr(module, hook, getattr(content, hook))


_LOADER = _ServedLoader()


class GymGuiStandInFinder(importlib.abc.MetaPathFinder):
    """Serves :data:`SERVED`, only while no real ``gym_gui`` can be imported."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SERVED:
            return None
        if fullname == "gym_gui":
            if self._importable_elsewhere(fullname, path, target):
                return None
        elif not is_stand_in(sys.modules.get(fullname.rpartition(".")[0])):
            return None  # below a real gym_gui: never fill in its gaps
        return importlib.machinery.ModuleSpec(
            fullname, _LOADER, is_package=SERVED[fullname][1], origin="mosaic-sdk stand-in"
        )

    def _importable_elsewhere(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> bool:
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if find is None or isinstance(finder, GymGuiStandInFinder):
                continue
            try:
                if find(fullname, path, target) is not None:
                    return True
            except Exception:  # noqa: BLE001 - a broken finder is not a gym_gui
                continue
        return False


def install_gym_gui_stand_in() -> GymGuiStandInFinder:
    """Append the finder to ``sys.meta_path`` unless it is there; return it. Harmless when
    ``gym_gui`` is installed: then the finder never answers."""
    for finder in sys.meta_path:
        if isinstance(finder, GymGuiStandInFinder):
            return finder
    finder = GymGuiStandInFinder()
    sys.meta_path.append(finder)
    return finder


def uninstall_gym_gui_stand_in() -> None:
    """Remove the finder and forget the stand-in modules already imported (for tests)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GymGuiStandInFinder)]
    for name in reversed(SERVED):
        if is_stand_in(sys.modules.get(name)):
            del sys.modules[name]
