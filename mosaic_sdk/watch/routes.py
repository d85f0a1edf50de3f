"""The routes of ``mosaic watch``: its pages, a JSON API over the store, the frame stream
and the control endpoint."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.websockets import WebSocket

from mosaic_sdk.plots.curves import NO_AGENT, agent_key
from mosaic_sdk.runner.storage.store import StoreError, UnknownRunError
from mosaic_sdk.sweeps.store import DamagedSweepError, UnknownSweepError
from mosaic_sdk.watch import data
from mosaic_sdk.watch.control import COMMANDS, send_command
from mosaic_sdk.watch.security import TOKEN_HEADER, token_matches
from mosaic_sdk.watch.streams import MAX_FPS, FrameStream

R = TypeVar("R", bound=Response)

STATIC = Path(__file__).resolve().parent / "static"


def page(name: str) -> Callable[[Request], Awaitable[Response]]:
    """A route answering with one of the app's own HTML files."""

    async def endpoint(request: Request) -> Response:
        return FileResponse(STATIC / name, media_type="text/html; charset=utf-8")

    return endpoint


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"query parameter {name}={raw!r:.40} is not an integer") from None
    if not -(2**63) <= value < 2**63:  # what SQLite's integers hold
        raise ValueError(
            f"query parameter {name}={raw!r:.40} is out of range (-2**63 .. 2**63-1); a cursor "
            "is a line number this API returned"
        )
    return value


async def _read(work: Callable[[], Any], respond: Callable[[Any], R]) -> R | JSONResponse:
    """Run a store read in a thread; its result through ``respond``, a problem as ``{"error"}``."""
    try:
        return respond(await run_in_threadpool(work))
    except (StoreError, sqlite3.Error, ValueError) as exc:
        return _problem(exc)


async def answer(work: Callable[[], object]) -> JSONResponse:
    """:func:`_read` with the result as JSON (the run and sweep pages' routes)."""
    return await _read(work, JSONResponse)


def _problem(exc: Exception) -> JSONResponse:
    """The answer for a store that cannot say what was asked (never a server error)."""
    if isinstance(exc, (data.StoreMissingError, UnknownRunError, UnknownSweepError)):
        return _error(404, str(exc))
    if isinstance(exc, DamagedSweepError):  # a damaged row stays damaged: no retry
        return _error(400, str(exc))
    if isinstance(exc, StoreError):
        return _error(503, str(exc))
    if isinstance(exc, sqlite3.Error):
        return _error(503, f"the store could not be read just now ({exc}); the page retries")
    return _error(400, str(exc))


def store_path(request: Request) -> Path:
    return Path(request.app.state.store_path)


async def api_runs(request: Request) -> JSONResponse:
    path = store_path(request)
    status = request.query_params.get("status") or None
    worker = request.query_params.get("worker") or None

    def work() -> dict[str, object]:
        try:
            return {"store": str(path), **data.list_runs(path, status=status, worker=worker)}
        except data.StoreMissingError as exc:  # no store yet: an empty list and the reason
            empty: dict[str, object] = {"runs": [], "workers": [], "statuses": []}
            return {"store": str(path), **empty, "notice": str(exc)}

    return await answer(work)


async def api_run(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]
    return await answer(lambda: data.run_detail(store_path(request), run_id))


async def api_events(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]

    def work() -> dict[str, object]:
        return {
            "events": data.events_after(store_path(request), run_id, _int(request, "after", -1))
        }

    return await answer(work)


async def api_logs(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]

    def work() -> dict[str, object]:
        after = {
            "stdout": _int(request, "after_stdout", -1),
            "stderr": _int(request, "after_stderr", -1),
        }
        return {"logs": data.logs_after(store_path(request), run_id, after)}

    return await answer(work)


async def api_curve(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]
    cache: data.CurveCache = request.app.state.curves

    def work() -> dict[str, object]:
        agent = request.query_params.get("agent")
        key = None if agent is None else agent_key(agent)
        if request.query_params.get("agentless") == "1":
            key = NO_AGENT
        out = cache.curve(
            run_id,
            smooth=_int(request, "smooth", 20),
            points=_int(request, "points", data.MAX_POINTS),
            known=_int(request, "known", -1),
            agent=key,
            include_unfinished=request.query_params.get("include_unfinished") == "1",
        )
        if key is not None:
            out["agent"] = None if key == NO_AGENT else agent
        return out

    return await answer(work)


