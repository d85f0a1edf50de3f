"""Reference engines that serve the shm transport and the engine services.

- ``mosaic_sdk.shm.engines.mujoco_engine``: ``MujocoEngine``, a MuJoCo physics engine (the
  ``mujoco`` extra) behind the hot path and the seven services;
- ``mosaic_sdk.shm.engines.launch``: ``launch_engine``, the engine in a child process whose
  segment is removed whatever way it ends (``mosaic engine mujoco`` uses it).

The models shipped with the package are in ``models/`` (``model_path(name)``).
"""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "models"


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
