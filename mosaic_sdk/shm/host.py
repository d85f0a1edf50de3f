"""Launch gymnasium envs behind a transport in child processes (the Python "engine").

    handle = launch_env_host("CartPole-v1", num_envs=64, num_workers=2)
    client = SharedMemoryClient(handle.name)
    ...
    client.close(shutdown_engine=True)
    handle.close()          # joins the hosts and unlinks the segment, even after a SIGKILL

``envs`` is a list of env constructors (as for ``SyncVectorEnv``; lambdas are fine, they travel
with cloudpickle) or a gymnasium id plus ``num_envs`` (as for ``gymnasium.make_vec``). With
``num_workers > 1`` the envs are split into contiguous slices, one host process per slice, so
stepping runs on several cores; worker 0 owns the segment.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import time
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle

from mosaic_sdk.exit_status import describe_exit
from mosaic_sdk.shm.segment import segment_name, unlink_segment


def _split(num_envs: int, num_workers: int) -> list[tuple[int, int]]:
    """Contiguous slices, the first ``num_envs % num_workers`` one env longer."""
    base, extra = divmod(num_envs, num_workers)
    return [
        (w * base + min(w, extra), (w + 1) * base + min(w + 1, extra)) for w in range(num_workers)
    ]


def _host_entry(name: str, fns_blob: bytes, *args: Any) -> None:
    # Imported in the env host process only, not by the trainer that imports this module.
    from mosaic_sdk.shm.host_process import run_host

    run_host(name, pickle.loads(fns_blob), *args)


def _cleanup(processes: list[Any], name: str, timeout: float, owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return  # a forked child must not stop (or unlink) what its parent launched
    deadline = time.monotonic() + timeout
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    unlink_segment(name)


class EnvHostHandle:
    """The launcher's handle on running host processes; ``close()`` always unlinks the segment."""

    def __init__(self, name: str, processes: list[Any], reports: list[Connection], env_id: str):
        self.name = name
        self.processes = processes
        self.env_id = env_id
        self._reports = reports
        self._failures: list[str] = []
        self.owner_pid = os.getpid()
        self.ready: dict[int, bytes] = {}  # worker -> its "ready" report (pickled spaces)
        self._finalizer = weakref.finalize(self, _cleanup, processes, name, 2.0, self.owner_pid)

    @property
    def pids(self) -> list[int]:
        """Pids of the host processes, worker 0 (the segment owner) first."""
        return [int(p.pid) for p in self.processes]

    def alive(self) -> bool:
        """True while every host process runs."""
        return all(p.is_alive() for p in self.processes)

    def failure(self, wait: float = 0.0) -> str | None:
        """The error a host process reported before exiting, if any.

        ``wait`` gives a host that is still running that many seconds to report.
        """
        deadline = time.monotonic() + wait
        while not any(c.poll() for c in self._reports if not c.closed) and self.alive():
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        for conn in self._reports:
            try:
                while conn.poll():
                    kind, text, *_ = conn.recv()
                    if kind == "error":
                        self._failures.append(text)
            except (EOFError, OSError):
                continue
        return "\n".join(self._failures) or None

    def close(self, timeout: float = 5.0) -> None:
        """Wait up to ``timeout`` s for the hosts to exit, then stop them; unlink the segment."""
        self._finalizer.detach()
        if os.getpid() != self.owner_pid:
            return
        _cleanup(self.processes, self.name, timeout, self.owner_pid)
        for conn in self._reports:
            conn.close()

    def __enter__(self) -> EnvHostHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def launch_env_host(
    envs: Sequence[Callable[[], Any]] | str,
    num_envs: int | None = None,
    *,
    num_workers: int = 1,
    name: str | None = None,
    render_images: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    context: str | None = None,
    spin: float | None = None,
    start_timeout: float = 60.0,
    autoreset_mode: str = "NextStep",
    side_size: int = 0,
    asynchronous: bool = False,
) -> EnvHostHandle:
    """Start host processes serving ``envs``; returns once the segment is ready for a client.

    ``render_images=True`` adds the image region (each env's ``render()`` after every reset and
    step). ``context``: the start method (default the platform's); under ``"spawn"`` and
    ``"forkserver"`` what the constructors reference must be importable in a fresh interpreter.
    ``side_size``: bytes per side area (0: none; then no step infos or non-fixed spaces).
    ``asynchronous=True`` serves each worker's slice on its own (``async_steps``).
    """
    if context is not None and context not in mp.get_all_start_methods():
        raise ValueError(
            f"context={context!r} is not a start method of this platform; use one of "
            f"{mp.get_all_start_methods()}"
        )
    # imported here: gymnasium is slow to import, and this module is imported without it
    from mosaic_sdk.shm.inline import constructors

    fns = constructors(envs, num_envs, env_kwargs, render_images, "launch_env_host", "envs")
    env_id = envs if isinstance(envs, str) else ""
    n = len(fns)
    if not 1 <= num_workers <= min(n, 16):
        raise ValueError(f"num_workers must be in 1..{min(n, 16)} for {n} envs, got {num_workers}")
    seg = segment_name(name)
    slices = _split(n, num_workers)
    ctx = mp.get_context(context)
    options = {
        "spin": spin,
        "env_id": env_id,
        "autoreset_mode": autoreset_mode,
        "side_size": side_size,
        "asynchronous": asynchronous,
    }
    peer_pipes = [ctx.Pipe() for _ in range(num_workers - 1)]
    processes, reports = [], []
    try:
        for w, (b, e) in enumerate(slices):
            reader, writer = ctx.Pipe(duplex=False)
            pipes = [a for a, _ in peer_pipes] if w == 0 else [peer_pipes[w - 1][1]]
            blob = cloudpickle.dumps(fns[b:e])
            p = ctx.Process(  # type: ignore[attr-defined]
                target=_host_entry,
                args=(seg, blob, w, slices, render_images, writer, pipes, options),
                name=f"mosaic-shm-host-{w}",
                daemon=True,
            )
            p.start()
            writer.close()
            processes.append(p)
            reports.append(reader)
        handle = EnvHostHandle(seg, processes, reports, env_id)
        _wait_ready(handle, start_timeout)
    except BaseException:
        _cleanup(processes, seg, 0.0, os.getpid())
        raise
    finally:
        for end_a, end_b in peer_pipes:
            end_a.close()
            end_b.close()
    return handle


def _unpickle_error(data: bytes) -> BaseException | None:
    if not data:
        return None
    try:
        exc = pickle.loads(data)
    except Exception:
        return None
    return exc if isinstance(exc, Exception) else None


def _wait_ready(handle: EnvHostHandle, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = dict(enumerate(handle._reports))
    while pending:
        for w, conn in list(pending.items()):
            try:
                if not conn.poll(0.02):
                    continue
                kind, text, *extra = conn.recv()
            except (EOFError, OSError):
                kind, text, extra = "error", describe_exit(handle.processes[w].exitcode), []
            if kind == "ready":
                handle.ready[w] = text
                del pending[w]
                continue
            original = _unpickle_error(extra[0]) if extra else None
            if original is not None:  # the env's own exception type, as SyncVectorEnv raises it
                if hasattr(original, "add_note"):
                    original.add_note(f"raised while env host worker {w} started:\n{text}")
                raise original
            raise RuntimeError(f"env host worker {w} failed to start: {text}")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"env host workers {sorted(pending)} not ready after {timeout} s "
                "(slow env construction? raise start_timeout)"
            )
