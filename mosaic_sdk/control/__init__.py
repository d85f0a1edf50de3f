"""The control protocol: pause, resume, stop, checkpoint, ping and interactive stepping.

One protocol every SDK worker speaks on its stdin (JSON lines; replies are ``control_reply``
telemetry lines on stdout); see ``docs/reference/control.md``. The parts:

- :mod:`.protocol`: the versioned wire (pydantic models, parsing, the JSON schema);
- :mod:`.channel`: the worker side, given to every worker by ``worker_main`` (``ctx.control``);
- :mod:`.interactive` and :mod:`.dialect`: the interactive mode and the deployed CleanRL
  dialect 1.0;
- :mod:`.session`: :class:`Session`, the client a program uses to drive a worker;
- :mod:`.link`: :class:`WorkerLink`, what a session needs of the worker's process (the
  runner supplies one over its run lifecycle), and :class:`PipeLink` over plain pipes.

Names are loaded on first use: ``import mosaic_sdk.control`` costs nothing.
"""

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
