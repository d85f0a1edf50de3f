"""``mosaic_sdk.runner`` keeps a few modules at its top and the rest in sub-packages; the flat
paths of before the split (``mosaic_sdk.runner.store``) are gone, not aliased."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import mosaic_sdk

RUNNER = Path(mosaic_sdk.__file__).parent / "runner"

#: Modules that lived at ``mosaic_sdk.runner.NAME`` before the split, with their home now.
SPLIT = {
    "store": "storage",
    "writer": "storage",
    "lifecycle": "supervision",
    "process": "supervision",
    "observers": "recording",
    "recorder": "recording",
    "control_relay": "control",
}


def test_the_top_keeps_only_the_front() -> None:
    """Issue 23: ``runner/`` keeps a few modules at its top; the rest live in sub-packages."""
    top = {p.stem for p in RUNNER.glob("*.py")} - {"__init__"}
    assert top == {"supervisor", "live", "reporting", "printable"}


@pytest.mark.parametrize("name", sorted(SPLIT))
def test_a_flat_path_is_gone_and_the_module_is_at_its_home(name: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"mosaic_sdk.runner.{name}")
    assert importlib.import_module(f"mosaic_sdk.runner.{SPLIT[name]}.{name}").__file__
