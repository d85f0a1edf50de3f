"""Runs that differ only by seed: grouping them, so their curves become one mean and spread
(``mosaic runs plot --group-seeds``, or a sweep's trials)::

    from mosaic_sdk.plots import group_by_seed

    trials = [
        {"run_id": "t1", "worker": "cleanrl", "config": {"lr": 0.1, "seed": 1}},
        {"run_id": "t2", "worker": "cleanrl", "config": {"lr": 0.1, "seed": 2}},
        {"run_id": "t3", "worker": "cleanrl", "config": {"lr": 0.3, "seed": 1}},
    ]
    groups = group_by_seed(trials)
    assert [g.run_ids for g in groups] == [("t1", "t2"), ("t3",)]
    assert [g.label for g in groups] == ["cleanrl lr=0.1", "cleanrl lr=0.3"]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from mosaic_sdk.runner.storage.records import JsonObject, JsonValue

#: Config keys that differ between runs of one group by default.
DEFAULT_IGNORED: tuple[str, ...] = ("seed", "run_id")


class ConfiguredRun(TypedDict):
    """What grouping reads of a run (a stored ``RunRecord`` is one)."""

    run_id: str
    worker: str
    config: JsonObject | None


@dataclass(frozen=True)
class SeedGroup:
    """Runs of one worker and one config apart from the ignored keys."""

    worker: str
    params: dict[str, JsonValue]  # the config without the ignored keys, flattened (dotted keys)
    run_ids: tuple[str, ...]
    label: str  # the worker and the params that tell this group from the others
    seeds: tuple[JsonValue, ...]  # each run's ``seed`` (None when its config has none)

    @property
    def key(self) -> str:
        return group_key(self.worker, self.params)


def flatten(
    config: Mapping[str, JsonValue] | None, ignore: Iterable[str] = ()
) -> dict[str, JsonValue]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``, leaving out keys named in ``ignore`` at any
    depth. Lists stay values."""
    skip = set(ignore)
    out: dict[str, JsonValue] = {}

    def walk(prefix: str, value: JsonValue) -> None:
        if isinstance(value, Mapping) and (value or not prefix):
            for k, v in value.items():
                if str(k) not in skip:
                    walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = value

    walk("", dict(config or {}))
    return out


def group_key(worker: str, params: Mapping[str, JsonValue]) -> str:
    """A string equal for two runs exactly when their worker and params are equal."""
    return json.dumps([worker, params], sort_keys=True, default=repr)


def group_by_seed(
    runs: Iterable[ConfiguredRun], ignore: Iterable[str] = DEFAULT_IGNORED
) -> list[SeedGroup]:
    """Group ``runs`` by worker and config apart from ``ignore`` (keys at any depth), in the
    order their first run comes; a group's label names the worker and the params whose values
    differ between the groups."""
    skip = tuple(ignore)
    members: dict[str, list[ConfiguredRun]] = {}
    params_of: dict[str, tuple[str, dict[str, JsonValue]]] = {}
    for run in runs:
        worker = str(run["worker"])
        params = flatten(run.get("config"), skip)
        key = group_key(worker, params)
        params_of.setdefault(key, (worker, params))
        members.setdefault(key, []).append(run)
    differing = _differing_keys([params for _, params in params_of.values()])
    several_workers = len({worker for worker, _ in params_of.values()}) > 1
    groups = []
    for key, (worker, params) in params_of.items():
        shown = [f"{k}={_short(params[k])}" for k in differing if k in params]
        if not shown and len(params_of) > 1 and not several_workers:
            shown = ["(no config)"]
        label = " ".join([worker, ", ".join(shown)]).strip()
        runs_here = members[key]
        run_ids = tuple(str(r["run_id"]) for r in runs_here)
        seeds = tuple((r.get("config") or {}).get("seed") for r in runs_here)
        groups.append(SeedGroup(worker, params, run_ids, label, seeds))
    return groups


def _differing_keys(all_params: list[dict[str, JsonValue]]) -> list[str]:
    keys = sorted({k for p in all_params for k in p})
    missing = object()
    return [
        k
        for k in keys
        if len({json.dumps(p.get(k, missing), default=repr, sort_keys=True) for p in all_params})
        > 1
    ]


def _short(value: JsonValue, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["DEFAULT_IGNORED", "ConfiguredRun", "SeedGroup", "flatten", "group_by_seed", "group_key"]
