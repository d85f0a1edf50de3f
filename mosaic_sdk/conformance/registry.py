"""The registry of conformance checks: one generator of checks behind every front door.

A check is a function of a :class:`~mosaic_sdk.conformance.subject.WorkerSubject` that returns
(optionally a one-line note) when the worker conforms, raises
:class:`~mosaic_sdk.conformance.results.CheckFailed` when it does not, and
:class:`~mosaic_sdk.conformance.results.CheckSkipped` when the check does not apply. It is
registered with :func:`conformance_check`, which gives it a stable name (``family.what``), a
one-line description, a hint that says how to fix a failure, the recorded runs it reads, and
gates: functions that return a skip reason when the check does not apply to a worker (for
example when it does not claim FastLane).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from mosaic_sdk.conformance.subject import WorkerSubject

Gate = Callable[["WorkerSubject"], "str | None"]
CheckFunction = Callable[["WorkerSubject"], "str | None"]

#: Families in report order.
FAMILIES: tuple[str, ...] = (
    "discovery",
    "description",
    "config",
    "cli",
    "telemetry",
    "determinism",
    "stop",
    "checkpoint",
    "fastlane",
    "env",
    "packaging",
    "hygiene",
)

#: Modules that define checks; imported on first use of the registry.
CHECK_MODULES: tuple[str, ...] = (
    "mosaic_sdk.conformance.checks.discovery",
    "mosaic_sdk.conformance.checks.description",
    "mosaic_sdk.conformance.checks.config",
    "mosaic_sdk.conformance.checks.cli",
    "mosaic_sdk.conformance.checks.telemetry",
    "mosaic_sdk.conformance.checks.stop",
    "mosaic_sdk.conformance.checks.checkpoint",
    "mosaic_sdk.conformance.checks.fastlane",
    "mosaic_sdk.conformance.checks.environments",
    "mosaic_sdk.conformance.checks.packaging",
    "mosaic_sdk.conformance.checks.hygiene",
)


@dataclass(frozen=True)
class Check:
    """One registered check (see the module docstring)."""

    name: str
    description: str
    hint: str
    function: CheckFunction
    runs: tuple[str, ...] = ()
    gates: tuple[Gate, ...] = ()
    slow: bool = False
    needs_handle: bool = True
    order: int = field(default=0, compare=False)

    @property
    def family(self) -> str:
        return self.name.partition(".")[0]

    def skip_reason(self, subject: WorkerSubject) -> str | None:
        """Why the check does not apply to this worker, or None when it does."""
        for gate in self.gates:
            reason = gate(subject)
            if reason:
                return reason
        return None


_CHECKS: dict[str, Check] = {}
_loaded = False


def conformance_check(
    name: str,
    *,
    description: str,
    hint: str,
    runs: Iterable[str] = (),
    gates: Iterable[Gate] = (),
    slow: bool = False,
    needs_handle: bool = True,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as the check ``name`` (``family.what``)."""
    family, dot, what = name.partition(".")
    if not dot or not what or family not in FAMILIES:
        raise ValueError(
            f"check name {name!r} must be '<family>.<what>' with a family of {FAMILIES}"
        )

    def register(function: CheckFunction) -> CheckFunction:
        if name in _CHECKS and _CHECKS[name].function is not function:
            raise ValueError(f"two conformance checks are named {name!r}")
        _CHECKS[name] = Check(
            name=name,
            description=description,
            hint=hint,
            function=function,
            runs=tuple(runs),
            gates=tuple(gates),
            slow=slow,
            needs_handle=needs_handle,
            order=len(_CHECKS),
        )
        return function

    return register


def all_checks() -> list[Check]:
    """Every registered check, by family then registration order."""
    global _loaded
    if not _loaded:
        for module in CHECK_MODULES:
            importlib.import_module(module)
        _loaded = True
    return sorted(_CHECKS.values(), key=lambda c: (FAMILIES.index(c.family), c.order))


def get_check(name: str) -> Check:
    """The check called ``name``; ``KeyError`` with the known names otherwise."""
    checks = {c.name: c for c in all_checks()}
    if name not in checks:
        raise KeyError(f"no conformance check named {name!r}; known: {', '.join(checks)}")
    return checks[name]


# --- selection (-k) -----------------------------------------------------------------------


def _term_matches(term: str, check: Check) -> bool:
    return term.lower() in check.name.lower()


def matches_keyword(expression: str, check: Check) -> bool:
    """Whether ``check`` is selected by a ``-k`` expression.

    The expression is a subset of pytest's: terms matched as case-insensitive substrings of
    the check name, combined with ``not``, ``and``, ``or`` (``or`` binds loosest), without
    parentheses. ``"telemetry and not heartbeat"`` selects the telemetry checks but one.
    """
    expression = expression.strip()
    if not expression:
        return True
    for alternative in _split_words(expression, "or"):
        if all(_conjunct(part, check) for part in _split_words(alternative, "and")):
            return True
    return False


def _split_words(text: str, word: str) -> list[str]:
    parts: list[list[str]] = [[]]
    for token in text.split():
        if token == word:
            parts.append([])
        else:
            parts[-1].append(token)
    if any(not p for p in parts):
        raise ValueError(f"bad -k expression {text!r}: {word!r} needs a term on each side")
    return [" ".join(p) for p in parts]


def _conjunct(part: str, check: Check) -> bool:
    tokens = part.split()
    negate = False
    while tokens and tokens[0] == "not":
        negate = not negate
        tokens = tokens[1:]
    if len(tokens) != 1:
        raise ValueError(f"bad -k term {part!r}: use 'name', 'not name', 'a and b', 'a or b'")
    found = _term_matches(tokens[0], check)
    return found != negate


def select_checks(keyword: str | None = None, names: Iterable[str] | None = None) -> list[Check]:
    """The checks selected by a ``-k`` expression and/or an explicit list of names."""
    checks = all_checks()
    if names is not None:
        wanted = list(names)
        for name in wanted:
            get_check(name)
        checks = [c for c in checks if c.name in wanted]
    if keyword:
        checks = [c for c in checks if matches_keyword(keyword, c)]
    return checks


def describe_checks() -> list[dict[str, Any]]:
    """Name, family, description and hint of every check (for docs and ``--list``)."""
    return [
        {
            "name": c.name,
            "family": c.family,
            "description": c.description,
            "hint": c.hint,
            "runs": list(c.runs),
            "slow": c.slow,
        }
        for c in all_checks()
    ]


__all__ = [
    "CHECK_MODULES",
    "FAMILIES",
    "Check",
    "all_checks",
    "conformance_check",
    "describe_checks",
    "get_check",
    "matches_keyword",
    "select_checks",
]
