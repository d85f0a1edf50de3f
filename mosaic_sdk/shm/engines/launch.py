"""Start a reference engine in a child process; its segment is removed however it ends.

    handle = launch_engine(num_envs=16, model="reacher")
    client = SharedMemoryClient(handle.name)
    ...
    client.close(shutdown_engine=True)
    handle.close()         # joins the engine, unlinks the segment even after a SIGKILL

The engine is a fresh interpreter (no fork: no GL context or thread is inherited, and the
caller's script needs no ``__main__`` guard). When the launcher dies the engine exits and
unlinks its segment; when the engine dies, ``close()`` (or the handle's finalizer) does.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import secrets
import select
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Sequence
from typing import Any

from mosaic_sdk.shm.layout import creator_pid
from mosaic_sdk.shm.segment import lrbc_name, segment_name, shm_open, unlink_segment

#: What to install when MuJoCo is missing.
MUJOCO_HINT = "install the MuJoCo extra: pip install 'mosaic-worker-sdk[mujoco]'"


def serve(kwargs: dict[str, Any], ready_fd: int | None = None) -> int:
    """Run a ``MujocoEngine`` until its client closes it (or dies); 0 on a clean close."""
    from mosaic_sdk.shm.sync import TransportError

    try:
        # The engine module imports mujoco (an optional dependency): only in the engine process.
        from mosaic_sdk.shm.engines.mujoco_engine import MujocoEngine

        engine = MujocoEngine(**kwargs)
    except Exception as exc:
        if ready_fd is None:
            raise
        if isinstance(exc, ModuleNotFoundError) and exc.name == "mujoco":
            text = f"MuJoCo is not installed: {MUJOCO_HINT}"
        else:
            text = str(exc) if type(exc) is ValueError else f"{type(exc).__name__}: {exc}"
        os.write(ready_fd, f"error {text}\n".encode())
        os.close(ready_fd)
        return 2
    try:
        if ready_fd is not None:
            os.write(ready_fd, f"ready {engine.name}\n".encode())
            os.close(ready_fd)
        try:
            engine.serve_forever()
        except TransportError as exc:  # the client died, or the segment was overwritten
            print(f"mosaic engine: {exc}; shutting down", file=sys.stderr, flush=True)
            return 1
    finally:
        engine.close()
    return 0


def _remove_own_segment(name: str, pid: int) -> None:
    """Unlink segment ``name`` if process ``pid`` created it (its header says so): a name that
    another engine or program holds (the reason an engine was refused) is never removed."""
    try:
        fd = shm_open(name, readonly=True)
    except OSError:
        return  # gone already (the engine removed it), or not ours to open
    try:
        if os.fstat(fd).st_size < 64:
            return
        with mmap.mmap(fd, 64, access=mmap.ACCESS_READ) as head:
            creator = creator_pid(head)
    finally:
        os.close(fd)
    if creator == pid:
        unlink_segment(name)


def _stop(process: subprocess.Popen[bytes], name: str, timeout: float, owner: int) -> None:
    if os.getpid() != owner:
        return  # a forked child never stops what its parent started
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(2.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(2.0)
    _remove_own_segment(name, process.pid)


class EngineHandle:
    """The launcher's handle on an engine process."""

    def __init__(self, name: str, process: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.process = process
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _stop, process, name, 2.0, self._owner)

    @property
    def pid(self) -> int:
        """The engine's pid."""
        return int(self.process.pid)

    def alive(self) -> bool:
        """True while the engine runs."""
        return self.process.poll() is None

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the engine to exit; its exit code (None while it still runs)."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self, timeout: float = 5.0) -> None:
        """Give the engine ``timeout`` s to exit, then stop it (SIGTERM, then SIGKILL); unlink
        its segment (only the one it created: never a name it was refused for)."""
        self._finalizer.detach()
        _stop(self.process, self.name, timeout, self._owner)

    def __enter__(self) -> EngineHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def launch_engine(
    num_envs: int,
    model: str = "reacher",
    *,
    name: str | None = None,
    layout: str = "mshm",
    image_size: tuple[int, int] | None = None,
    seed: int = 0,
    render_threads: int | None = None,
    start_timeout: float = 60.0,
    gpu_obs: int | str | None = None,
) -> EngineHandle:
    """Start a ``MujocoEngine`` in a child process; returns once its segment is ready.

    Raises ``ValueError`` with the engine's own message when it refuses the arguments.
    """
    if layout == "lrbc":  # the design's naming: exactly as asked (or $LUCKY_SHM_NAME), no prefix
        seg = lrbc_name(name, f"LuckyEngine_{secrets.token_hex(6)}")
    else:
        seg = segment_name(name)
    kwargs = {
        "num_envs": num_envs,
        "model": str(model),
        "name": seg,
        "layout": layout,
        "image_size": list(image_size) if image_size is not None else None,
        "seed": seed,
        "render_threads": render_threads,
        "gpu_obs": gpu_obs,
        "peer_pids": [os.getpid()],
    }
    read_fd, write_fd = os.pipe()
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mosaic_sdk.shm.engines.launch",
                "--kwargs",
                json.dumps(kwargs),
                "--ready-fd",
                str(write_fd),
            ],
            pass_fds=(write_fd,),
        )
    finally:
        os.close(write_fd)
    handle = EngineHandle(seg, process)
    line = ""
    try:
        line = _read_line(read_fd, process, start_timeout)
        if not line.startswith("ready "):
            raise ValueError(line.removeprefix("error ") or "the engine exited at start")
    except BaseException:
        handle.close(timeout=5.0 if line else 0.0)  # a refusing engine exits by itself
        raise
    finally:
        os.close(read_fd)
    return handle


def _read_line(fd: int, process: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the engine was not ready after {timeout} s")
        readable, _, _ = select.select([fd], [], [], min(left, 0.1))
        if readable:
            chunk = os.read(fd, 4096)
            if not chunk:
                break  # the engine exited
            data += chunk
    return data.decode(errors="replace").strip()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the engine process (``launch_engine`` runs it)."""
    parser = argparse.ArgumentParser(prog="python -m mosaic_sdk.shm.engines.launch")
    parser.add_argument("--kwargs", required=True, help="MujocoEngine's arguments, JSON")
    parser.add_argument("--ready-fd", type=int, default=None)
    args = parser.parse_args(argv)
    kwargs = json.loads(args.kwargs)
    if kwargs.get("image_size") is not None:
        kwargs["image_size"] = tuple(kwargs["image_size"])
    kwargs["peer_pids"] = tuple(kwargs.get("peer_pids") or ())
    signal.signal(signal.SIGTERM, _terminated)  # unwinds: the segment is closed and removed
    try:
        return serve(kwargs, args.ready_fd)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the launcher says it
        return 130
    finally:  # nothing left to unwind: a late SIGTERM ends the exit quietly
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _terminated(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
