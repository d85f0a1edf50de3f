"""Sweeps: one worker over a search space (hyperparameters x seeds), every trial an ordinary
run in the store (``mosaic sweep`` is :func:`~mosaic_sdk.sweeps.driver.run_sweep`)."""
