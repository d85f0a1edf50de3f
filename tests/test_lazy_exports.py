"""One lazy-export mechanism for the SDK's packages: every listed name resolves, nothing else."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from mosaic_sdk.lazy_exports import LazyExports

PACKAGES = [
    "mosaic_sdk",
    "mosaic_sdk.fastlane",
    "mosaic_sdk.runner",
    "mosaic_sdk.shm",
    "mosaic_sdk.plots",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_lazy_name_resolves_and_is_listed(package: str) -> None:
    module = importlib.import_module(package)
    lazy = module._LAZY
    assert isinstance(lazy, LazyExports) and module.__getattr__ == lazy.get
    for name in lazy.names:
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(lazy.names[name]), name)
        assert name in module.__all__ and name in dir(module)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        module.nope  # noqa: B018


def test_a_resolved_name_is_cached_in_the_package() -> None:
    code = (
        "import sys, mosaic_sdk.runner as r; "
        "assert 'RunStore' not in vars(r); "
        "assert 'mosaic_sdk.runner.storage.store' not in sys.modules; "
        "r.RunStore; print('RunStore' in vars(r))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_the_helper_is_the_only_module_getattr() -> None:
    for package in PACKAGES:
        source = importlib.import_module(package).__file__
        assert source is not None
        with open(source, encoding="utf-8") as fh:
            assert "def __getattr__" not in fh.read(), package
