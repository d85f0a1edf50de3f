"""Where an upstream script's outputs go: the run directory's layout, not ``runs/<run_name>``.

CleanRL scripts write TensorBoard events to ``SummaryWriter(f"runs/{run_name}")`` and, with
``--save-model``, their model to ``runs/{run_name}/{exp_name}.cleanrl_model``, both relative
to the working directory (the run directory under the worker). While such a script runs,
:class:`OutputRedirect` maps those relative paths onto the config's layout:

- a ``SummaryWriter`` log dir ``runs/<rest>`` becomes ``<tensorboard_dir>/<rest>``;
- a ``torch.save`` / ``torch.load`` path ``runs/<run_name>/<file>.cleanrl_model`` becomes
  ``checkpoints/<file>.cleanrl_model`` (``load`` too, so the script's own evaluation after
  saving finds the file), where the worker reports checkpoints from.

Scripts that write their model with ``open`` instead (the JAX ones, through flax's
serialisation) rely on ``SummaryWriter`` having made ``runs/<run_name>/``: the patched
writer still makes that directory, the script writes its model there and evaluates it from
there, and when the script ends :meth:`OutputRedirect.collect_models` moves such a file
written during the run into ``checkpoints/`` (unless one of that name is there already) and
removes the directories under ``runs/`` left empty.

Any other path, and any absolute path, is left alone. :meth:`OutputRedirect.install` returns
the function that restores the originals (and collects those models).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import time
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any

MODEL_SUFFIX = ".cleanrl_model"


class OutputRedirect:
    """Maps an upstream script's relative output paths into the run directory's layout."""

    def __init__(self, run_dir: Path, tensorboard_dir: str, checkpoint_dir: str = "checkpoints"):
        self.run_dir = Path(run_dir)
        self.tensorboard_dir = self.run_dir / tensorboard_dir
        self.checkpoint_dir = self.run_dir / checkpoint_dir
        self.runs_dir = self.run_dir / "runs"

    @staticmethod
    def _runs_parts(path: Any) -> tuple[str, ...] | None:
        if not isinstance(path, (str, os.PathLike)):
            return None
        parts = PurePath(os.fspath(path)).parts
        if not parts or PurePath(os.fspath(path)).is_absolute() or parts[0] != "runs":
            return None
        return tuple(parts[1:])

    def log_dir(self, log_dir: Any) -> Any:
        """Where a ``SummaryWriter(log_dir)`` writes."""
        rest = self._runs_parts(log_dir)
        if not rest:
            return log_dir
        return str(self.tensorboard_dir.joinpath(*rest))

    def model_path(self, path: Any) -> Any:
        """Where ``torch.save(obj, path)`` / ``torch.load(path)`` go."""
        rest = self._runs_parts(path)
        if not rest or not str(rest[-1]).endswith(MODEL_SUFFIX):
            return path
        return str(self.checkpoint_dir / rest[-1])

    def collect_models(self, since: float) -> list[Path]:
        """Move ``runs/**/*.cleanrl_model`` files modified at or after ``since`` (a
        ``time.time()``) into the checkpoint directory, then remove the directories under
        ``runs/`` left empty (``runs/`` too); returns where the models went."""
        moved = []
        for found in sorted(self.runs_dir.glob(f"**/*{MODEL_SUFFIX}")):
            target = self.checkpoint_dir / found.name
            if found.stat().st_mtime < since or target.exists():
                continue
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            moved.append(Path(found.replace(target)))
        if self.runs_dir.is_dir():
            for directory in sorted(self.runs_dir.glob("**/"), key=lambda p: -len(p.parts)):
                if not any(directory.iterdir()):
                    directory.rmdir()
        return moved

    def install(self) -> Callable[[], None]:
        """Patch ``SummaryWriter``, ``torch.save`` and ``torch.load`` (those installed)."""
        started = time.time() - 1  # file times may be coarser than the clock

        def collect() -> None:
            self.collect_models(started)

        undo: list[Callable[[], None]] = [collect]
        if importlib.util.find_spec("torch") is None:
            return collect
        import torch  # optional dependency

        save, load = torch.save, torch.load

        @functools.wraps(save)
        def patched_save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
            target = self.model_path(f)
            if target is not f:
                self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            return save(obj, target, *args, **kwargs)

        @functools.wraps(load)
        def patched_load(f: Any, *args: Any, **kwargs: Any) -> Any:
            return load(self.model_path(f), *args, **kwargs)

        torch.save, torch.load = patched_save, patched_load  # type: ignore[assignment]

        def restore_torch() -> None:
            torch.save, torch.load = save, load  # type: ignore[assignment]

        undo.append(restore_torch)
        if importlib.util.find_spec("tensorboard") is not None:
            from torch.utils.tensorboard import SummaryWriter  # optional dependency (tensorboard)

            init = SummaryWriter.__init__
            redirect = self

            @functools.wraps(init)
            def patched_init(writer: Any, log_dir: Any = None, *args: Any, **kwargs: Any) -> None:
                rest = redirect._runs_parts(log_dir)
                if rest:  # the script may write more there, as the JAX ones do their model
                    redirect.runs_dir.joinpath(*rest).mkdir(parents=True, exist_ok=True)
                init(writer, redirect.log_dir(log_dir), *args, **kwargs)

            SummaryWriter.__init__ = patched_init  # type: ignore[method-assign]

            def restore_writer() -> None:
                SummaryWriter.__init__ = init  # type: ignore[method-assign]

            undo.append(restore_writer)

        def restore() -> None:
            while undo:
                undo.pop()()

        return restore


__all__ = ["MODEL_SUFFIX", "OutputRedirect"]
