"""Workers that all call themselves ``twin``, for the tests of shared names
(tests/test_worker_choice.py): SDK-native ones, upstream-style factories, a broken one. Each
class is instantiated by discovery, so two entry points naming one class are two plugins."""

from __future__ import annotations

from types import SimpleNamespace

from mosaic_sdk import hookimpl
from mosaic_sdk.contract import WorkerCapabilities, WorkerMetadata


class NativeTwin:
    display = "Native Twin"

    @hookimpl
    def mosaic_worker_describe(self):
        return WorkerMetadata(name=self.display, version="1.0"), WorkerCapabilities(
            worker_type="twin"
        )


class OtherNativeTwin(NativeTwin):
    display = "Other Native Twin"


class BrokenTwin:
    @hookimpl
    def mosaic_worker_describe(self):
        raise RuntimeError("this twin is broken")


def _upstream(display: str):
    meta = SimpleNamespace(name=display, version="2.0", upstream_library=None)
    caps = SimpleNamespace(worker_type="twin", supported_paradigms=["sequential"])
    return meta, caps


def upstream_twin():
    """The platform's style: a factory returning plain objects."""
    return _upstream("Upstream Twin")


def other_upstream_twin():
    return _upstream("Other Upstream Twin")
