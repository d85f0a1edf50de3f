"""The stand-in's ``gym_gui.config.paths``: the platform's ``var`` tree, per user."""

from __future__ import annotations

from pathlib import Path

from mosaic_sdk.home import mosaic_home

VAR_ROOT: Path = (mosaic_home() / "var").absolute()
VAR_REPLAY_DIR = VAR_ROOT / "replay"
VAR_TELEMETRY_DIR = VAR_ROOT / "telemetry"
VAR_CACHE_DIR = VAR_ROOT / "cache"
VAR_TMP_DIR = VAR_ROOT / "tmp"
VAR_LOGS_DIR = VAR_ROOT / "logs"
VAR_TRAINER_DIR = VAR_ROOT / "trainer"
VAR_TENSORBOARD_DIR = VAR_TRAINER_DIR / "runs"
VAR_WANDB_DIR = VAR_TRAINER_DIR / "runs"
VAR_TRAINER_DB = VAR_TRAINER_DIR / "trainer.sqlite"
VAR_EVALS_DIR = VAR_TRAINER_DIR / "evals"
VAR_CUSTOM_SCRIPTS_DIR = VAR_TRAINER_DIR / "custom_scripts"
VAR_DATA_DIR = VAR_ROOT / "data"
VAR_MODELS_DIR = VAR_ROOT / "models"
VAR_MODELS_HF_CACHE = VAR_MODELS_DIR / "huggingface"
VAR_MODELS_KATAGO_DIR = VAR_MODELS_DIR / "katago"
VAR_MODELS_GO_AI_DIR = VAR_MODELS_DIR / "go_ai"
VAR_OPERATORS_DIR = VAR_ROOT / "operators"
VAR_OPERATORS_LOGS_DIR = VAR_OPERATORS_DIR / "logs"
VAR_OPERATORS_TELEMETRY_DIR = VAR_OPERATORS_DIR / "telemetry"
VAR_EVALUATOR_DIR = VAR_ROOT / "evaluator"
VAR_VLLM_DIR = VAR_ROOT / "vllm"
VAR_BIN_DIR = VAR_ROOT / "bin"
VAR_SC2_ROOT = VAR_DATA_DIR
VAR_SC2_DIR = VAR_SC2_ROOT / "StarCraftII"
VAR_SMAC_MAPS_DIR = VAR_SC2_DIR / "Maps" / "SMAC_Maps"
VAR_SMACV2_MAPS_DIR = VAR_SC2_DIR / "Maps" / "SMACv2_Maps"
VAR_SMAC_REPLAYS_DIR = VAR_REPLAY_DIR / "smac"
VAR_NMMO_MAPS_DIR = VAR_DATA_DIR / "nmmo"

_NOT_MADE = {"VAR_TRAINER_DB", "VAR_SC2_DIR", "VAR_SMAC_MAPS_DIR", "VAR_SMACV2_MAPS_DIR"}
#: The directories :func:`ensure_var_directories` creates: every VAR_* path but a file and
#: the StarCraft II install (its own installer makes that), each once.
VAR_DIRECTORIES: tuple[Path, ...] = tuple(
    dict.fromkeys(
        v for k, v in dict(globals()).items() if k.startswith("VAR_") and k not in _NOT_MADE
    )
)


def ensure_var_directories() -> None:
    """Create the var tree (existing directories are left as they are)."""
    for path in VAR_DIRECTORIES:
        path.mkdir(parents=True, exist_ok=True)


__all__ = sorted(name for name in dict(globals()) if name.startswith("VAR_"))
__all__ += ["ensure_var_directories"]
