"""What one conformance check reports: :class:`CheckResult` and its verdicts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PASSED = "passed"
FAILED = "failed"
SKIPPED = "skipped"
ERROR = "error"
XFAILED = "xfailed"
XPASSED = "xpassed"
#: A check outside the level in force that would have failed: reported with its hint, never
#: a failure.
ADVISORY = "advisory"

#: Every verdict, in the order a report lists their counts.
VERDICTS: tuple[str, ...] = (PASSED, FAILED, ERROR, XFAILED, XPASSED, ADVISORY, SKIPPED)

#: Verdicts that do not make a worker non-conformant (an unexpected pass of an expected
#: failure does: the expectation is stale).
OK_VERDICTS: frozenset[str] = frozenset({PASSED, SKIPPED, XFAILED, ADVISORY})


class CheckFailed(Exception):
    """Raised by a check function: the worker does not honour this part of the contract."""

    def __init__(self, reason: str, details: list[str] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = list(details or [])


class CheckSkipped(Exception):
    """Raised by a check function: the check does not apply (or cannot be run) here."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class CheckResult:
    """The outcome of one check on one worker: ``verdict`` (one of :data:`VERDICTS`),
    ``reason`` (one line), ``hint`` (how to fix a failure or an advisory), ``details`` (the
    evidence: offending lines, pids...), ``level`` (the level in force) and ``levels`` (those
    the check belongs to)."""

    worker: str
    name: str
    family: str
    description: str
    verdict: str
    duration: float
    reason: str = ""
    hint: str = ""
    details: list[str] = field(default_factory=list)
    level: str = "sdk"
    levels: list[str] = field(default_factory=lambda: ["platform", "sdk"])

    @property
    def ok(self) -> bool:
        """True for passed, skipped, expected failures and advisories."""
        return self.verdict in OK_VERDICTS

    @property
    def in_level(self) -> bool:
        """Whether the check belongs to the level in force (else it can only advise)."""
        return self.level in self.levels

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["in_level"] = self.in_level
        data["duration"] = round(self.duration, 4)
        return data
