"""Run a function on a module as soon as it is imported (at once if it already is).

:func:`when_imported` lets the instrumentation patch ``torch.utils.tensorboard``'s and
``tensorboardX``'s writers without importing torch itself: a script that never imports them
never pays for them. A finder first on ``sys.meta_path`` finds the module through the other
finders and wraps its loader, so the function runs right after the module's code, before the
``import`` statement that asked for it returns.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]


class _CallingLoader(Loader):
    """The module's own loader, then the callbacks (other attributes: the loader's own)."""

    def __init__(self, loader: Any, callbacks: list[Callback]) -> None:
        self.loader = loader
        self.callbacks = callbacks

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        for callback in self.callbacks:
            callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


class _AfterImport(MetaPathFinder):
    """The one finder of this process: module name -> the callbacks waiting for it."""

    def __init__(self) -> None:
        self.waiting: dict[str, list[Callback]] = {}
        self.lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        with self.lock:
            callbacks = self.waiting.pop(fullname, None)
        if callbacks is None:
            return None
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        if spec is None:  # not found: the import fails as it would; a later one may not
            with self.lock:
                self.waiting.setdefault(fullname, []).extend(callbacks)
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # a namespace package: no code to run after
        spec.loader = _CallingLoader(spec.loader, callbacks)
        return spec


_finder = _AfterImport()


def when_imported(name: str, callback: Callback) -> Callable[[], None]:
    """Call ``callback(module)`` once module ``name`` is imported: now when it already is,
    else right after its code runs. Returns the function that cancels a call still waiting."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return lambda: None
    with _finder.lock:
        _finder.waiting.setdefault(name, []).append(callback)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)

    def cancel() -> None:
        with _finder.lock:
            waiting = _finder.waiting.get(name)
            if waiting is not None and callback in waiting:
                waiting.remove(callback)
                if not waiting:
                    del _finder.waiting[name]

    return cancel


__all__ = ["Callback", "when_imported"]
