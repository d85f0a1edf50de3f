"""A client of the MOSAIC trainer daemon: submit a run, follow its status, read its episodes."""

from __future__ import annotations

import json
import re
import signal
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc

from mosaic_sdk.exit_status import describe_exit, exit_status, signal_name
from mosaic_sdk.submit import protocol
from mosaic_sdk.submit.dispatch import SubmitError

#: Seconds to wait for a daemon to answer its health check.
CONNECT_TIMEOUT = 5.0


_EXIT_REASON = re.compile(r"exit_code_(-?\d+)")
#: Signals a worker dies of, whose number N the daemon's telemetry proxy turns into its own exit
#: status 256 - N: it exits with sys.exit(worker returncode), and a returncode is -N.
_PROXIED_SIGNALS = (
    signal.SIGSEGV,
    signal.SIGBUS,
    signal.SIGABRT,
    signal.SIGILL,
    signal.SIGFPE,
    signal.SIGKILL,
    signal.SIGTERM,
    signal.SIGINT,
)


def describe_failure(reason: str | None) -> str:
    """The daemon's failure reason with the exit code in words: ``exit_code_-11`` (the
    daemon's child killed by a signal) becomes ``exit_code_-11: killed by signal SIGSEGV
    (-11)``; ``exit_code_245``, how a worker killed by SIGSEGV reaches the daemon through its
    telemetry proxy (which exits with ``sys.exit(-11)``, status 256 - 11), gets the signal it
    stands for. Other reasons are returned as they are; None is ``no reason given``."""
    if not reason:
        return "no reason given"
    match = _EXIT_REASON.fullmatch(reason)
    if match is None:
        return reason
    code = int(match.group(1))
    if code < 0:
        return f"{reason}: {exit_status(code)}"
    proxied = {256 - int(s): s for s in _PROXIED_SIGNALS}.get(code)
    if proxied is None:
        return reason
    return (
        f"{reason}: probably the worker {describe_exit(-int(proxied))}: the daemon's telemetry "
        f"proxy exits with 256 - N for a worker killed by signal N ({signal_name(proxied)} is "
        f"{int(proxied)})"
    )


@dataclass
class RunOutcome:
    """How a run ended in the daemon: its last status, the failure reason the daemon gives
    (``exit_code_N``, ``worker_timeout``...; None when it gives none), every status seen."""

    run_id: str
    status: str
    failure_reason: str | None = None
    statuses: list[str] = field(default_factory=list)
    digest: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "TERM" and not self.failure_reason


@dataclass(frozen=True)
class StoredEpisode:
    """One episode as the daemon's telemetry store gives it back."""

    episode_index: int
    steps: int
    total_reward: float
    agent_id: str
    worker_id: str


