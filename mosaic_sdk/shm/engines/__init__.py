"""Reference engines that serve the shm transport and the engine services.

- ``mosaic_sdk.shm.engines.mujoco_engine``: ``MujocoEngine``, a MuJoCo physics engine (the
  ``mujoco`` extra) behind the hot path and the seven services;
- ``mosaic_sdk.shm.engines.launch``: ``launch_engine``, the engine in a child process whose
  segment is removed whatever way it ends (``mosaic engine mujoco`` uses it).

The models shipped with the package are in ``models/`` (``model_path(name)``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

MODELS_DIR = Path(__file__).resolve().parent / "models"

#: Why offscreen rendering is unavailable in this process (None when it may work).
GL_UNAVAILABLE: str | None = None


def load_mujoco() -> Any:
    """Import ``mujoco`` for offscreen use: ``MUJOCO_GL`` defaults to ``egl``.

    MuJoCo loads its GL backend on import, so where that backend is missing the import is
    retried with ``glfw`` (which opens nothing until a renderer is made) for the physics alone,
    and ``GL_UNAVAILABLE`` says why rendering will be refused.
    """
    global GL_UNAVAILABLE
    if "mujoco" in sys.modules:
        return sys.modules["mujoco"]
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        return importlib.import_module("mujoco")
    except (ImportError, AttributeError, OSError) as exc:
        if importlib.util.find_spec("mujoco") is None:
            raise
        GL_UNAVAILABLE = (
            f"MuJoCo could not load MUJOCO_GL={os.environ['MUJOCO_GL']} "
            f"({type(exc).__name__}: {exc}); install EGL (Debian: libegl1 libgl1-mesa-dri) "
            "or OSMesa (libosmesa6, with MUJOCO_GL=osmesa)"
        )
    for name in [n for n in sys.modules if n.split(".")[0] in ("mujoco", "OpenGL")]:
        del sys.modules[name]  # the half-done import
    os.environ["MUJOCO_GL"] = "glfw"
    os.environ.pop("PYOPENGL_PLATFORM", None)
    return importlib.import_module("mujoco")


def builtin_models() -> list[str]:
    """Names of the MJCF models shipped with the SDK."""
    return sorted(p.stem for p in MODELS_DIR.glob("*.xml"))


def model_path(model: str) -> Path:
    """The MJCF file of ``model``: a shipped model's name, or a path to an MJCF file."""
    path = Path(model)
    if path.suffix == ".xml" and path.is_file():
        return path
    builtin = MODELS_DIR / f"{model}.xml"
    if builtin.is_file():
        return builtin
    raise ValueError(
        f"model {model!r} is neither a shipped model ({', '.join(builtin_models())}) nor an "
        "MJCF file (.xml) that exists"
    )
