"""Packaging: the worker's distribution builds a wheel that declares its entry point."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata as importlib_metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from mosaic_sdk.conformance.config_source import source_directory, tomllib
from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed, CheckSkipped
from mosaic_sdk.conformance.subject import WorkerSubject
from mosaic_sdk.plugins import ENTRY_POINT_GROUP

SKIP_VARIABLE = "MOSAIC_CONFORMANCE_SKIP_PACKAGING"
BUILD_TIMEOUT = 300


def build_requirements_met(source: Path) -> bool:
    """Whether every ``[build-system] requires`` of ``source`` is installed here."""
    pyproject = source / "pyproject.toml"
    if not pyproject.is_file():
        return False
    try:
        requires = tomllib.loads(pyproject.read_text("utf-8"))["build-system"]["requires"]
    except (KeyError, ValueError, OSError):
        return False
    for text in requires:
        try:
            req = Requirement(text)
            version = importlib_metadata.version(req.name)
        except (InvalidRequirement, importlib_metadata.PackageNotFoundError):
            return False
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            return False
    return True


def build_wheel(source: Path, out_dir: Path) -> Path:
    """Build the wheel of ``source`` into ``out_dir``; raises CheckFailed with pip's error."""
    isolation = ["--no-build-isolation"] if build_requirements_met(source) else []
    argv = [sys.executable, "-m", "pip", "wheel", *isolation, "--no-deps", "--quiet"]
    argv += ["--disable-pip-version-check", "-w", str(out_dir), str(source)]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"building the wheel took more than {BUILD_TIMEOUT} s") from None
    wheels = sorted(out_dir.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        tail = [s for s in (done.stderr or done.stdout).splitlines() if s.strip()][-3:]
        raise CheckFailed(f"building the wheel failed: {' | '.join(tail)}")
    return wheels[0]


def wheel_entry_points(wheel: Path) -> dict[str, dict[str, str]]:
    """The entry points a wheel declares: ``{group: {name: value}}``."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
        if not names:
            return {}
        text = zf.read(names[0]).decode("utf-8")
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {s: dict(parser.items(s)) for s in parser.sections()}


def check_wheel_declares(source: Path, worker: str, expected: str | None) -> str:
    """Build ``source`` and fail unless its wheel declares ``worker`` in ``mosaic.workers``."""
    with tempfile.TemporaryDirectory(prefix="mosaic-conformance-wheel-") as tmp:
        wheel = build_wheel(source, Path(tmp))
        group = wheel_entry_points(wheel).get(ENTRY_POINT_GROUP, {})
    if worker not in group:
        declared = ", ".join(group) or "none"
        raise CheckFailed(
            f"{wheel.name} declares no {ENTRY_POINT_GROUP} entry point named {worker!r} "
            f"(declared: {declared})"
        )
    if expected is not None and group[worker] != expected:
        raise CheckFailed(f"the wheel's entry point is {group[worker]!r}, installed {expected!r}")
    return f"{wheel.name}: {worker} = {group[worker]}"


@conformance_check(
    "packaging.wheel_entry_point",
    description="The worker's distribution builds a wheel whose metadata declares its "
    "mosaic.workers entry point",
    hint='Declare [project.entry-points."mosaic.workers"] NAME = "package.plugin" in the '
    "worker's pyproject.toml and make the build include the package",
    slow=True,
    levels=(SDK,),
)
def wheel_entry_point(subject: WorkerSubject) -> str | None:
    handle = subject.require_handle()
    if os.environ.get(SKIP_VARIABLE, "") not in ("", "0"):
        raise CheckSkipped(f"{SKIP_VARIABLE} is set")
    dist_name = handle.distribution
    if not dist_name or dist_name == "MOSAIC_PLUGINS":
        raise CheckSkipped("the worker is not installed as a distribution (MOSAIC_PLUGINS)")
    try:
        dist = importlib_metadata.distribution(dist_name)
    except importlib_metadata.PackageNotFoundError:
        raise CheckFailed(f"the distribution {dist_name!r} is not installed") from None
    source = source_directory(dist)
    if source is None:
        declared = {ep.name: ep.value for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP}
        if handle.name not in declared:
            raise CheckFailed(
                f"{dist_name} declares no {ENTRY_POINT_GROUP} entry point {handle.name!r}"
            )
        return (
            "source tree not found (installed from a wheel or an index): checked the "
            "installed metadata"
        )
    return check_wheel_declares(source, handle.name, handle.entry_point)
