"""Fresh virtual environments for the end-to-end scaffold tests, installed from a wheelhouse.

Creating a venv with pip in it (``ensurepip``) and resolving from an index are the slow parts,
so an environment is made ``--without-pip`` and filled by the test interpreter's own pip
(``pip --python``) from a local wheelhouse that is built once per session: the SDK's wheel
plus its dependencies, pip, setuptools, wheel, pytest and pygame (CartPole renders with it).
About ten seconds per environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_TOOLS = ("pip", "setuptools>=77", "wheel", "pytest>=8", "build")
#: What the baked workers need beyond the SDK (CartPole renders through pygame; the
#: PettingZoo variants need pettingzoo, whose classic games import pygame).
WORKER_EXTRAS = ("gymnasium[classic-control]>=1.0,<2", "pettingzoo>=1.25,<2", "pygame-ce>=2.3")


def child_environ(**extra: str) -> dict[str, str]:
    """The test's environment without the variables that would leak the test venv in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def pip(*args: str, python: Path | None = None, timeout: float = 300) -> None:
    """Run the test interpreter's pip (against ``python``'s environment when given)."""
    target = ("--python", str(python)) if python is not None else ()
    done = subprocess.run(
        [sys.executable, "-m", "pip", *target, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_environ(),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"pip {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


#: Left behind by earlier builds and installs; a wheel built beside them may carry stale files.
_NOT_SOURCE = shutil.ignore_patterns(
    "build", "dist", "*.egg-info", "__pycache__", ".venv", ".git", "*.so", "runs.sqlite*"
)


def build_wheelhouse(target: Path) -> Path:
    """The SDK's wheel (built from this checkout) and everything it needs, in ``target``.

    The wheel is built from a copy of the sources: setuptools reuses an in-tree ``build/``
    directory, so a file deleted from the template since the last build would otherwise
    still ship in the wheel.
    """
    target.mkdir(parents=True, exist_ok=True)
    source = target.parent / f"{target.name}-source"
    shutil.copytree(REPO_ROOT, source, ignore=_NOT_SOURCE, symlinks=True, dirs_exist_ok=True)
    pip(
        "wheel",
        "--quiet",
        "--wheel-dir",
        str(target),
        f"{source}[conformance]",
        *BUILD_TOOLS,
        *WORKER_EXTRAS,
        timeout=600,
    )
    return target


class FreshEnv:
    """A new virtual environment with the SDK installed from the wheelhouse."""

    def __init__(self, path: Path, wheelhouse: Path) -> None:
        self.path = path
        self.wheelhouse = wheelhouse
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120
        )
        self.install("mosaic-worker-sdk", *BUILD_TOOLS)

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def install(self, *requirements: str) -> None:
        """``pip install`` from the wheelhouse only (never from an index)."""
        pip(
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(self.wheelhouse),
            *requirements,
            python=self.python,
        )

    def run(
        self, *argv: str, cwd: Path | None = None, timeout: float = 300, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run a program of this environment (``mosaic``, ``python``...)."""
        program = self.path / "bin" / argv[0]
        return subprocess.run(
            [str(program), *argv[1:]],
            cwd=cwd,
            stdin=subprocess.DEVNULL,  # not pytest's own (an open pipe under -s)
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_environ(**env),
            check=False,
        )


def build_wheel(project: Path, wheelhouse: Path, out: Path) -> Path:
    """Build the wheel of a baked project (isolated build, tools from the wheelhouse)."""
    pip(
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "--wheel-dir",
        str(out),
        str(project),
    )
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]
