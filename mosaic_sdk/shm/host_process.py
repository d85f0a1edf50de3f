"""What runs inside an env host process: gymnasium envs stepped behind the transport.

Worker 0 creates the ``SharedMemoryTransport`` and answers commands; workers 1..n-1 attach as
``TransportWorker`` and step their own slice. Worker 0 forwards the other slices' share of a
reset, call or set-attribute over a private pipe, and kicks that worker awake. Each worker
reports ``("ready", its envs' spaces pickled)`` to the launcher.
"""

from __future__ import annotations

import os
import pickle
import signal
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import numpy as np

from mosaic_sdk.shm import async_steps, spaces
from mosaic_sdk.shm import commands as cmd
from mosaic_sdk.shm.mapping import MappedSegment, SegmentCorruptedError
from mosaic_sdk.shm.packing import RowCodec
from mosaic_sdk.shm.stepper import SliceStepper, dumps
from mosaic_sdk.shm.sync import PeerGoneError, PeerWatch, TransportTimeoutError
from mosaic_sdk.shm.transport import SharedMemoryTransport
from mosaic_sdk.shm.worker import TransportWorker

REPLY_TIMEOUT = 60.0


def frame_shape(env: Any) -> tuple[int, int, int]:
    """``(H, W, C)`` of ``env``'s ``render()`` after a reset (``ValueError`` unless uint8)."""
    env.reset()
    frame = np.asarray(env.render())
    if frame.ndim == 2:
        frame = frame[..., None]
    if frame.ndim != 3 or frame.dtype != np.uint8:
        raise ValueError(
            f"image region needs render() to return uint8 HxWxC frames, got {frame.dtype} "
            f"{frame.shape}; create the envs with render_mode='rgb_array'"
        )
    return (int(frame.shape[0]), int(frame.shape[1]), int(frame.shape[2]))


class _Owner:
    """Worker 0: owns the transport, serves commands, forwards resets to the other workers."""

    def __init__(
        self,
        transport: SharedMemoryTransport,
        stepper: SliceStepper,
        slices: Sequence[tuple[int, int]],
        pipes: Sequence[Connection],
    ) -> None:
        self.t = transport
        self.stepper = stepper
        self.slices = slices
        self.pipes = pipes

    def handle(self, message: Any) -> Any:
        if isinstance(message, cmd.ResetRequest):
            return self._reset(message)
        if isinstance(message, cmd.CallRequest):
            parts = self._each(lambda b, e: ("call", message.name, message.args_pickle))
            results = [r for part in parts for r in pickle.loads(part)]
            return cmd.CallResponse(results_pickle=dumps(results))
        if isinstance(message, cmd.SetAttrRequest):
            values = pickle.loads(message.values_pickle)
            n = self.t.layout.num_envs
            if len(values) != n:
                raise ValueError(f"set_attr: {len(values)} values for {n} envs")
            self._each(lambda b, e: ("set", message.name, dumps(values[b:e])))
            return cmd.SetAttrResponse()
        return None

    def _each(self, make: Callable[[int, int], tuple[Any, ...] | None]) -> list[Any]:
        """Run a command on every slice (worker 0's own last); results in slice order."""
        waiting = []
        for w, (b, e) in enumerate(self.slices):
            message = make(b, e)
            if w == 0 or message is None:
                continue
            self.t.kick_worker(w)  # first: a large message blocks send() until the worker reads
            self.pipes[w - 1].send(message)
            waiting.append(w)
        b0, e0 = self.slices[0]
        own = make(b0, e0)
        results: dict[int, Any] = {}
        failure: BaseException | None = None
        try:
            if own is not None:
                results[0] = self.stepper.run(own)
        except Exception as exc:
            failure = exc
        for w in waiting:  # every forwarded reply is collected, so none answers a later command
            try:
                results[w] = self._reply(w)
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
        return [results[w] for w in sorted(results)]

    def _reset(self, req: cmd.ResetRequest) -> cmd.ResetResponse:
        n = self.t.layout.num_envs
        ids = req.env_ids or list(range(n))
        seeds = req.seeds or [None] * len(ids)
        if len(seeds) != len(ids):
            raise ValueError(f"{len(seeds)} seeds for {len(ids)} env ids")
        chosen = dict(zip(ids, seeds, strict=True))

        def share(b: int, e: int) -> tuple[Any, ...] | None:
            mine = [i for i in ids if b <= i < e]
            if not mine:
                return None
            return ("reset", mine, [chosen[i] for i in mine], req.options)

        infos: list[dict[str, Any]] = []
        observations: list[Any] = []
        for part_infos, part_obs in self._each(share):
            infos.extend(part_infos)
            observations.extend(part_obs or [])
        # the parts come in slice order: put them back in the order of ids
        at = {i: k for k, i in enumerate(i for b, e in self.slices for i in ids if b <= i < e)}
        infos = [infos[at[i]] for i in ids]
        obs = [observations[at[i]] for i in ids] if observations else None
        payload = dumps({"infos": infos, "obs": obs})
        return cmd.ResetResponse(env_ids=list(ids), infos=infos, payload_pickle=payload)

    def _reply(self, w: int) -> Any:
        pipe, pid = self.pipes[w - 1], self.t.seg.worker_pid(w)
        watch = PeerWatch(pid)
        try:
            waited = 0.0
            while not pipe.poll(0.05):
                waited += 0.05
                if not watch.alive():
                    raise PeerGoneError(f"engine worker {w} (pid {pid}) exited during a command")
                if waited > REPLY_TIMEOUT:
                    raise TransportTimeoutError(f"engine worker {w} did not answer a command")
            status, value = pipe.recv()
        finally:
            watch.close()
        if status != "ok":
            raise pickle.loads(value)
        return value


