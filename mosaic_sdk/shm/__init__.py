"""Shared-memory building blocks: atomics and wait/wake (``mosaic_sdk.shm.atomics``).

Kept free of imports at package level so that ``mosaic_sdk.fastlane`` can use the atomics
without loading numpy-heavy transport code.
"""
