"""Sweeps: one worker over a search space (hyperparameters x seeds), every trial an ordinary
run in the store. ``mosaic sweep`` is :func:`~mosaic_sdk.sweeps.driver.run_sweep`; the spec is
in :mod:`~mosaic_sdk.sweeps.spec`, the engines in :mod:`~mosaic_sdk.sweeps.local` and
:mod:`~mosaic_sdk.sweeps.ray_engine` (Ray Tune, the ``ray`` extra), the tables in
:mod:`~mosaic_sdk.sweeps.store`.
"""
