"""The gates that several check families share."""

from __future__ import annotations

from mosaic_sdk.conformance.registry import Gate
from mosaic_sdk.conformance.subject import WorkerSubject, fastlane_available


def claims(capability: str) -> Gate:
    """Gate: the worker declares ``capability`` (a boolean of ``WorkerCapabilities``)."""

    def gate(subject: WorkerSubject) -> str | None:
        if subject.handle is None:
            return None  # the check itself reports that the worker cannot be loaded
        try:
            claimed = bool(subject.capability(capability))
        except Exception as exc:  # noqa: BLE001 - the description checks report this
            return f"cannot tell whether it claims {capability}: {exc}"
        return None if claimed else f"the worker does not claim {capability}"

    gate.__name__ = f"claims_{capability}"
    return gate


def fastlane_in_sdk(subject: WorkerSubject) -> str | None:
    """Gate: this SDK ships ``mosaic_sdk.fastlane``."""
    return None if fastlane_available() else "this SDK has no mosaic_sdk.fastlane package"


def step_numbering(subject: WorkerSubject) -> str:
    """How the worker numbers the step lines of a multi-agent run, as its capabilities declare:
    ``"per_agent"`` (each agent's own steps; the default) or ``"per_ply"`` (an episode's plies
    across its agents, a turn-based game's move number)."""
    try:
        declared = subject.capability("step_numbering")
    except AttributeError:  # a platform-shaped description without the field
        return "per_agent"
    return "per_ply" if declared == "per_ply" else "per_agent"
