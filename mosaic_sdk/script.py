"""What a script run by ``mosaic run path/to/train.py`` may tell the SDK: optional, one line.

A script needs no line of MOSAIC to run as a worker (see ``docs/guides/bring-your-own-code.md``).
The only thing the SDK cannot find out by itself is how to save the script's model, so the
``checkpoint`` control command is refused with a clear reason unless the script registers a
function that does it::

    import mosaic_sdk.script

    def save() -> str:
        torch.save(agent.state_dict(), "agent.pt")
        return "agent.pt"

    mosaic_sdk.script.on_checkpoint(save)

``save`` runs in the thread that steps the envs, at its next step (a safe point: between two
``env.step`` calls), and returns the path it wrote. Outside ``mosaic run`` the call does
nothing, so the script still runs as ``python train.py``. Importing this module costs nothing
(it imports no other part of the SDK).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

#: What ``save`` may return: the path of the checkpoint it wrote.
SaveFunction = Callable[[], "str | os.PathLike[str]"]

_lock = threading.Lock()
_save: SaveFunction | None = None
_listeners: list[Callable[[SaveFunction], None]] = []


def on_checkpoint(save: SaveFunction) -> None:
    """Register ``save`` as the script's checkpoint: run at the next env step when a
    ``checkpoint`` command arrives (``mosaic control RUN checkpoint``, watch's button), it
    saves the model and returns the path it wrote. A later call replaces the function."""
    global _save
    if not callable(save):
        raise TypeError(
            f"on_checkpoint() takes a function that saves and returns a path, got {save!r}"
        )
    with _lock:
        _save = save
        listeners = list(_listeners)
    for listener in listeners:
        listener(save)


def checkpoint_function() -> SaveFunction | None:
    """The function the script registered, or None."""
    return _save


def listen(listener: Callable[[SaveFunction], None]) -> Callable[[], None]:
    """Call ``listener(save)`` with the function registered so far, if any, and with each one
    registered from now on (how the ``script`` worker hands it to its control channel);
    returns the function that stops listening."""
    with _lock:
        _listeners.append(listener)
        current = _save
    if current is not None:
        listener(current)

    def stop() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return stop


__all__ = ["SaveFunction", "checkpoint_function", "listen", "on_checkpoint"]
