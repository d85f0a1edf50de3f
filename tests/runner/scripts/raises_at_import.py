"""Fails before it does anything."""

import gymnasium  # noqa: F401

CONFIG = {"lr": 3e-4}
value = CONFIG["learning_rate"]
