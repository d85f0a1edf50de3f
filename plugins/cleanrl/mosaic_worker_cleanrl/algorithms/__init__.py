"""Algorithms written for this worker (each a single runnable file)."""
