"""A server shaped like the MOSAIC trainer daemon, for the tests of ``mosaic submit``.

It speaks the daemon's gRPC service (``gymgui.trainer.TrainerService``: the messages of
:mod:`mosaic_sdk.submit.protocol`), validates a submission as the daemon does (its
``TrainRunConfig`` schema; a ``metadata.worker.config.run_id`` that is a ULID is the run id,
else a new one; a request ``run_id`` that differs is refused), and dispatches like the
daemon's dispatcher, written here from its behaviour: the flat worker config goes to a file
with ``run_id`` forced and ``worker_id`` added, the worker starts as ``python -m MODULE
[arguments] --config F --grpc --grpc-target ADDR --worker-id ID`` in a copy of the
environment without ``PYTHONUNBUFFERED``, with ``CUDA_VISIBLE_DEVICES`` empty and the run's
``environment`` (``MOSAIC_RUN_ID`` / ``MOSAIC_RUN_DIR`` rewritten). Its stdout is read as the
telemetry proxy reads it (only ``type`` ``step`` and ``episode`` lines; the episode index from
``metadata.episode_index``, else ``episode``, else 0) and episodes are stored.

Statuses: ``INIT`` at submission, ``HSHK`` when the worker starts (once a client watches, or
after 2 s: the daemon's dispatcher polls every 2 s), ``RDY`` at its first output
line, ``EXEC`` at its first step or episode line, ``TERM`` when it exits (failure reason
``exit_code_N`` when N != 0), ``FAULT`` (``worker_timeout``) when it writes nothing for
``heartbeat_timeout`` seconds (the worker is then killed).
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import jsonschema

from mosaic_sdk.runner.storage.ids import new_run_id
from mosaic_sdk.submit import protocol
from mosaic_sdk.submit.dispatch import TRAIN_RUN_SCHEMA

_ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    config_file: dict[str, Any]


@dataclass
class DoubleRun:
    run_id: str
    config: dict[str, Any]
    status: str = "INIT"
    failure_reason: str | None = None
    statuses: list[str] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    launch: Launch | None = None
    stderr: str = ""


class DaemonDouble:
    """Start with :meth:`start` (returns ``HOST:PORT``), stop with :meth:`stop`."""

    def __init__(
        self,
        workdir: Path,
        *,
        heartbeat_timeout: float = 60.0,
        run_name_max_length: int | None = None,
        silent: bool = False,
    ) -> None:
        """``run_name_max_length``: a daemon whose schema takes shorter run names than the
        platform's default (120); ``silent``: one that accepts a run and then says nothing of it
        (no worker started, no status sent)."""
        self.workdir = Path(workdir)
        self.heartbeat_timeout = heartbeat_timeout
        self.schema = copy.deepcopy(TRAIN_RUN_SCHEMA)
        if run_name_max_length is not None:
            self.schema["properties"]["run_name"]["maxLength"] = run_name_max_length
        self.silent = silent
        self.runs: dict[str, DoubleRun] = {}
        self.submissions: list[dict[str, Any]] = []
        #: Every request as it came on the wire: (method, its bytes), for tests that read the
        #: bytes without this module's decoding (which is the SDK's own).
        self.requests: list[tuple[str, bytes]] = []
        self._events: list[tuple[int, str]] = []
        self._cond = threading.Condition()
        self._server: grpc.Server | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._watchers = 0
        self.address = ""

    # -- server --------------------------------------------------------------------------
    def start(self) -> str:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        handlers = {}
        for method, (request, _response, streams) in protocol.METHODS.items():
            impl = getattr(self, f"_rpc_{method}")
            factory = (
                grpc.unary_stream_rpc_method_handler
                if streams
                else grpc.unary_unary_rpc_method_handler
            )
            handlers[method] = factory(
                impl,
                request_deserializer=partial(self._decode, method, protocol.message(request)),
                response_serializer=lambda m: m.SerializeToString(),
            )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(protocol.SERVICE, handlers),)
        )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._server = server
        self.address = f"127.0.0.1:{port}"
        return self.address

    def _decode(self, method: str, message: Any, raw: bytes) -> Any:
        self.requests.append((method, bytes(raw)))
        return message.FromString(raw)

    def stop(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self._server is not None:
            self._server.stop(grace=None)

    def signal_workers(self, signum: int) -> None:
        """Send ``signum`` to every worker still running (a worker killed by a signal)."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    # -- state ---------------------------------------------------------------------------
    def _set(self, run: DoubleRun, status: str, reason: str | None = None) -> None:
        with self._cond:
            if run.status in protocol.FINAL_STATUSES:
                return
            run.status = status
            run.failure_reason = reason
            run.statuses.append(status)
            self._events.append((len(self._events) + 1, run.run_id))
            self._cond.notify_all()

    def _record(self, run: DoubleRun) -> Any:
        record = protocol.message("RunRecord")(
            run_id=run.run_id, status=protocol.RUN_STATUS[run.status], digest="d" * 8
        )
        if run.failure_reason:
            record.failure_reason = run.failure_reason
        return record

    def wait_final(self, run_id: str, timeout: float = 60.0) -> DoubleRun:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.runs[run_id].status not in protocol.FINAL_STATUSES:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"run {run_id} still {self.runs[run_id].status}")
                self._cond.wait(left)
        return self.runs[run_id]

    # -- rpcs ----------------------------------------------------------------------------
    def _rpc_GetHealth(self, request: Any, context: grpc.ServicerContext) -> Any:
        return protocol.message("HealthCheckResponse")(
            pid=os.getpid(), listen_address=self.address, healthy=True
        )

    def _rpc_SubmitRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            config = json.loads(request.config_json)
            jsonschema.validate(config, self.schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            message = getattr(exc, "message", str(exc))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid TrainRunConfig: {message}")
        self.submissions.append(config)
        worker = config.get("metadata", {}).get("worker", {})
        worker_config = worker.get("config") if isinstance(worker, dict) else None
        given = worker_config.get("run_id") if isinstance(worker_config, dict) else None
        run_id = given if isinstance(given, str) and _ULID.match(given) else new_run_id()
        if isinstance(worker_config, dict):
            worker_config["run_id"] = run_id
        if request.run_id and request.run_id != run_id:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "run_id mismatch")
        environment = config.get("environment", {})
        if "MOSAIC_RUN_ID" in environment:
            environment["MOSAIC_RUN_ID"] = run_id
        if "MOSAIC_RUN_DIR" in environment:
            environment["MOSAIC_RUN_DIR"] = str(self.workdir / "runs" / run_id)
        run = DoubleRun(run_id, config)
        run.statuses.append("INIT")
        with self._cond:
            self.runs[run_id] = run
            self._events.append((len(self._events) + 1, run_id))
            self._cond.notify_all()
        if not self.silent:
            threading.Thread(target=self._dispatch, args=(run,), daemon=True).start()
        return protocol.message("SubmitRunResponse")(run_id=run_id, digest="d" * 8)

    def _rpc_CancelRun(self, request: Any, context: grpc.ServicerContext) -> Any:
        return protocol.message("CancelRunResponse")()

    def _rpc_ListRuns(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self._cond:
            records = [self._record(r) for r in self.runs.values()]
        return protocol.message("ListRunsResponse")(runs=records)

    def _rpc_WatchRuns(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        with self._cond:
            seen = len(self._events)
            snapshot = [self._record(r) for r in self.runs.values()]
            self._watchers += 1
            self._cond.notify_all()
        if self.silent:
            while context.is_active():
                time.sleep(0.1)
            return
        yield from snapshot
        while context.is_active():
            with self._cond:
                self._cond.wait_for(partial(_longer_than, self._events, seen), timeout=0.5)
                fresh = self._events[seen:]
                seen = len(self._events)
                records = [self._record(self.runs[run_id]) for _, run_id in fresh]
            yield from records

    def _rpc_StreamRunEpisodes(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        run = self.runs.get(request.run_id)
        for episode in list(run.episodes if run else []):
            yield protocol.message("RunEpisode")(run_id=request.run_id, **episode)
        while context.is_active():  # the daemon waits for live episodes after its replay
            time.sleep(0.1)

    # -- the dispatcher ------------------------------------------------------------------
    def _dispatch(self, run: DoubleRun) -> None:
        # The daemon's dispatcher polls for INIT runs every 2 s: a client that watches right
        # after submitting sees every status; here the run waits for a watcher (2 s at most).
        with self._cond:
            self._cond.wait_for(lambda: self._watchers > 0, timeout=2.0)
        worker = run.config["metadata"]["worker"]
        worker_id = str(worker.get("worker_id") or "")
        payload = dict(worker["config"])
        payload["run_id"] = run.run_id
        if worker_id:
            payload.setdefault("worker_id", worker_id)
        config_dir = Path(tempfile.mkdtemp(prefix="configs-", dir=self.workdir))
        config_path = config_dir / f"worker-{run.run_id}.json"
        config_path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        argv = [sys.executable, "-m", worker["module"], *worker.get("arguments", [])]
        argv += ["--config", str(config_path)]
        if worker.get("use_grpc", True):
            argv += ["--grpc", "--grpc-target", worker.get("grpc_target", "127.0.0.1:50055")]
        if worker_id:
            argv += ["--worker-id", worker_id]
        env = dict(os.environ)
        env.pop("PYTHONUNBUFFERED", None)
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["TRAINER_WORKER_CONFIG_PATH"] = str(config_path)
        env.update({k: str(v) for k, v in run.config.get("environment", {}).items()})
        run.launch = Launch(argv, env, payload)
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        self._procs.append(proc)
        self._set(run, "HSHK")
        stderr: list[bytes] = []
        reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)
        reader.start()
        last = [time.monotonic()]
        done = threading.Event()

        def watchdog() -> None:
            while not done.wait(0.1):
                if time.monotonic() - last[0] > self.heartbeat_timeout:
                    self._set(run, "FAULT", "worker_timeout")
                    os.killpg(proc.pid, signal.SIGKILL)
                    return

        threading.Thread(target=watchdog, daemon=True).start()
        assert proc.stdout is not None
        for raw in proc.stdout:
            last[0] = time.monotonic()
            if run.status == "HSHK":
                self._set(run, "RDY")
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict) or line.get("type") not in ("step", "episode"):
                continue
            if run.status == "RDY":
                self._set(run, "EXEC")
            if line["type"] == "episode":
                run.episodes.append(_episode_of(line, worker_id))
        code = proc.wait()
        done.set()
        reader.join(timeout=10)
        run.stderr = b"".join(stderr).decode("utf-8", "replace")
        self._set(run, "TERM", None if code == 0 else f"exit_code_{code}")


def _longer_than(events: list[tuple[int, str]], seen: int) -> bool:
    return len(events) > seen


def _episode_of(line: dict[str, Any], worker_id: str) -> dict[str, Any]:
    metadata = line.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            metadata = {}
    index = metadata.get("episode_index") if isinstance(metadata, dict) else None
    if index is None:
        index = line.get("episode", 0)
    return {
        "episode_index": int(index),
        "steps": int(line.get("steps", 0)),
        "total_reward": float(line.get("total_reward", 0.0)),
        "agent_id": str(line.get("agent_id") or ""),
        "worker_id": str(line.get("worker_id") or worker_id),
    }