def _explained(seg: MappedSegment, exc: BaseException) -> BaseException:
    """``exc``, or the corruption that caused it (an overwritten segment shows up as odd
    errors, so the header is checked before anything is reported)."""
    if isinstance(exc, SegmentCorruptedError):
        return exc
    try:
        seg.verify_header()
    except SegmentCorruptedError as corrupt:
        corrupt.__cause__ = exc
        return corrupt
    return exc


def _report(launcher: Connection, exc: BaseException) -> None:
    """Send ``("error", text, pickled exception)`` (b"" when it cannot be pickled)."""
    try:
        text = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        launcher.send(("error", text, _pickled_error(exc) if isinstance(exc, Exception) else b""))
    except Exception:
        pass


def _spaces_blob(envs: Sequence[Any], **extra: Any) -> bytes:
    """The envs' spaces (with their random state), env 0's render mode and metadata, ``extra``."""
    first = envs[0]
    return bytes(
        cloudpickle.dumps(
            {
                "observation_spaces": [env.observation_space for env in envs],
                "action_spaces": [env.action_space for env in envs],
                "render_mode": getattr(first, "render_mode", None),
                "metadata": dict(getattr(first, "metadata", {}) or {}),
                **extra,
            }
        )
    )


def _serve_owner(
    name: str,
    envs: list[Any],
    slices: Sequence[tuple[int, int]],
    images: bool,
    launcher: Connection,
    pipes: Sequence[Connection],
    options: dict[str, Any],
) -> None:
    first = envs[0]
    image_shape = frame_shape(first) if images else None
    obs_codec = RowCodec(first.observation_space)
    act_codec = RowCodec(first.action_space)
    transport = SharedMemoryTransport(
        slices[-1][1],
        obs_codec.words,
        act_codec.words,
        name=name,
        image_shape=image_shape,
        num_workers=len(slices),
        side_size=options["side_size"],
        spin=options["spin"],
        peer_pids=(os.getppid(),),
    )
    try:
        for w, (b, e) in enumerate(slices):
            transport.set_worker_slice(w, b, e)
        wire: dict[str, cmd.SpaceSpec | None] = {}
        for role in ("observation_space", "action_space"):
            try:
                wire[role] = spaces.to_spec(getattr(first, role))
            except ValueError:
                wire[role] = None  # only Python clients (spaces_pickle) can use this space
        transport.schema = cmd.GetSchemaResponse(
            num_envs=slices[-1][1],
            obs_size=transport.layout.obs_size,
            act_size=transport.layout.act_size,
            image=image_shape,
            env_id=options["env_id"],
            metadata={k: v for k, v in first.metadata.items() if k != "autoreset_mode"},
            num_workers=len(slices),
            spaces_pickle=_spaces_blob(
                envs,
                autoreset_mode=options["autoreset_mode"],
                asynchronous=bool(options.get("asynchronous")),
            ),
            **wire,
        )
        stepper = SliceStepper(transport, envs, 0, images, 0, options["autoreset_mode"])
        owner = _Owner(transport, stepper, slices, pipes)
        launcher.send(("ready", _spaces_blob(envs)))
        if options.get("asynchronous"):
            async_steps.serve_owner(transport, stepper, owner.handle)
            return
        while (seq := transport.wait_for_actions(owner.handle)) is not None:
            stepper.step()
            transport.publish_frame(seq)
    except BaseException as exc:
        # before close(), so the client finds it on waking
        _report(launcher, _explained(transport.seg, exc))
        raise _Reported() from exc
    finally:
        transport.close()


