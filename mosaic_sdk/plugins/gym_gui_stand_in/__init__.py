"""The ``gym_gui`` names the platform's workers import, for when the MOSAIC GUI is not installed."""

from mosaic_sdk.plugins.gym_gui_stand_in.finder import (
    SERVED,
    STAND_IN_MARK,
    GymGuiStandInFinder,
    install_gym_gui_stand_in,
    is_stand_in,
    uninstall_gym_gui_stand_in,
)

#: The launcher module: ``python -m LAUNCHER MODULE [ARG ...]``.
LAUNCHER = __name__

__all__ = [
    "LAUNCHER",
    "SERVED",
    "STAND_IN_MARK",
    "GymGuiStandInFinder",
    "install_gym_gui_stand_in",
    "is_stand_in",
    "uninstall_gym_gui_stand_in",
]
