"""The packaging check builds a worker's wheel and reads its entry points."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mosaic_sdk.conformance.checks.packaging import (
    check_wheel_declares,
    source_directory,
    wheel_entry_points,
)
from mosaic_sdk.conformance.results import CheckFailed

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "mosaic-worker-tiny"
version = "0.0.1"
{entry_points}
[tool.setuptools]
packages = ["tiny_worker"]
"""


def make_project(root: Path, entry_points: str) -> Path:
    (root / "tiny_worker").mkdir(parents=True)
    (root / "tiny_worker" / "__init__.py").write_text('"""A worker that does nothing."""\n')
    (root / "pyproject.toml").write_text(PYPROJECT.format(entry_points=entry_points))
    return root


def test_wheel_without_the_entry_point_fails(tmp_path: Path) -> None:
    source = make_project(tmp_path / "src", "")
    with pytest.raises(CheckFailed, match="declares no mosaic.workers entry point named 'tiny'"):
        check_wheel_declares(source, "tiny", None)


def test_wheel_with_the_entry_point_passes_and_is_compared(tmp_path: Path) -> None:
    block = textwrap.dedent(
        """
        [project.entry-points."mosaic.workers"]
        tiny = "tiny_worker"
        """
    )
    source = make_project(tmp_path / "src", block)
    assert check_wheel_declares(source, "tiny", "tiny_worker").endswith("tiny = tiny_worker")
    with pytest.raises(CheckFailed, match="installed 'tiny_worker.plugin'"):
        check_wheel_declares(source, "tiny", "tiny_worker.plugin")


def test_a_broken_build_fails_with_the_builder_message(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "pyproject.toml").write_text("[project]\nname = \n")
    with pytest.raises(CheckFailed, match="building the wheel failed"):
        check_wheel_declares(source, "tiny", None)


class FakeDist:
    def __init__(self, direct_url: str | None) -> None:
        self.text = direct_url

    def read_text(self, name: str) -> str | None:
        return self.text if name == "direct_url.json" else None


def test_source_directory_from_direct_url(tmp_path: Path) -> None:
    project = make_project(tmp_path / "src", "")
    local = json.dumps({"url": project.as_uri(), "dir_info": {"editable": True}})
    assert source_directory(FakeDist(local)) == project  # type: ignore[arg-type]
    index = json.dumps({"url": "https://example.invalid/w.whl", "archive_info": {}})
    assert source_directory(FakeDist(index)) is None  # type: ignore[arg-type]
    assert source_directory(FakeDist(None)) is None  # type: ignore[arg-type]
    gone = json.dumps({"url": (tmp_path / "gone").as_uri(), "dir_info": {}})
    assert source_directory(FakeDist(gone)) is None  # type: ignore[arg-type]


def test_wheel_entry_points_keeps_case(tmp_path: Path) -> None:
    import zipfile

    wheel = tmp_path / "x-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("x-1.dist-info/entry_points.txt", "[mosaic.workers]\nCleanRL = a.b:c\n")
    assert wheel_entry_points(wheel) == {"mosaic.workers": {"CleanRL": "a.b:c"}}
