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
    """What grouping reads of a run: a :class:`~mosaic_sdk.runner.storage.records.RunRecord`
    (as :meth:`RunStore.get_run <mosaic_sdk.runner.storage.store.RunStore.get_run>` returns
    it) is one."""

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
    """Group ``runs`` (mappings with ``run_id``, ``worker`` and ``config``, as
    :meth:`RunStore.get_run <mosaic_sdk.runner.storage.store.RunStore.get_run>` returns them) by
    worker and config apart from ``ignore``; groups in the order their first run comes, runs in the
    order given. Each group's label names the worker and the params whose values differ
    between the groups. ``ignore`` keys are left out at any depth (by default ``seed`` and
    ``run_id``: the config a run stores holds its own id)."""
    skip = tuple(ignore)
    order: list[str] = []
    members: dict[str, list[ConfiguredRun]] = {}
    params_of: dict[str, tuple[str, dict[str, JsonValue]]] = {}
    for run in runs:
        worker = str(run["worker"])
        params = flatten(run.get("config"), skip)
        key = group_key(worker, params)
        if key not in members:
            order.append(key)
            members[key] = []
            params_of[key] = (worker, params)
        members[key].append(run)
    differing = _differing_keys([params_of[k][1] for k in order])
    several_workers = len({params_of[k][0] for k in order}) > 1
    groups = []
    for key in order:
        worker, params = params_of[key]
        shown = [f"{k}={_short(params[k])}" for k in differing if k in params]
        if not shown and len(order) > 1 and not several_workers:
            shown = ["(no config)"]
        label = " ".join([worker, ", ".join(shown)]).strip()
        runs_here = members[key]
        groups.append(
            SeedGroup(
                worker=worker,
                params=params,
                run_ids=tuple(str(r["run_id"]) for r in runs_here),
                label=label,
                seeds=tuple((r.get("config") or {}).get("seed") for r in runs_here),
            )
        )
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
