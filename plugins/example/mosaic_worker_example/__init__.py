"""mosaic-worker-example: the reference MOSAIC worker (see README.md)."""

__version__ = "0.1.0"
