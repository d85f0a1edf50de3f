"""The ``ray`` engine: trials through Ray Tune, on a running cluster or a local Ray instance."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from mosaic_sdk.exit_status import describe_exit
from mosaic_sdk.plugins import WorkerHandle
from mosaic_sdk.runner.storage import private
from mosaic_sdk.runner.storage.paths import runs_dir_for
from mosaic_sdk.sweeps import ray_instance
from mosaic_sdk.sweeps.collector import Collector
from mosaic_sdk.sweeps.spec import SweepSpec
from mosaic_sdk.sweeps.store import SweepStore

#: Longest a sweep waits for the cluster it is to join (s), unless told otherwise.
CONNECT_TIMEOUT = 30.0
#: Longest the probe that joins first (see ``RayEngine._probe``) may take to import Ray (s).
IMPORT_WAIT = 60.0
#: Ray's switch that stops it from replacing 127.0.0.1 with this machine's other address.
_RAY_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class ClusterUnreachable(RuntimeError):
    """The cluster given by ``--address`` cannot be reached or joined; the message is one
    sentence that says what to try."""


def cluster_target(address: str) -> tuple[str, int] | None:
    """The host and port a sweep must reach for ``address`` (None for ``auto``): the GCS of
    ``HOST[:PORT]`` (6379 by default), the client server of ``ray://HOST[:PORT]`` (10001)."""
    if address in ("auto", "local"):
        return None
    rest, default = address, 6379
    if rest.startswith("ray://"):
        rest, default = rest[len("ray://") :], 10001
    rest = rest.split("/", 1)[0]
    if rest.startswith("["):  # [::1]:6379
        host, _, port = rest[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not host:
        raise ClusterUnreachable(
            f"--address {address!r} names no host: give HOST:PORT, ray://HOST:PORT or auto"
        )
    try:
        return host, int(port) if port else default
    except ValueError:
        raise ClusterUnreachable(
            f"--address {address!r}: {port!r} is not a port; give HOST:PORT, e.g. 127.0.0.1:6379"
        ) from None


@contextlib.contextmanager
def loopback_ray() -> Iterator[None]:
    """Keep Ray on 127.0.0.1 (by default it replaces a loopback address with this machine's
    outward one): the module's constant (read at import) and the environment (for the
    processes the instance starts)."""
    from ray._private import ray_constants  # the ray extra: only when the engine runs

    old_env = os.environ.get(_RAY_LOOPBACK_ENV)
    old_value = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    os.environ[_RAY_LOOPBACK_ENV] = "0"
    if old_value is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if old_env is None:
            os.environ.pop(_RAY_LOOPBACK_ENV, None)
        else:
            os.environ[_RAY_LOOPBACK_ENV] = old_env
        if old_value is not None:
            ray_constants.ENABLE_RAY_CLUSTER = old_value


@dataclass(eq=False)
class RayEngine:
    """Run one sweep through Ray Tune."""

    handle: WorkerHandle
    spec: SweepSpec
    sweeps: SweepStore
    sweep_id: str
    _: KW_ONLY
    sampler: str = "grid"
    address: str | None = None
    runs_dir: Path | None = None
    grace: float = 10.0
    report: Callable[[str], None] = print
    num_cpus: int | None = None
    ray_temp_dir: str | None = None
    connect_timeout: float = CONNECT_TIMEOUT
    interrupted: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        # Tune's end of an experiment waits 5 s for trials to stop: stay inside it.
        self.grace = min(self.grace, 3.0)
        self.storage_dir = runs_dir_for(self.sweeps.runs.path) / "ray"

    def run(self, resume: bool = False) -> bool:
        """Run the sweep to its end; True when it was interrupted. ``ClusterUnreachable``
        when the cluster of ``address`` cannot be joined within ``connect_timeout``; without
        one, a local instance on 127.0.0.1 (:mod:`~mosaic_sdk.sweeps.ray_instance`)."""
        import ray  # the ray extra, slow to import: only when the engine runs

        started = False
        watchdog = None
        temp: str | None = None
        loopback = contextlib.ExitStack()
        try:
            if not ray.is_initialized():
                if self.address is not None:
                    self._connect()
                else:
                    loopback.enter_context(loopback_ray())
                    temp = self.ray_temp_dir or tempfile.mkdtemp(prefix=ray_instance.TEMP_PREFIX)
                    watchdog = ray_instance.start_watchdog(temp, remove=self.ray_temp_dir is None)
                    ray.init(
                        num_cpus=self.num_cpus or max(2, self.spec.trials_at_once),
                        include_dashboard=False,
                        _temp_dir=temp,
                        _node_ip_address="127.0.0.1",
                        log_to_driver=False,
                    )
                started = True
            collector = Collector(
                self.sweeps.runs.path,
                self.handle.name,
                self.sweep_id,
                self.spec.metric,
                pruner=None if self.spec.pruner is None else self.spec.pruner.type,
                report=self.report,
                pm=self.handle.pm,
                # a trial_stall_after is enforced on the trials' nodes, which send the event
                stall_after=None if self.spec.trial_stall_after is None else 0.0,
            )
            restore = self._install_signal_handlers(collector)
            try:
                return self._run(collector, resume)
            finally:
                restore()
                collector.close()
        finally:
            if started:
                ray.shutdown()
            if watchdog is not None:
                ray_instance.stop_watchdog(watchdog)
            if temp is not None:  # what ray.shutdown left (its agents linger), then the dir
                ray_instance.end_instance(temp)
                if self.ray_temp_dir is None:
                    ray_instance.remove_temp_dir(temp)
            loopback.close()
            private.restrict_tree(self.storage_dir)

    def _connect(self) -> None:
        """Join the cluster at ``address`` within ``connect_timeout`` or raise
        ``ClusterUnreachable`` (one sentence, what to try)."""
        address = str(self.address)
        target = cluster_target(address)
        hint = (
            "start it (ray start --head --port PORT), give its address as HOST:PORT (the "
            "head's GCS port), ray://HOST:10001 (a Ray client server) or auto (on a node of "
            "the cluster), or wait longer with --connect-timeout S"
        )
        stack = contextlib.ExitStack()
        if target is not None:
            host, port = target
            try:
                socket.create_connection((host, port), timeout=self.connect_timeout).close()
            except OSError as exc:
                why = exc.strerror or type(exc).__name__
                raise ClusterUnreachable(
                    f"cannot reach the Ray cluster at {address} ({host}:{port}: {why}); {hint}"
                ) from None
            if host in ("localhost", "::1") or host.startswith("127."):  # this machine
                stack.enter_context(loopback_ray())
                token_auth_on_this_machine()
        with stack:
            failure = self._probe(address)
            if failure == _AUTH_REFUSED:
                raise ClusterUnreachable(
                    f"cannot join the Ray cluster at {address}: it uses token authentication "
                    "and refused this process's token (none, or another); set "
                    "RAY_AUTH_MODE=token and give the cluster's token in ~/.ray/auth_token, "
                    "RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN"
                )
            if failure is None:
                failure = self._init(address)
            if failure is not None:
                raise ClusterUnreachable(
                    f"cannot join the Ray cluster at {address} ({failure}); {hint}"
                )

    def _probe(self, address: str) -> str | None:
        """Join the cluster from a child process first, within ``connect_timeout``: Ray's
        own connection retries last minutes and cannot be interrupted from here. None when
        it joined; otherwise why not."""
        proc = subprocess.Popen(
            [sys.executable, "-c", _PROBE, address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert proc.stdout is not None
        # The time limit starts once Ray is imported (seconds on a busy machine).
        select.select([proc.stdout], [], [], IMPORT_WAIT)
        try:
            _, err = proc.communicate(timeout=self.connect_timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the probe's own group
            proc.communicate()
            return f"no answer within {self.connect_timeout:g} s"
        if proc.returncode == 0:
            return None
        said = [line.strip() for line in err.splitlines() if line.strip()]
        return said[-1][:300] if said else f"the probe {describe_exit(proc.returncode)}"

    def _init(self, address: str) -> str | None:
        """``ray.init`` of the cluster; None when it joined, otherwise why not."""
        import ray  # the ray extra, slow to import: only when the engine runs

        with _deadline(self.connect_timeout):
            try:
                ray.init(address=address, log_to_driver=False)
            except (_TimedOut, ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                if ray.is_initialized():
                    ray.shutdown()
                if isinstance(exc, _TimedOut):
                    return f"no answer within {self.connect_timeout:g} s"
                return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None

    def _run(self, collector: Collector, resume: bool) -> bool:
        from ray import tune  # the ray extra, slow to import: only when the engine runs

        # Optional: ray_trial imports Ray.
        from mosaic_sdk.sweeps.ray_search import tune_setup
        from mosaic_sdk.sweeps.ray_trial import NOTICES, MosaicTrial, make_inbox

        # A trial reports its metric once it has episodes: results before that lack it.
        os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
        # Tune's progress tables would mix with our output: verbose=0 silences the classic one.
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        while not NOTICES.empty():  # left by an earlier sweep of this process
            NOTICES.get_nowait()
        inbox = make_inbox()
        setup = tune_setup(self.spec, self.sampler)
        setup_args = {
            "inbox": inbox,
            "worker": self.handle.name,
            "spec": self.spec,
            "search": setup.search,
            "grace": self.grace,
            "runs_dir": None if self.runs_dir is None else str(self.runs_dir),
            "max_t": None if self.spec.scheduler is None else self.spec.scheduler.max_t,
        }
        trainable = tune.with_resources(
            tune.with_parameters(MosaicTrial, setup_args=setup_args), {"cpu": 1.0}
        )
        stop = threading.Event()
        pump = threading.Thread(
            target=self._pump, args=(inbox, collector, stop), name="mosaic-sweep-inbox", daemon=True
        )
        pump.start()
        # Tune's state, from its first file (tuner.pkl) on: owner-only, as the store.
        old_umask = os.umask(0o077)
        try:
            if resume:
                path = self.sweeps.get_sweep(self.sweep_id)["engine_state"]
                tuner = tune.Tuner.restore(path, trainable=trainable, resume_errored=False)
            else:
                private.make_dir(self.storage_dir)
                tuner = self._new_tuner(trainable, setup)
                self.sweeps.set_engine_state(self.sweep_id, str(self.storage_dir / self.sweep_id))
            tuner.fit()
        finally:
            os.umask(old_umask)
            stop.set()
            pump.join()
            for run_id in collector.open_attempts():
                if self.interrupted:
                    collector.lost(run_id, "the sweep was interrupted", status="cancelled")
                else:
                    collector.lost(run_id, "the trial ended without its worker's end")
        return self.interrupted

    def _new_tuner(self, trainable: Any, setup: Any) -> Any:
        from ray import tune  # the ray extra, slow to import: only when the engine runs

        # Optional: ray_trial imports Ray.
        from mosaic_sdk.sweeps.ray_trial import LostAttempts

        return tune.Tuner(
            trainable,
            param_space=setup.param_space,
            tune_config=tune.TuneConfig(
                metric=setup.metric,
                mode=setup.mode,
                search_alg=setup.search_alg,
                num_samples=setup.num_samples,
                max_concurrent_trials=self.spec.trials_at_once,
                scheduler=setup.scheduler,
                # an actor is one trial's (its worker, its lines): never handed to another
                reuse_actors=False,
            ),
            run_config=tune.RunConfig(
                name=self.sweep_id,
                storage_path=str(self.storage_dir),
                stop=setup.stop,
                failure_config=tune.FailureConfig(max_failures=self.spec.max_failures),
                # No periodic checkpoints: a retried attempt starts its worker anew, so the
                # nodes need no storage shared with the driver (PBT saves its own).
                checkpoint_config=tune.CheckpointConfig(
                    checkpoint_frequency=0, checkpoint_at_end=False
                ),
                callbacks=[LostAttempts()],
                verbose=0,
            ),
        )

    def _pump(self, inbox: Any, collector: Collector, stop: threading.Event) -> None:
        import ray  # the ray extra, slow to import: only when the engine runs

        while not stop.is_set():
            collector.handle(ray.get(inbox.take.remote(0.2)))
            self._apply_notices(inbox, collector)
        while items := ray.get(inbox.take.remote(0.0)):
            collector.handle(items)
        self._apply_notices(inbox, collector)

    def _apply_notices(self, inbox: Any, collector: Collector) -> None:
        """Close the attempts of trials Tune saw die, after storing all they had sent."""
        import ray  # the ray extra, slow to import: only when the engine runs

        from mosaic_sdk.sweeps.ray_trial import NOTICES  # optional: imports Ray

        notices = []
        while not NOTICES.empty():
            notices.append(NOTICES.get_nowait())
        if not notices:
            return
        collector.handle(ray.get(inbox.take.remote(0.0)))  # what the dead sent before dying
        for trial_key, why in notices:
            for run_id in collector.open_attempts(trial_key):
                collector.lost(run_id, f"this attempt of trial {trial_key} was lost: {why}")

    def _install_signal_handlers(self, collector: Collector) -> Callable[[], None]:
        """SIGINT/SIGTERM: mark the sweep interrupted, then let Tune end the experiment as on
        its own Ctrl-C (it listens to SIGUSR1 for that; its SIGINT handler is off)."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous_env = os.environ.get("TUNE_DISABLE_SIGINT_HANDLER")
        os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"

        def on_signal(signum: int, frame: Any) -> None:
            if self.interrupted:  # a second Ctrl-C: Tune's own handler is gone; stop now
                raise KeyboardInterrupt
            self.interrupted = True
            collector.sweep_cancelled = True
            self.report(f"mosaic sweep: {signal.Signals(signum).name}: stopping every trial")
            signal.raise_signal(signal.SIGUSR1)

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if previous_env is None:
                os.environ.pop("TUNE_DISABLE_SIGINT_HANDLER", None)
            else:
                os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = previous_env

        return restore


#: What the probe says last when the cluster refused its token (Ray itself only says "Failed
#: to connect", and puts the reason in the exception's cause).
_AUTH_REFUSED = "token authentication refused"
#: The child that tries to join a cluster before this process does (see ``_probe``).
_PROBE = f"""
import sys
try:
    import ray
    print("imported", flush=True)
    ray.init(address=sys.argv[1], log_to_driver=False)
except BaseException as exc:
    text = str(exc).strip()
    print(text.splitlines()[0] if text else type(exc).__name__, file=sys.stderr)
    cause = exc
    while cause is not None:
        if type(cause).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(cause):
            print({_AUTH_REFUSED!r}, file=sys.stderr)
            break
        cause = cause.__cause__ or cause.__context__
    sys.exit(1)
ray.shutdown()
"""


def token_auth_on_this_machine() -> None:
    """Joining a cluster of this machine (a loopback address), do what Ray does for ``auto``
    (never for an explicit address, so that a token is not sent to another machine): with
    ``RAY_AUTH_MODE`` unset and a token at hand, use token authentication."""
    if os.environ.get("RAY_AUTH_MODE") is not None:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


class _TimedOut(Exception):
    """Raised in the main thread when joining a cluster takes too long."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise ``_TimedOut`` in the main thread after ``seconds`` (Ray retries an unanswering
    cluster for minutes); elsewhere no bound."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
