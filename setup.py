"""Builds the optional native atomics helper and fetches the chart libraries of mosaic watch
(uPlot, ECharts); the rest is in pyproject.toml.

The extension is optional: on a machine without a C compiler the build goes on without it,
and ``mosaic_sdk.shm.atomics`` falls back to pure Python where the CPU allows it (x86).

uPlot and ECharts (``mosaic watch``'s charts) are not: every build (wheel, sdist, editable)
fetches their pinned releases from the npm registry into ``mosaic_sdk/watch/static/vendor/``
and checks their sha512 (``mosaic_sdk/watch/vendor.py``), or fails saying how to build offline.
"""

import importlib.util
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def vendor_uplot() -> None:
    """Run mosaic_sdk/watch/vendor.py by its path (the SDK's dependencies are not installed
    yet, so the package itself cannot be imported)."""
    spec = importlib.util.spec_from_file_location(
        "_mosaic_uplot_vendor", HERE / "mosaic_sdk" / "watch" / "vendor.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    try:
        module.ensure_all()
    except module.VendorError as exc:
        sys.exit(f"error: {exc}")


class BuildPyWithUplot(build_py):
    def run(self) -> None:
        vendor_uplot()  # before the package data is collected
        super().run()


class OptionalBuildExt(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any compiler failure means "build without it"
            print(f"warning: mosaic_sdk native atomics not built ({exc}); using the fallback")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            print(f"warning: could not build {ext.name} ({exc}); using the fallback")


setup(
    ext_modules=[
        Extension(
            "mosaic_sdk.shm._atomics",
            sources=["mosaic_sdk/shm/_atomics.c"],
            extra_compile_args=["-O2", "-std=c11"],
            optional=True,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithUplot},
)