async def api_series(request: Request) -> JSONResponse:
    """The run's series (``?glob=losses/*``: those whose name the glob matches) and counts."""
    run_id = request.path_params["run_id"]
    pattern = request.query_params.get("glob") or None
    return await answer(lambda: data.series_list(store_path(request), run_id, pattern))


async def api_series_points(request: Request) -> JSONResponse:
    """Points of several series of a run: ``?series=`` (:func:`data.parse_wanted`), ``limit``,
    ``encoding`` and ``buckets`` (see :func:`mosaic_sdk.watch.data.series_points`)."""
    run_id = request.path_params["run_id"]

    def work() -> dict[str, object]:
        wanted = data.parse_wanted(request.query_params.get("series", ""))
        limit = _int(request, "limit", data.MAX_SERIES_POINTS)
        encoding = request.query_params.get("encoding") or "json"
        buckets = _int(request, "buckets", 0) or None
        return data.series_points(store_path(request), run_id, wanted, limit, encoding, buckets)

    return await answer(work)


async def api_series_batch(request: Request) -> Response:
    """Points of several series of several runs in one binary answer
    (:func:`mosaic_sdk.watch.data.series_batch`); a problem comes as JSON ``{"error"}``."""

    def work() -> bytes:
        wanted = data.parse_batch(request.query_params.get("series", ""))
        limit = _int(request, "limit", data.MAX_SERIES_POINTS)
        buckets = _int(request, "buckets", 0) or None
        return data.series_batch(store_path(request), wanted, limit, buckets)

    return await _read(work, lambda body: Response(body, media_type=data.BATCH_MEDIA_TYPE))


async def api_eval(request: Request) -> JSONResponse:
    """A policy evaluation's batches past ``after`` and its ``eval_summary.json``."""
    run_id = request.path_params["run_id"]
    return await answer(
        lambda: data.eval_batches(store_path(request), run_id, _int(request, "after", 0))
    )


async def api_control(request: Request) -> JSONResponse:
    """POST ``{"cmd": "pause"|"resume"|"stop"}``: relayed to the run's control socket."""
    if not token_matches(request.headers.get(TOKEN_HEADER), request.app.state.token):
        return _error(
            403,
            "control actions need the token of this mosaic watch: open the URL it printed "
            "(ending in ?token=...) and press the button again",
        )
    try:
        body = await request.json()
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        body = None
    cmd = body.get("cmd") if isinstance(body, dict) else None
    if cmd not in COMMANDS:
        return _error(400, f'send {{"cmd": ...}} with one of {", ".join(COMMANDS)}')
    run_id = request.path_params["run_id"]
    try:
        run = await run_in_threadpool(data.run_detail, store_path(request), run_id)
    except (StoreError, sqlite3.Error) as exc:
        return _problem(exc)
    if not run["control"]:
        return _error(
            409,
            f"run {run['run_id']} has no control socket (it is not running, or its runner "
            "predates the control protocol)",
        )
    reply = await send_command(run["run_dir"], cmd)
    return JSONResponse({"run_id": run["run_id"], "cmd": cmd, "reply": reply})


async def frames(websocket: WebSocket) -> None:
    """The run's FastLane frames (see :mod:`mosaic_sdk.watch.streams`)."""
    await websocket.accept()
    try:
        fps = float(websocket.query_params.get("fps", MAX_FPS))
    except ValueError:
        fps = MAX_FPS
    run_id = websocket.path_params["run_id"]
    try:  # ?stream=: one of the run's per-worker streams (a run with several)
        stream = data.stream_of_run(run_id, websocket.query_params.get("stream"))
    except ValueError as exc:
        await websocket.send_text(
            json.dumps({"type": "status", "state": "refused", "message": str(exc)})
        )
        await websocket.close(code=1008)
        return
    await FrameStream(websocket, stream, fps).run()
