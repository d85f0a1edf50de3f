"""Running workers as child processes: launch preparation, supervision, the SQLite store and
the live view behind ``mosaic run``, and the recorder of every run's output (``mosaic run``'s,
and each sweep trial's, Ray trials included).

The package is split along its seams:

- :mod:`mosaic_sdk.runner.supervision`: the worker process and its lifecycle (the config a
  user hands over, resolving a worker, launch, pre-flight, the process and its tree, stdin,
  signals, lines; control sessions' lifecycle);
- :mod:`mosaic_sdk.runner.recording`: from the worker's lines to stored rows and the plugins
  (:class:`~mosaic_sdk.runner.recording.recorder.RunRecorder`: ingest, batching, observers,
  the end-of-run decision);
- :mod:`mosaic_sdk.runner.storage`: the SQLite store (schema, typed records, rows, the writer
  thread, paths, run ids, owner-only files, the metrics read back, ``mosaic runs export``);
- :mod:`mosaic_sdk.runner.control`: a run's control protocol (relay, socket, client, keys);
- and, here, the front: :mod:`~mosaic_sdk.runner.supervisor` (``run_worker``), the live view
  (:mod:`~mosaic_sdk.runner.live`), and what the runner says to people
  (:mod:`~mosaic_sdk.runner.reporting`, :mod:`~mosaic_sdk.runner.printable`).

Every module keeps its old import path: ``mosaic_sdk.runner.store`` is
``mosaic_sdk.runner.storage.store`` (the same module object, see :data:`MOVED`), so
``from mosaic_sdk.runner.store import RunStore`` and ``import mosaic_sdk.runner.observers``
work as before.

``run_worker`` and ``RunResult`` are loaded on first use, so that importing
``mosaic_sdk.runner.supervision.launch`` (the conformance suite does) does not pull in the
store::

    from mosaic_sdk.runner import run_worker

    result = run_worker("example", {"episodes": 2}, store="runs.sqlite")
    print(result.status, result.counts)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

from mosaic_sdk.lazy_exports import LazyExports

#: The modules that moved into a sub-package: old name (``mosaic_sdk.runner.NAME``) -> the
#: sub-package that holds it now.
MOVED: dict[str, str] = {
    **dict.fromkeys(
        ("store", "schema", "rows", "writer", "export", "paths", "ids", "private", "metrics"),
        "storage",
    ),
    **dict.fromkeys(
        (
            "process",
            "proctree",
            "lifecycle",
            "launch",
            "preflight",
            "signals",
            "stdin",
            "lines",
            "session_lifecycle",
            "session_launch",
            "config_input",
            "resolve",
        ),
        "supervision",
    ),
    **dict.fromkeys(
        ("control_client", "control_keys", "control_relay", "control_socket", "run_control"),
        "control",
    ),
    **dict.fromkeys(("recorder", "ingest", "batching", "observers", "outcome"), "recording"),
}


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``mosaic_sdk.runner.NAME`` of a moved module as the module at its new home
    (one module object under both names)."""

    prefix = __name__ + "."

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(self.prefix):
            return None
        home = MOVED.get(fullname[len(self.prefix) :])
        if home is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        name = spec.name[len(self.prefix) :]
        module = importlib.import_module(f"{self.prefix}{MOVED[name]}.{name}")
        spec.loader_state = module.__spec__  # the import system replaces it: put it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran at its new home already; it keeps the spec of its new home."""
        spec = module.__spec__
        if spec is not None and spec.loader is self:
            module.__spec__ = spec.loader_state


if not any(isinstance(f, _Moved) for f in sys.meta_path):
    sys.meta_path.append(_Moved())

_LAZY = LazyExports(
    __name__,
    {
        "run_worker": "mosaic_sdk.runner.supervisor",
        "RunResult": "mosaic_sdk.runner.supervisor",
        "RunSupervisor": "mosaic_sdk.runner.supervisor",
        "RunStore": "mosaic_sdk.runner.storage.store",
        "start_session": "mosaic_sdk.runner.supervision.session_launch",
    },
)
__getattr__ = _LAZY.get
__dir__ = _LAZY.dir

__all__ = _LAZY.all()
