"""The registry of conformance checks: one generator of checks behind every front door."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# PLATFORM with SDK and LEVELS: the level names the check modules import from here
from mosaic_sdk.conformance.subject import LEVELS, PLATFORM, SDK, WorkerSubject  # noqa: F401

Gate = Callable[["WorkerSubject"], "str | None"]
CheckFunction = Callable[..., "str | None"]


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
    "control",
    "fastlane",
    "agents",
    "env",
    "packaging",
    "hygiene",
)


def check_level(level: str) -> str:
    """``level`` when it is one of :data:`LEVELS`; ``ValueError`` naming them otherwise."""
    if level not in LEVELS:
        raise ValueError(f"unknown conformance level {level!r}; use one of: {', '.join(LEVELS)}")
    return level


@dataclass(frozen=True)
class Check:
    """One registered check: ``hints`` and ``level_runs`` hold the hint and the recorded runs
    per level of ``levels``, the levels it belongs to."""

    name: str
    description: str
    hints: Mapping[str, str]
    function: CheckFunction
    level_runs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gates: tuple[Gate, ...] = ()
    slow: bool = False
    needs_handle: bool = True
    levels: tuple[str, ...] = LEVELS
    takes_level: bool = False
    order: int = field(default=0, compare=False)

    @property
    def family(self) -> str:
        return self.name.partition(".")[0]

    @property
    def hint(self) -> str:
        """The hint of the ``sdk`` rule (of the check's strictest level)."""
        return self.hint_for(SDK)

    @property
    def runs(self) -> tuple[str, ...]:
        """Every run the check reads at any level."""
        return tuple(dict.fromkeys(k for level in LEVELS for k in self.runs_for(level)))

    def rule_level(self, level: str) -> str:
        """The level whose rule judges the check at ``level``: its strictest when outside."""
        return level if level in self.levels else self.levels[-1]

    def in_level(self, level: str) -> bool:
        return level in self.levels

    def hint_for(self, level: str) -> str:
        return self.hints[self.rule_level(level)]

    def runs_for(self, level: str) -> tuple[str, ...]:
        return self.level_runs.get(self.rule_level(level), ())

    def judge(self, subject: WorkerSubject, level: str) -> str | None:
        """Call the check function by the rule of ``level`` (see :meth:`rule_level`)."""
        if self.takes_level:
            return self.function(subject, self.rule_level(level))
        return self.function(subject)

    def skip_reason(self, subject: WorkerSubject) -> str | None:
        """Why the check does not apply to this worker, or None when it does."""
        return next((reason for gate in self.gates if (reason := gate(subject))), None)


_CHECKS: dict[str, Check] = {}
_loaded = False


def _per_level(value: Any, levels: tuple[str, ...], what: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(levels))
        if unknown:
            raise ValueError(f"{what} given for level(s) {unknown} the check does not belong to")
        missing = [lv for lv in levels if lv not in value]
        if missing:
            raise ValueError(f"{what} missing for level(s) {missing}")
        return dict(value)
    return dict.fromkeys(levels, value)


def conformance_check(
    name: str,
    *,
    description: str,
    hint: str | Mapping[str, str],
    runs: Iterable[str] | Mapping[str, Iterable[str]] = (),
    gates: Iterable[Gate] = (),
    slow: bool = False,
    needs_handle: bool = True,
    levels: Iterable[str] = LEVELS,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as the check ``name`` (``family.what``) of ``levels``.

    ``hint`` and ``runs`` may map each of those levels to its own value. A function with two
    parameters is called as ``f(subject, level)`` with the level whose rule applies.
    """
    family, dot, what = name.partition(".")
    if not dot or not what or family not in FAMILIES:
        raise ValueError(
            f"check name {name!r} must be '<family>.<what>' with a family of {FAMILIES}"
        )
    own = tuple(lv for lv in LEVELS if lv in set(levels))
    for level in levels:
        check_level(level)
    if not own:
        raise ValueError(f"check {name!r} belongs to no level; give levels from {LEVELS}")
    hints = _per_level(hint, own, "hint")
    level_runs = {k: tuple(v) for k, v in _per_level(runs, own, "runs").items()}

    def register(function: CheckFunction) -> CheckFunction:
        if name in _CHECKS and _CHECKS[name].function is not function:
            raise ValueError(f"two conformance checks are named {name!r}")
        _CHECKS[name] = Check(
            name=name,
            description=description,
            hints=hints,
            function=function,
            level_runs=level_runs,
            gates=tuple(gates),
            slow=slow,
            needs_handle=needs_handle,
            levels=own,
            takes_level=len(inspect.signature(function).parameters) >= 2,
            order=len(_CHECKS),
        )
        return function

    return register


def all_checks() -> list[Check]:
    """Every registered check, by family then registration order."""
    global _loaded
    if not _loaded:  # every module of the checks package defines checks: import them all
        package = importlib.import_module("mosaic_sdk.conformance.checks")
        for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
        _loaded = True
    return sorted(_CHECKS.values(), key=lambda c: (FAMILIES.index(c.family), c.order))


def get_check(name: str) -> Check:
    """The check called ``name``; ``KeyError`` with the known names otherwise."""
    checks = {c.name: c for c in all_checks()}
    if name not in checks:
        raise KeyError(f"no conformance check named {name!r}; known: {', '.join(checks)}")
    return checks[name]


# --- selection (-k) -----------------------------------------------------------------------


def matches_keyword(expression: str, check: Check) -> bool:
    """Whether ``check`` is selected by a ``-k`` expression: pytest's without parentheses,
    terms matched as case-insensitive substrings of the check name (``"telemetry and not
    heartbeat"``)."""
    expression = expression.strip()
    return not expression or any(
        all(_conjunct(part, check) for part in _split_words(alternative, "and"))
        for alternative in _split_words(expression, "or")
    )


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
    return (tokens[0].lower() in check.name.lower()) != negate


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


def check_expected(expected: Mapping[str, str], ids: Iterable[str] = ()) -> None:
    """``KeyError`` when a key of ``expected`` is neither a check name nor one of ``ids``."""
    known = {c.name for c in all_checks()}
    unknown = sorted(set(expected) - known - set(ids))
    if unknown:
        raise KeyError(
            f"expected failure for unknown check(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}"
        )


def describe_checks() -> list[dict[str, Any]]:
    """Name, family, levels, description, hints (``hint``: the ``sdk`` one) and runs of every
    check (for docs and ``--list``)."""
    return [
        {
            "name": c.name,
            "family": c.family,
            "levels": list(c.levels),
            "description": c.description,
            "hint": c.hint,
            "hints": {level: c.hint_for(level) for level in c.levels},
            "runs": list(c.runs),
            "slow": c.slow,
        }
        for c in all_checks()
    ]
