"""Every scalar a script gives TensorBoard becomes a series: ``add_scalar`` / ``add_scalars``.

Many training scripts (CleanRL's among them) report their numbers (losses, learning rate, SPS,
episode returns) only through ``torch.utils.tensorboard.SummaryWriter`` or
``tensorboardX.SummaryWriter``. While :class:`ScalarSeries` is installed, either writer's
``add_scalar(tag, value, global_step)`` and ``add_scalars(main_tag, {key: value},
global_step)`` also hand the value to the run's telemetry as a point of the series ``tag``
(``main_tag/key`` for ``add_scalars``) at x = ``global_step`` (0 when the script gives none,
as TensorBoard stores it), through :meth:`~mosaic_sdk.telemetry.TelemetryEmitter.metrics`.

Points of one step are sent as one ``metrics`` event: a point is held until the script moves
to another step, repeats a tag at the same step (two envs ending an episode at once), flushes
or closes its writer, or the run ends (:meth:`ScalarSeries.flush`). A PPO update's nine
scalars make one line.

Neither torch nor tensorboardX is imported for this: each writer is patched when the script
imports its module (:func:`~mosaic_sdk.instrument.import_hooks.when_imported`).

``write_files=False`` (the platform's ``TRACK_TENSORBOARD=0``) keeps TensorBoard files off
the disk: every writer made while installed gets a file writer that drops what it is given,
so no directory or event file is created, and ``add_scalar(s)`` skip building the summary
they would drop; the series flow all the same. Only the process that installed the patch
reports (a forked child's writer, if any, does not write on the telemetry stream).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from mosaic_sdk.instrument.import_hooks import when_imported

#: ``emit(values, step)``: how held points leave (the emitter's ``metrics``).
Emit = Callable[[dict[str, float], int], Any]
#: The modules that define a ``SummaryWriter`` this capture patches.
WRITER_MODULES = ("torch.utils.tensorboard.writer", "tensorboardX.writer")
#: The writer methods replaced while installed.
PATCHED = ("__init__", "_get_file_writer", "add_scalar", "add_scalars", "flush", "close")
#: Set on a patched writer class: the capture that patched it.
_MARK = "_mosaic_scalar_series"


class _DroppedFiles:
    """A TensorBoard ``FileWriter`` that writes nothing: what a writer gets with files off."""

    def __init__(self, log_dir: Any) -> None:
        self._log_dir = log_dir

    def get_logdir(self) -> Any:
        return self._log_dir

    def add_event(self, *args: Any, **kwargs: Any) -> None:
        pass

    add_summary = add_graph = add_onnx_graph = add_event

    def flush(self) -> None:
        pass

    close = reopen = flush


#: This process's pid, kept current in a forked child (``os.getpid()`` is a system call, and
#: :meth:`ScalarSeries.add` runs for every scalar a script writes).
_PID = [os.getpid()]


def _forked() -> None:
    _PID[0] = os.getpid()


if hasattr(os, "register_at_fork"):  # not on Windows, where no child is forked
    os.register_at_fork(after_in_child=_forked)


def _number(value: Any) -> float | None:
    """The float TensorBoard would store for ``value`` (python and numpy numbers, one-element
    torch tensors and JAX arrays), or None when it is not a number."""
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    item = getattr(value, "item", None)  # arrays and tensors of one element, numpy scalars
    try:
        return float(item() if item is not None else value)
    except (TypeError, ValueError, RuntimeError):
        return None


def _step(global_step: Any) -> int | None:
    if type(global_step) is int:
        return global_step if global_step >= 0 else None
    if global_step is None:
        return 0
    try:
        step = int(global_step)
    except (TypeError, ValueError, RuntimeError):
        return None
    return step if step >= 0 else None


class ScalarSeries:
    """Turns a process's ``SummaryWriter`` scalars into series (see the module docstring)."""

    def __init__(self, emit: Emit, *, write_files: bool = True) -> None:
        self.emit = emit
        self.write_files = write_files
        self.owner_pid = os.getpid()
        self.points = 0
        self._held: dict[str, float] = {}
        self._held_step: int | None = None

    # -- holding and sending ----------------------------------------------------------------
    def add(self, tag: Any, value: Any, global_step: Any) -> None:
        """Hold one point; sends what was held first when it belongs to another step."""
        number = _number(value)
        step = _step(global_step)
        if number is None or step is None or _PID[0] != self.owner_pid:
            return  # TensorBoard itself refuses such a value; a child process does not report
        name = tag if type(tag) is str else str(tag)
        held = self._held
        if held and (step != self._held_step or name in held):
            self.flush()
            held = self._held
        held[name] = number
        self._held_step = step
        self.points += 1

    def flush(self) -> None:
        """Send the points held (one ``metrics`` event), if any."""
        if not self._held or _PID[0] != self.owner_pid:
            return
        values, step = self._held, self._held_step
        self._held = {}
        assert step is not None
        self.emit(values, step)

    # -- the patch --------------------------------------------------------------------------
    def install(self) -> Callable[[], None]:
        """Patch the ``SummaryWriter`` of ``torch.utils.tensorboard`` and of ``tensorboardX``
        (each when its module is imported, at once if it already is: a script that imports
        neither never loads them); returns the function that restores them and sends what is
        held."""
        undo: list[Callable[[], None]] = []

        def patch(module: ModuleType) -> None:
            writer = getattr(module, "SummaryWriter", None)
            if isinstance(writer, type):
                undo.append(self._patch_class(writer))

        cancels = [when_imported(name, patch) for name in WRITER_MODULES]

        def restore() -> None:
            for cancel in cancels:
                cancel()
            while undo:
                undo.pop()()
            self.flush()

        return restore

    def _patch_class(self, writer_class: type) -> Callable[[], None]:
        """Patch one ``SummaryWriter`` class; returns its restore (nothing to do when another
        capture has it: a module reloaded, or a second install)."""
        if writer_class.__dict__.get(_MARK) is not None:
            return lambda: None
        series = self
        saved = {
            name: writer_class.__dict__[name] for name in PATCHED if name in writer_class.__dict__
        }
        if len(saved) < len(PATCHED):
            return lambda: None  # not the writer we know

        @functools.wraps(saved["__init__"])
        def init(writer: Any, *args: Any, **kwargs: Any) -> None:
            writer._mosaic_no_files = not series.write_files
            saved["__init__"](writer, *args, **kwargs)

        @functools.wraps(saved["_get_file_writer"])
        def get_file_writer(writer: Any) -> Any:
            if not getattr(writer, "_mosaic_no_files", False):
                return saved["_get_file_writer"](writer)
            if writer.all_writers is None or writer.file_writer is None:
                log_dir = getattr(writer, "log_dir", None) or getattr(writer, "logdir", None)
                writer.file_writer = _DroppedFiles(log_dir)
                writer.all_writers = {log_dir: writer.file_writer}
            return writer.file_writer

        @functools.wraps(saved["add_scalar"])
        def add_scalar(
            writer: Any, tag: Any, scalar_value: Any, global_step: Any = None, *args: Any,
            **kwargs: Any,
        ) -> None:  # fmt: skip
            series.add(tag, scalar_value, global_step)
            if not getattr(writer, "_mosaic_no_files", False):
                saved["add_scalar"](writer, tag, scalar_value, global_step, *args, **kwargs)

        @functools.wraps(saved["add_scalars"])
        def add_scalars(
            writer: Any, main_tag: Any, tag_scalar_dict: Any, global_step: Any = None,
            *args: Any, **kwargs: Any,
        ) -> None:  # fmt: skip
            if isinstance(tag_scalar_dict, Mapping):
                for key, value in tag_scalar_dict.items():
                    series.add(f"{main_tag}/{key}", value, global_step)
            if not getattr(writer, "_mosaic_no_files", False):
                saved["add_scalars"](
                    writer, main_tag, tag_scalar_dict, global_step, *args, **kwargs
                )

        @functools.wraps(saved["flush"])
        def flush(writer: Any) -> None:
            series.flush()
            saved["flush"](writer)

        @functools.wraps(saved["close"])
        def close(writer: Any) -> None:
            series.flush()
            saved["close"](writer)

        patched = {"__init__": init, "_get_file_writer": get_file_writer,
                   "add_scalar": add_scalar, "add_scalars": add_scalars, "flush": flush,
                   "close": close}  # fmt: skip
        for name, function in patched.items():
            setattr(writer_class, name, function)
        setattr(writer_class, _MARK, self)

        def restore() -> None:
            for name, function in saved.items():
                setattr(writer_class, name, function)
            delattr(writer_class, _MARK)

        return restore


__all__ = ["WRITER_MODULES", "Emit", "ScalarSeries"]