def _serve_worker(
    name: str,
    envs: list[Any],
    index: int,
    slices: Sequence[tuple[int, int]],
    images: bool,
    launcher: Connection,
    pipe: Connection,
    options: dict[str, Any],
) -> None:
    worker = TransportWorker(name, index, spin=options["spin"])
    try:
        worker.watch_peer(os.getppid(), "launcher")
        begin = slices[index][0]
        stepper = SliceStepper(worker, envs, begin, images, index, options["autoreset_mode"])
        launcher.send(("ready", _spaces_blob(envs)))

        def forwarded() -> None:  # after a kick exactly one command follows on the pipe
            message = pipe.recv()
            try:
                pipe.send(("ok", stepper.run(message)))
            except Exception as exc:
                pipe.send(("error", _pickled_error(exc)))

        if options.get("asynchronous"):
            async_steps.serve_worker(worker, stepper, index, forwarded)
            return
        while (seq := worker.wait_for_actions()) is not None:
            if seq == 0:
                forwarded()
                continue
            stepper.step()
            worker.publish_done(seq)
    except BaseException as exc:
        _report(launcher, _explained(worker.seg, exc))
        raise _Reported() from exc
    finally:
        worker.close()


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


class _Reported(Exception):
    """The failure is already reported to the launcher."""


def _pickled_error(exc: BaseException) -> bytes:
    try:
        return dumps(exc)
    except Exception:
        return dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))


def run_host(
    name: str,
    env_fns: Sequence[Callable[[], Any]],
    index: int,
    slices: Sequence[tuple[int, int]],
    images: bool,
    launcher: Connection,
    pipes: Sequence[Connection],
    options: dict[str, Any],
) -> None:
    """Body of one host process (``index`` 0 owns the transport). Reports to ``launcher``.

    ``options``: ``spin``, ``env_id``, ``autoreset_mode``, ``side_size`` and ``asynchronous``.
    SIGTERM ends the host through its ``finally``: a signal to the trainer's process group
    reaches the hosts too, and worker 0 must still unlink its segment.
    """
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        envs = [fn() for fn in env_fns]
        if index == 0:
            _serve_owner(name, envs, slices, images, launcher, pipes, options)
        else:
            _serve_worker(name, envs, index, slices, images, launcher, pipes[0], options)
        for env in envs:
            env.close()
    except _Reported:
        raise SystemExit(1) from None
    except BaseException as exc:
        _report(launcher, exc)
        raise SystemExit(1) from None
