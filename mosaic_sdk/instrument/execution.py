"""Run a script (a file, or a module as ``python -m`` does) as ``__main__`` in this process,
and say how it ended.

:func:`execute` sets ``sys.argv`` (and ``sys.path``, the working directory) as Python would
for ``python path/to/train.py ARGS`` or ``python -m pkg.train ARGS``, installs the given
patches where SIGTERM already stops the run (installing one may import torch: seconds on a
busy machine), runs the script and undoes everything afterwards. SIGTERM and SIGINT raise
:class:`RunCancelled` in the script's frame (a ``BaseException``: ``except Exception`` in a
script does not swallow it), and so does the control channel's stop at the next env step.

The :class:`Ending` says ``completed`` (the script returned, or ``sys.exit(0)``/``sys.exit()``),
``cancelled`` or ``failed``: an exception (its type, message, the traceback without this
module's frames, and where it was raised) or ``sys.exit(N)`` with N not 0 (``exit_code``).
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from mosaic_sdk.run_context import RunContext


class RunCancelled(BaseException):
    """Raised in the script's frame when the run must stop (SIGTERM, SIGINT, a stop command)."""


@dataclass(frozen=True)
class ScriptTarget:
    """What to run: a file (``path``) or a module (``module``); ``import_root`` goes first
    on ``sys.path`` (a checkout the module lives in)."""

    path: Path | None = None
    module: str | None = None
    import_root: Path | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.module is None):
            raise ValueError("a ScriptTarget is a path or a module, exactly one of them")

    def describe(self) -> str:
        """``train.py`` or ``-m pkg.train``, as a person would type it."""
        return str(self.path) if self.path is not None else f"-m {self.module}"


@dataclass(frozen=True)
class Ending:
    """How a script ended (see the module docstring)."""

    outcome: str
    #: cancelled: why (the signal's name, ``stop command``)
    reason: str | None = None
    error_type: str | None = None
    message: str | None = None
    #: the traceback as Python prints it, without the frames of the runner
    traceback: str | None = None
    #: ``File "train.py", line 3, in <module>: x = 1 / 0``: the innermost frame
    where: str | None = None
    #: ``sys.exit(N)``: N (an int), else None
    exit_code: int | None = None

    @property
    def error(self) -> str:
        """One line: what failed, and where (for the run's ``error``)."""
        if self.outcome != "failed":
            return ""
        if self.error_type == "SystemExit":
            return self.message or "the script exited with a failure status"
        head = f"{self.error_type}: {self.message}" if self.message else str(self.error_type)
        return f"{head} ({self.where})" if self.where else head


def _cancel_handler(ctx: RunContext) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        ctx.cancel_signal = signum
        ctx.cancel.set()
        raise RunCancelled(signal.Signals(signum).name)

    return handler


#: runpy's and this module's files (runpy is frozen in Python 3.11+: ``<frozen runpy>``).
_OWN_FILES = {os.path.abspath(runpy.__file__), os.path.abspath(__file__), "<frozen runpy>"}


def _ours(filename: str) -> bool:
    return filename in _OWN_FILES or os.path.abspath(filename) in _OWN_FILES


def _script_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without its leading frames of runpy and this module."""
    while tb is not None and _ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def failure(exc: BaseException) -> Ending:
    """The ending of a script that raised ``exc`` (the traceback trimmed to the script's)."""
    tb = _script_frames(exc.__traceback__)
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    where = None
    frames = traceback.extract_tb(tb) if tb is not None else []
    if frames:
        last = frames[-1]
        where = f'File "{last.filename}", line {last.lineno}, in {last.name}'
        if last.line:
            where += f": {last.line.strip()}"
    return Ending(
        "failed",
        error_type=type(exc).__name__,
        message=str(exc) or None,
        traceback=text,
        where=where,
    )


def exit_ending(exc: SystemExit, target: ScriptTarget) -> Ending:
    """The ending of ``sys.exit(code)``: completed for ``None``/0, else failed."""
    code = exc.code
    if code is None or code == 0:
        return Ending("completed")
    if isinstance(code, int):
        message = f"the script {target.describe()} exited with status {code}"
        return Ending("failed", error_type="SystemExit", message=message, exit_code=code)
    # sys.exit("message"): Python prints the message and exits with status 1
    print(code, file=sys.stderr, flush=True)
    return Ending("failed", error_type="SystemExit", message=str(code), exit_code=1)


def execute(
    ctx: RunContext,
    target: ScriptTarget,
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    patches: Sequence[Callable[[], Callable[[], None]]] = (),
) -> Ending:
    """Run ``target`` as ``__main__`` with ``argv`` after it (see the module docstring);
    ``cwd``: the working directory while it runs (default: this process's)."""
    saved_argv, saved_path, saved_cwd = sys.argv, list(sys.path), os.getcwd()
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    if cwd is not None:
        os.chdir(cwd)
    if target.path is not None:
        sys.argv = [str(target.path), *argv]
        sys.path.insert(0, str(target.path.parent))  # as `python path/to/train.py` does
    else:
        sys.argv = [str(target.module), *argv]  # run_module puts the module's file first
    if target.import_root is not None:
        sys.path.insert(0, str(target.import_root))
    ending: Ending
    try:
        if ctx.cancel.is_set():  # a signal or a stop arrived before we got here
            raise RunCancelled(ctx.stop_reason)
        for signum in previous:
            signal.signal(signum, _cancel_handler(ctx))
        undo: list[Callable[[], None]] = []
        try:
            for install in patches:
                undo.append(install())
            _run(target)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            while undo:
                undo.pop()()
        ending = Ending("completed")
    except RunCancelled as exc:
        ending = Ending("cancelled", reason=str(exc) or ctx.stop_reason)
    except SystemExit as exc:
        ending = exit_ending(exc, target)
    except Exception as exc:  # noqa: BLE001 - the script's crash becomes run_failed
        ending = failure(exc)
        sys.stderr.write(ending.traceback or "")  # as Python would print it: the run's log
        sys.stderr.flush()
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return ending


def _run(target: ScriptTarget) -> Any:
    if target.path is not None:
        return runpy.run_path(str(target.path), run_name="__main__")
    assert target.module is not None
    return runpy.run_module(target.module, run_name="__main__", alter_sys=True)


__all__ = ["Ending", "RunCancelled", "ScriptTarget", "execute", "exit_ending", "failure"]
