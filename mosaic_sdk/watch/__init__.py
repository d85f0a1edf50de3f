"""``mosaic watch``: a browser view of a store's runs, served by the SDK itself.

- :mod:`mosaic_sdk.watch.app`: the ASGI app (:func:`~mosaic_sdk.watch.app.create_app`) and
  :func:`~mosaic_sdk.watch.app.serve`.
- :mod:`mosaic_sdk.watch.routes`: pages, the JSON API, the frame stream, the control endpoint.
- :mod:`mosaic_sdk.watch.data`: read-only queries of the store; learning curves.
- :mod:`mosaic_sdk.watch.streams`: FastLane frames as JPEG over a WebSocket.
- :mod:`mosaic_sdk.watch.control`: the client of a run's control socket.
- :mod:`mosaic_sdk.watch.security`: token, Host/Origin checks, response headers.
- ``static/``: the pages, their scripts (plain JavaScript, an SVG chart of our own) and CSS.

Needs the ``watch`` extra (Starlette, uvicorn, websockets, Pillow). A layer-3 tool: it builds
on the runner's store and on FastLane; only :mod:`mosaic_sdk.cli` imports it.
"""
