"""mosaic-worker-sdk: the plugin framework and worker SDK for MOSAIC."""

__version__ = "0.1.0"
