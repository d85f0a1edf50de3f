"""Fixtures of the scaffold tests: a private cookiecutter config and a session wheelhouse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fresh_environments import build_wheelhouse


@pytest.fixture
def cookiecutter_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cookiecutter user config whose replay and clone directories are in ``tmp_path``.

    Also exported as COOKIECUTTER_CONFIG, so `mosaic new` children never write to the home.
    """
    path = tmp_path / "cookiecutter-config.yaml"
    path.write_text(
        f'replay_dir: "{tmp_path / "replay"}"\ncookiecutters_dir: "{tmp_path / "clones"}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("COOKIECUTTER_CONFIG", str(path))
    return path


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK's wheel and its dependencies; MOSAIC_WHEELHOUSE adds a prebuilt directory.

    Building needs the package index (or pip's cache) the first time; without it the
    end-to-end tests are skipped with the reason.
    """
    target = tmp_path_factory.mktemp("wheelhouse")
    extra = os.environ.get("MOSAIC_WHEELHOUSE")
    if extra:
        for wheel in Path(extra).glob("*.whl"):
            if not wheel.name.startswith("mosaic_worker_sdk-"):
                (target / wheel.name).symlink_to(wheel)
    try:
        return build_wheelhouse(target)
    except RuntimeError as exc:
        text = str(exc)
        if any(sign in text for sign in NO_INDEX):
            pytest.skip(f"cannot build the wheelhouse (no package index?): {text[-500:]}")
        # Anything else is ours (the SDK's own wheel fails to build): a failure, never a skip.
        pytest.fail(f"building the SDK's wheelhouse failed: {text[-2000:]}")


#: What pip says when the package index cannot be reached (the only reason to skip).
NO_INDEX = (
    "Could not find a version that satisfies",
    "No matching distribution found",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "NewConnectionError",
    "ConnectTimeoutError",
    "ProxyError",
)
