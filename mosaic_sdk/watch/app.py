"""The ``mosaic watch`` application (Starlette and uvicorn, the ``watch`` extra):
:func:`create_app` builds it, :func:`serve` runs it."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from mosaic_sdk.watch import routes, sweeps, vendor
from mosaic_sdk.watch.data import CurveCache
from mosaic_sdk.watch.security import Guard, is_loopback, new_token

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766


def create_app(store_path: Path | str, *, token: str | None = None, loopback: bool = True) -> Guard:
    """The ASGI app for ``store_path`` (which need not exist yet), wrapped in its guard.
    ``loopback``: the app is bound to a loopback address (pages need no token; control does)."""
    path = Path(store_path).expanduser().absolute()
    app = Starlette(
        routes=[
            Route("/", routes.page("runs.html")),
            Route("/runs/{run_id}", routes.page("run.html")),
            Route("/compare", routes.page("compare.html")),
            Route("/sweeps", routes.page("sweeps.html")),
            Route("/sweeps/{sweep_id}", routes.page("sweep.html")),
            Route("/api/runs", routes.api_runs),
            Route("/api/runs/{run_id}", routes.api_run),
            Route("/api/runs/{run_id}/events", routes.api_events),
            Route("/api/runs/{run_id}/logs", routes.api_logs),
            Route("/api/runs/{run_id}/curve", routes.api_curve),
            Route("/api/series/batch", routes.api_series_batch),
            Route("/api/runs/{run_id}/series", routes.api_series),
            Route("/api/runs/{run_id}/series/points", routes.api_series_points),
            Route("/api/runs/{run_id}/eval", routes.api_eval),
            Route("/api/runs/{run_id}/control", routes.api_control, methods=["POST"]),
            Route("/api/sweeps", sweeps.api_sweeps),
            Route("/api/sweeps/{sweep_id}", sweeps.api_sweep),
            Route("/api/sweeps/{sweep_id}/importance", sweeps.api_importance),
            WebSocketRoute("/ws/runs/{run_id}/frames", routes.frames),
            Mount("/static", StaticFiles(directory=routes.STATIC), name="static"),
        ]
    )
    app.state.store_path = path
    app.state.token = token or new_token()
    app.state.curves = CurveCache(path)
    app.state.objectives = sweeps.ObjectiveCache()
    guarded = Guard(app, token=app.state.token, loopback=loopback)
    guarded.state = app.state
    return guarded


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port); OSError when taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str, token: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/?token={token}"


def serve(
    store_path: Path | str,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the app until interrupted; ``announce`` gets the URL (with its token) once the
    socket listens."""
    import uvicorn  # optional dependency (the watch extra)

    app = create_app(store_path, token=token, loopback=is_loopback(host))
    sock = bind(host, port)
    (announce or (lambda u: print(u, flush=True)))(url_of(sock, host, app.state.token))
    missing = vendor.missing_message()
    if missing:
        print(f"mosaic watch: warning: {missing}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws_max_size=1 << 16, lifespan="off"
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    sys.stdout.flush()


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "bind", "create_app", "serve", "url_of"]
