"""Several workers of one name: which one the bare name means, and how to reach the others."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TypedDict, cast

from mosaic_sdk.plugins.entry_points import csv_names

#: The environment variable of the user's choice: ``NAME=DISTRIBUTION[,...]``.
PREFER_ENV = "MOSAIC_PREFER_WORKER"
#: Between a worker's name and its distribution in an address: ``cleanrl@mosaic-worker-cleanrl``.
ADDRESS_SEPARATOR = "@"
#: The distribution label of workers added without a distribution (``extra=`` in tests).
NO_DISTRIBUTION = "unknown"

# The rules, as reported in ``WorkerChoice.rule``.
RULE_PREFERENCE = "preference"
RULE_ONLY_ONE_LOADS = "only_one_loads"
RULE_SDK_NATIVE = "sdk_native"
RULE_UNDECIDED = "undecided"


def canonical_distribution(distribution: str | None) -> str:
    """The PEP 503 form of ``distribution``: ``Mosaic_Worker.X`` becomes ``mosaic-worker-x``."""
    if not distribution:
        return NO_DISTRIBUTION
    return re.sub(r"[-_.]+", "-", distribution).lower()


def address(name: str, distribution: str | None) -> str:
    """The address of the worker ``name`` from ``distribution``: ``name@distribution``."""
    return f"{name}{ADDRESS_SEPARATOR}{canonical_distribution(distribution)}"


def split_address(text: str) -> tuple[str, str | None]:
    """``"name@dist"`` -> ``("name", "dist")`` (canonical); ``"name"`` -> ``("name", None)``."""
    name, sep, dist = text.partition(ADDRESS_SEPARATOR)
    return (name, canonical_distribution(dist)) if sep else (name, None)


def read_preferences(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``MOSAIC_PREFER_WORKER`` as ``{name: canonical distribution}``, and one line per entry
    that is not ``NAME=DISTRIBUTION``."""
    preferences: dict[str, str] = {}
    problems: list[str] = []
    for item in csv_names(environ.get(PREFER_ENV)):
        name, sep, dist = item.partition("=")
        if not sep or not name.strip() or not dist.strip():
            problems.append(
                f"{PREFER_ENV} entry {item!r} is not NAME=DISTRIBUTION "
                f"(e.g. {PREFER_ENV}=cleanrl=mosaic-worker-cleanrl); ignored"
            )
            continue
        preferences[name.strip()] = canonical_distribution(dist.strip())
    return preferences, problems


class ContenderDict(TypedDict):
    """:meth:`Contender.to_dict`."""

    address: str
    distribution: str | None
    entry_point: str
    style: str | None
    ok: bool
    error: str | None


class ChoiceDict(TypedDict):
    """:meth:`WorkerChoice.to_dict`: a shared name's choice in ``mosaic workers list --json``."""

    name: str
    chosen: str | None
    rule: str
    reason: str
    notes: list[str]
    contenders: list[ContenderDict]
    how_to_choose: str


@dataclass(frozen=True)
class Contender:
    """One entry point of a shared name, after loading it."""

    address: str
    distribution: str | None
    entry_point: str
    #: ``"plugin"`` (SDK-native) or ``"upstream"``; ``None`` when it did not load.
    style: str | None
    #: Why it did not load (``None`` when it did).
    error: str | None = None

    @property
    def loads(self) -> bool:
        return self.error is None

    def to_dict(self) -> ContenderDict:
        return cast(ContenderDict, {**asdict(self), "ok": self.loads})


@dataclass(frozen=True)
class WorkerChoice:
    """Which contender the bare ``name`` means (``chosen``, an address) and why."""

    name: str
    contenders: tuple[Contender, ...]
    chosen: str | None
    rule: str
    reason: str
    notes: tuple[str, ...] = field(default=())

    def others(self) -> list[Contender]:
        return [c for c in self.contenders if c.address != self.chosen]

    def how_to_choose(self) -> str:
        dists = ", ".join(canonical_distribution(c.distribution) for c in self.contenders)
        reachable = ", ".join(c.address for c in self.contenders if c.loads)
        text = f"set {PREFER_ENV}={self.name}=DISTRIBUTION (one of: {dists})"
        if reachable:
            text += f", or name one by its address ({reachable})"
        return text

    def to_dict(self) -> ChoiceDict:
        return {
            "name": self.name,
            "chosen": self.chosen,
            "rule": self.rule,
            "reason": self.reason,
            "notes": list(self.notes),
            "contenders": [c.to_dict() for c in self.contenders],
            "how_to_choose": self.how_to_choose(),
        }


def choose(
    name: str,
    contenders: Sequence[Contender],
    preferred: str | None = None,
    notes: Sequence[str] = (),
) -> WorkerChoice:
    """The contender ``name`` means: ``preferred`` (the distribution ``MOSAIC_PREFER_WORKER``
    names), else the only one that loads, else the only SDK-native one; else undecided."""
    found = tuple(contenders)
    extra = list(notes)

    def decided(chosen: Contender, rule: str, reason: str) -> WorkerChoice:
        return WorkerChoice(name, found, chosen.address, rule, reason, tuple(extra))

    if preferred is not None:
        match = [c for c in found if canonical_distribution(c.distribution) == preferred]
        if match:
            return decided(match[0], RULE_PREFERENCE, f"{PREFER_ENV}={name}={preferred}")
        extra.append(
            f"{PREFER_ENV} names {preferred!r}, which provides no worker {name!r} "
            f"(contenders: {', '.join(c.address for c in found)}); ignored"
        )
    loaded = [c for c in found if c.loads]
    if len(loaded) == 1:
        return decided(loaded[0], RULE_ONLY_ONE_LOADS, "the only one that loads")
    native = [c for c in loaded if c.style == "plugin"]
    if len(native) == 1:
        return decided(
            native[0], RULE_SDK_NATIVE, "an SDK-native worker wins over upstream-style factories"
        )
    if not loaded:
        why = "none of them loads"
    elif native:
        why = f"{len(native)} of them are SDK-native workers"
    else:
        why = f"{len(loaded)} of them are upstream-style factories"
    return WorkerChoice(name, found, None, RULE_UNDECIDED, why, tuple(extra))
