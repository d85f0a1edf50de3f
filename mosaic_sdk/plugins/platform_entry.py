"""``platform_factory``: the ``mosaic.workers`` entry point both the platform and the SDK load."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from types import ModuleType
from typing import Any

#: An entry-point object that has this attribute stands for the plugin it names (a module
#: name, or the plugin object itself): SDK discovery registers that plugin.
PLUGIN_ATTRIBUTE = "__mosaic_plugin__"

#: The module whose ``WorkerMetadata`` and ``WorkerCapabilities`` the platform checks against.
PLATFORM_MODULE = "gym_gui.core.worker"
_PLATFORM_PACKAGES = ("gym_gui", "gym_gui.core", PLATFORM_MODULE)


class PlatformFactory:
    """``(WorkerMetadata, WorkerCapabilities)`` of one plugin module, in the platform's classes."""

    __slots__ = ("__mosaic_plugin__",)

    def __init__(self, module_name: str) -> None:
        self.__mosaic_plugin__ = module_name

    @property
    def module_name(self) -> str:
        return self.__mosaic_plugin__

    def plugin_module(self) -> ModuleType:
        """The plugin module (imported if it is not yet)."""
        module = sys.modules.get(self.__mosaic_plugin__)
        return module if module is not None else importlib.import_module(self.__mosaic_plugin__)

    def __call__(self) -> tuple[object, object]:
        module = self.plugin_module()
        describe = getattr(module, "mosaic_worker_describe", None)
        if describe is None:
            raise TypeError(
                f"{self.__mosaic_plugin__} has no mosaic_worker_describe hook; "
                "platform_factory(__name__) belongs in the module that implements it"
            )
        result = describe()
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(
                f"{self.__mosaic_plugin__}.mosaic_worker_describe returned "
                f"{type(result).__name__}; expected a (metadata, capabilities) pair"
            )
        return as_platform_pair(*result)

    def __repr__(self) -> str:
        return f"platform_factory({self.__mosaic_plugin__!r})"


def platform_factory(module_name: str) -> PlatformFactory:
    """The entry-point callable of the plugin module ``module_name`` (pass ``__name__``)."""
    if not isinstance(module_name, str) or not module_name:
        raise TypeError(
            f"platform_factory takes the plugin module's name (write "
            f"platform_factory(__name__)), not {type(module_name).__name__}"
        )
    return PlatformFactory(module_name)


def platform_classes() -> tuple[type[Any], type[Any]] | None:
    """``(WorkerMetadata, WorkerCapabilities)`` of the ``gym_gui.core.worker`` this process
    imports (the platform's, or the SDK's stand-in when installed and answering); ``None``
    when there is none."""
    module = sys.modules.get(PLATFORM_MODULE)
    if module is None:
        try:
            module = importlib.import_module(PLATFORM_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name not in _PLATFORM_PACKAGES:
                raise  # a gym_gui that is there but cannot import: say so, do not hide it
            return None
    return module.WorkerMetadata, module.WorkerCapabilities


def as_platform_pair(metadata: object, capabilities: object) -> tuple[object, object]:
    """``metadata`` and ``capabilities`` (the SDK's models, or anything with their fields) as
    instances of the platform's classes when there are some, else as the SDK's models."""
    # Imported here: a plugin module makes its factory at import, without pydantic.
    from mosaic_sdk.plugins.upstream import sdk_pair

    metadata, capabilities = sdk_pair(metadata, capabilities)
    classes = platform_classes()
    if classes is None:
        return metadata, capabilities
    meta_cls, caps_cls = classes
    return _as_dataclass(meta_cls, metadata), _as_dataclass(caps_cls, capabilities)


def _as_dataclass(cls: type[Any], model: object) -> object:
    """An instance of the dataclass ``cls`` with its fields taken from ``model``: lists become
    tuples, ``None`` stays ``None``, fields ``cls`` does not have are left out."""
    kwargs: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if not hasattr(model, f.name):
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise TypeError(
                    f"{cls.__module__}.{cls.__qualname__} requires {f.name!r}, which "
                    f"{type(model).__name__} does not have; this mosaic-worker-sdk does not "
                    "know that platform version"
                )
            continue
        value = getattr(model, f.name)
        kwargs[f.name] = tuple(value) if isinstance(value, (list, set, frozenset)) else value
    return cls(**kwargs)
