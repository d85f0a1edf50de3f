"""Running SDK workers inside MOSAIC: ``mosaic submit`` and what it knows of the platform.

- :mod:`~mosaic_sdk.submit.protocol`: the trainer daemon's gRPC messages, built in code from
  the platform's field numbers and types (needs ``protobuf``);
- :mod:`~mosaic_sdk.submit.dispatch`: the run config the daemon validates and how its
  dispatcher launches a worker (no dependency; the conformance suite launches with it);
- :mod:`~mosaic_sdk.submit.client`: submit, follow, read back (needs ``grpcio``: the
  ``submit`` extra).
"""
