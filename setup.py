"""Builds the optional native atomics helper; everything else lives in pyproject.toml.

The extension is optional: on a machine without a C compiler the build goes on without it,
and ``mosaic_sdk.shm.atomics`` falls back to pure Python where the CPU allows it (x86).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


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
    cmdclass={"build_ext": OptionalBuildExt},
)
