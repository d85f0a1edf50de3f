"""mosaic_sdk.extras: the optional dependencies, and the message when one is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mosaic_sdk.extras import EXTRAS, MissingExtraError, install_command, require

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]


def test_the_extras_named_in_messages_are_those_of_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    for extra, requirements in EXTRAS.items():
        assert declared.get(extra) == list(requirements), extra


def test_scripts_test_installs_every_extra_so_ci_runs_their_tests():
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    installed = script.split('pip_install -e ".[', 1)[1].split("]", 1)[0].split(",")
    assert set(EXTRAS) <= set(installed)


def test_require_names_the_feature_the_library_and_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as err:
        require("matplotlib", "plot", "mosaic runs plot")
    message = str(err.value)
    assert message.startswith("mosaic runs plot needs matplotlib and Pillow")
    assert "pip install 'mosaic-worker-sdk[plot]'" in message
    assert err.value.extra == "plot" and err.value.install_command == install_command("plot")
    assert isinstance(err.value, ImportError) and "\n" not in message


def test_require_returns_the_module_when_it_is_there():
    assert require("json", "plot", "anything").dumps([1]) == "[1]"
    with pytest.raises(ValueError, match="unknown extra 'nope'"):
        require("json", "nope", "anything")