class DaemonClient:
    """One connection to a trainer daemon at ``address`` (``HOST:PORT``)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.insecure_channel(address)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str) -> Callable[..., Any]:
        _, response, streams = protocol.METHODS[method]
        make: Any = self.channel.unary_stream if streams else self.channel.unary_unary
        return make(
            protocol.method_path(method),
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=protocol.message(response).FromString,
        )

    def health(self, timeout: float = CONNECT_TIMEOUT) -> Any:
        """The daemon's ``HealthCheckResponse``; :class:`SubmitError` when none answers."""
        try:
            return self._call("GetHealth")(
                protocol.message("HealthCheckRequest")(), timeout=timeout
            )
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            absent = code in (None, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            if absent and not _listening(self.address):
                raise SubmitError(
                    f"no MOSAIC trainer daemon answers at {self.address} ({_code(exc)}); start "
                    "it (python -m gym_gui.services.trainer_daemon) or give its address with "
                    "--daemon HOST:PORT"
                ) from None
            raise SubmitError(
                f"something answers at {self.address}, but not in the MOSAIC trainer daemon's "
                f"protocol (its gRPC GetHealth: {_code(exc)}: {_details(exc)}); is it the "
                "daemon's address? give the daemon's with --daemon HOST:PORT"
            ) from None

    def submit(self, config: Mapping[str, Any], run_id: str = "") -> Any:
        """``SubmitRun``: the daemon's ``SubmitRunResponse`` (``run_id``, ``digest``)."""
        request = protocol.message("SubmitRunRequest")(
            run_id=run_id, config_json=json.dumps(config, sort_keys=True)
        )
        try:
            return self._call("SubmitRun")(request, timeout=30.0)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = _details(exc)
            if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED):
                raise SubmitError(
                    f"the daemon at {self.address} refused the run: {details}"
                ) from None
            raise SubmitError(
                f"submitting to the daemon at {self.address} failed ({_code(exc)}: {details})"
            ) from None

    def follow(
        self,
        run_id: str,
        *,
        timeout: float | None = None,
        on_status: Callable[[str, Any], None] | None = None,
    ) -> RunOutcome:
        """Follow a run just submitted (``INIT``) through ``WatchRuns`` until it is ``TERM`` or
        ``FAULT``; calls ``on_status(name, record)`` at each change of status (``INIT`` first,
        with no record). :class:`SubmitError` when the
        daemon goes away or ``timeout`` seconds pass first (the run goes on in the daemon)."""
        outcome = RunOutcome(run_id, "INIT", statuses=["INIT"])
        if on_status is not None:  # SubmitRun accepted it: the daemon registered it INIT
            on_status("INIT", None)
        request = protocol.message("WatchRunsRequest")(since_seq=0)
        stream = self._call("WatchRuns")(request, timeout=timeout)
        try:
            for record in (r for r in stream if r.run_id == run_id):
                name = protocol.status_name(record.status)
                outcome.digest = record.digest or outcome.digest
                if not outcome.statuses or outcome.statuses[-1] != name:
                    outcome.statuses.append(name)
                    if on_status is not None:
                        on_status(name, record)
                outcome.status = name
                if name in protocol.FINAL_STATUSES:
                    if record.HasField("failure_reason") and record.failure_reason:
                        outcome.failure_reason = record.failure_reason
                    return outcome
        except grpc.RpcError as exc:
            if isinstance(exc, grpc.Call) and exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                silent = " (no status came after INIT)" if outcome.statuses == ["INIT"] else ""
                raise SubmitError(
                    f"run {run_id} is still {outcome.status} after {timeout:g} s{silent}; it "
                    f"goes on in the daemon at {self.address} (--timeout S follows it longer)"
                ) from None
            raise SubmitError(
                f"lost the daemon at {self.address} while following run {run_id} "
                f"({_code(exc)}); the run was last {outcome.status}"
            ) from None
        finally:
            stream.cancel()
        raise SubmitError(
            f"the daemon at {self.address} ended the status stream of run {run_id} while it "
            f"was {outcome.status}"
        )

    def stored_episodes(self, run_id: str, *, wait: float = 2.0) -> list[StoredEpisode]:
        """The episodes of ``run_id`` in the daemon's telemetry store (``StreamRunEpisodes``
        replays them, then waits for new ones: what arrived within ``wait`` seconds)."""
        request = protocol.message("StreamEpisodesRequest")(run_id=run_id, since_seq=0)
        stream = self._call("StreamRunEpisodes")(request, timeout=wait)
        found: dict[tuple[int, str], StoredEpisode] = {}
        try:
            for episode in stream:
                found[(int(episode.episode_index), episode.agent_id)] = StoredEpisode(
                    int(episode.episode_index),
                    int(episode.steps),
                    float(episode.total_reward),
                    episode.agent_id,
                    episode.worker_id,
                )
        except grpc.RpcError as exc:
            if not isinstance(exc, grpc.Call) or exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise SubmitError(
                    f"reading the episodes of run {run_id} from the daemon at {self.address} "
                    f"failed ({_code(exc)})"
                ) from None
        return sorted(found.values(), key=lambda e: (e.episode_index, e.agent_id))


def _listening(address: str, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to ``HOST:PORT`` opens (something listens there, whatever it
    speaks); False for an address of another form (``unix:...``, ``dns:///...``)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in host or not host:
        return False
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def _code(exc: grpc.RpcError) -> str:
    return str(exc.code().name) if isinstance(exc, grpc.Call) else type(exc).__name__


def _details(exc: grpc.RpcError) -> str:
    return str(exc.details() or exc.code().name) if isinstance(exc, grpc.Call) else str(exc)
