"""TensorBoard event files read back the way TensorBoard's classic reader reads them."""

from __future__ import annotations

from pathlib import Path


def tensorboard_scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of every event file under ``directory``: tag -> [(step, value), ...]."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, list[tuple[int, float]]] = {}
    for events in sorted(directory.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events.parent))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            out.setdefault(tag, []).extend((s.step, s.value) for s in acc.Scalars(tag))
    return out
