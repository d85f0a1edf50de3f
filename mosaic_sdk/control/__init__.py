"""The control protocol: pause, resume, stop, checkpoint, ping and interactive stepping."""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

_LAZY = LazyExports(
    __name__,
    {
        "PROTOCOL_VERSION": "mosaic_sdk.control.protocol",
        "ProtocolError": "mosaic_sdk.control.protocol",
        "Reply": "mosaic_sdk.control.protocol",
        "parse_command": "mosaic_sdk.control.protocol",
        "ControlChannel": "mosaic_sdk.control.channel",
        "InteractiveSession": "mosaic_sdk.control.interactive",
        "serve_interactive": "mosaic_sdk.control.interactive",
        "Session": "mosaic_sdk.control.session",
        "ControlCommandError": "mosaic_sdk.control.session",
        "ControlTimeout": "mosaic_sdk.control.protocol",
        "WorkerLink": "mosaic_sdk.control.link",
        "PipeLink": "mosaic_sdk.control.link",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir
__all__ = _LAZY.all()
