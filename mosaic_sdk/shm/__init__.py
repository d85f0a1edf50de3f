"""Shared-memory building blocks and the vectorized-env transport.

``mosaic_sdk.shm.atomics`` (acquire/release words, futex wait/wake) is shared with FastLane.
The transport lives in submodules and is exposed here lazily, so importing this package stays
free of numpy and flatbuffers:

- ``SharedMemoryTransport`` / ``TransportWorker`` (``mosaic_sdk.shm.transport``): engine side;
- ``SharedMemoryClient`` (``mosaic_sdk.shm.client``): trainer side (either header layout);
- ``LuckyClient`` (``mosaic_sdk.shm.lucky``): the LuckyEngine design's client calls;
- ``launch_env_host`` / ``EnvHostHandle`` (``mosaic_sdk.shm.host``): gymnasium envs served
  from child processes;
- ``ShmVectorEnv`` (``mosaic_sdk.shm.vector_env``): a ``gymnasium.vector.VectorEnv`` over it.
"""

from __future__ import annotations

from mosaic_sdk.lazy_exports import LazyExports

_LAZY = LazyExports(
    __name__,
    {
        "SharedMemoryTransport": "mosaic_sdk.shm.transport",
        "TransportWorker": "mosaic_sdk.shm.worker",
        "SharedMemoryClient": "mosaic_sdk.shm.client",
        "LuckyClient": "mosaic_sdk.shm.lucky",
        "Layout": "mosaic_sdk.shm.layout",
        "launch_env_host": "mosaic_sdk.shm.host",
        "EnvHostHandle": "mosaic_sdk.shm.host",
        "ShmVectorEnv": "mosaic_sdk.shm.vector_env",
        "AsyncUsageError": "mosaic_sdk.shm.vector_rules",
        "TransportError": "mosaic_sdk.shm.sync",
        "PeerGoneError": "mosaic_sdk.shm.sync",
        "TransportClosedError": "mosaic_sdk.shm.sync",
        "TransportTimeoutError": "mosaic_sdk.shm.sync",
        "SegmentCorruptedError": "mosaic_sdk.shm.mapping",
        "CommandError": "mosaic_sdk.shm.commands",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

__all__ = _LAZY.all()
