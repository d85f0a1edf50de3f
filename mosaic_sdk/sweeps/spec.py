"""A sweep spec: base config, search space, seeds, metric, scheduler, trials at once."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from mosaic_sdk.contract import ConfigError
from mosaic_sdk.sweeps.space import Space, is_number, parse_space, space_points

#: The episode fields a metric can be made of (any other name is a series the worker reports).
METRICS = {"return": "total_reward", "steps": "steps"}
#: How a metric's values (of the episodes, or the points of a series, in order) become one number.
REDUCES = {
    "last_mean": "the mean of the last N values",
    "best": "the best value (highest for max, lowest for min)",
    "mean": "the mean of all values",
    "auc": "the area under the curve (trapezoids over the step; episodes: 1, 2, 3...)",
}
#: How a sweep makes its parameter sets: ``grid`` expands the space, the others are Optuna's.
SAMPLERS = ("tpe", "cmaes", "gp", "random", "grid", "nsga2")

#: The most trials a spec may make unless it says otherwise (``max_trials``, ``--max-trials``).
MAX_TRIALS = 100_000


class SpecError(ValueError):
    """A sweep spec that cannot run; ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str] | str) -> None:
        self.errors = [errors] if isinstance(errors, str) else errors
        super().__init__("; ".join(self.errors))


@dataclass(frozen=True)
class Metric:
    """What a trial is ranked by: ``name`` (an episode field of METRICS, or any series the
    worker reports), for one ``agent`` or all (None), reduced by ``reduce`` (REDUCES; ``last``
    is its N), to maximise or minimise (``mode``). An episode field leaves out the episodes
    the run's end cut off (unfinished) unless ``include_unfinished``."""

    name: str = "return"
    last: int = 10
    mode: str = "max"
    agent: str | None = None
    reduce: str = "last_mean"
    include_unfinished: bool = False

    @property
    def is_episode_field(self) -> bool:
        return self.name in METRICS

    def describe(self) -> str:
        what = REDUCES[self.reduce].replace("N", str(self.last))
        of = "episodes'" if self.is_episode_field else "series'"
        agent = f", agent {self.agent}" if self.agent is not None else ""
        return f"{self.name} ({what}, the {of} values{agent}, {self.mode})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "last": self.last, "mode": self.mode}
        if self.agent is not None:
            out["agent"] = self.agent
        if self.reduce != "last_mean":
            out["reduce"] = self.reduce
        if self.include_unfinished:
            out["include_unfinished"] = True
        return out


@dataclass(frozen=True)
class Asha:
    """Async successive halving, counted in episodes (Ray Tune's ``ASHAScheduler``)."""

    max_t: int
    grace_period: int = 1
    reduction_factor: float = 2.0


#: Early stopping on the local engine: Optuna's pruners (see mosaic_sdk.sweeps.search).
PRUNERS = ("median", "asha", "hyperband")


@dataclass(frozen=True)
class Pruner:
    """Stops a trial whose metric so far is worse than the pruner's rule allows (checked
    every ``interval`` s). ``warmup``: the steps before a trial may be stopped;
    ``startup_trials``: parameter sets that run to their end before the median pruner acts."""

    type: str = "median"
    warmup: int = 1
    startup_trials: int = 3
    reduction_factor: int = 3
    max_resource: int | None = None
    interval: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Pbt:
    """Population-based training (the ray engine, Tune's ``PopulationBasedTraining``): each
    trial runs ``generations`` runs of its worker; every ``perturbation_interval`` of them a
    trial of the bottom ``quantile_fraction`` resumes from the checkpoint of one of the top
    (given in the config key ``resume_key``) with the space keys ``mutations`` (all when
    empty) perturbed, or drawn anew with ``resample_probability``."""

    generations: int = 4
    perturbation_interval: int = 1
    quantile_fraction: float = 0.25
    resample_probability: float = 0.25
    mutations: tuple[str, ...] = ()
    resume_key: str = "resume_from"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mutations": list(self.mutations)}


@dataclass(frozen=True)
class SweepSpec:
    base: dict[str, Any] = field(default_factory=dict)
    space: Space = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    samples: int = 1
    sample_seed: int = 0
    metric: Metric = field(default_factory=Metric)
    #: Every objective (``metric = [{...}, {...}]``); ``metric``, the first, ranks the trials.
    objectives: tuple[Metric, ...] = ()
    scheduler: Asha | None = None
    #: One of SAMPLERS, or None: chosen by mosaic_sdk.sweeps.search.resolve_sampler.
    sampler: str | None = None
    pruner: Pruner | None = None
    #: Population-based training (``[pbt]``, or ``[scheduler] type = "pbt"``): ray only.
    pbt: Pbt | None = None
    trials_at_once: int = 2
    max_failures: int = 1
    worker: str | None = None
    max_trials: int = MAX_TRIALS
    #: Seconds a trial may run before it is stopped and stored ``failed``; None: no limit.
    trial_timeout: float | None = None
    #: Seconds a trial may write nothing before it is stopped; None: only marked stalled.
    trial_stall_after: float | None = None

    @property
    def trial_count(self) -> int:
        """How many trials the spec makes (computed, nothing expanded)."""
        return count_trials(self.space, self.samples, len(self.seeds))

    def to_dict(self) -> dict[str, Any]:
        """The spec as its keys are written (defaults filled in, keys left out that are None)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "objectives"}
        several = len(self.objectives) > 1
        out["metric"] = [m.to_dict() for m in self.objectives] if several else self.metric.to_dict()
        out["pruner"] = self.pruner and self.pruner.to_dict()
        out["pbt"] = self.pbt and self.pbt.to_dict()
        out["scheduler"] = self.scheduler and {"type": "asha", **asdict(self.scheduler)}
        return {k: v for k, v in out.items() if v is not None}


#: The keys of a spec: the fields of SweepSpec (``objectives`` is read from ``metric``).
_TOP_KEYS = tuple(f.name for f in fields(SweepSpec) if f.name != "objectives")


@dataclass(frozen=True)
class Trial:
    """One trial of the local engine: its key in the sweep and the parameters it sets."""

    key: str
    params: dict[str, Any]


def load_spec(path: str | Path) -> dict[str, Any]:
    """The raw spec in a ``.json`` or ``.toml`` file (``SpecError`` saying what is wrong)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([f"cannot read the sweep spec {p}: {exc.strerror or exc}"]) from None
    if p.suffix.lower() == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SpecError([f"{p} is not valid TOML: {exc}"]) from None
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SpecError(
                [f"{p} is not valid JSON: {exc} (a .toml file is read as TOML)"]
            ) from None
    if not isinstance(data, dict):
        raise SpecError([f"{p}: a sweep spec is an object, got {type(data).__name__}"])
    return data


def parse_seeds(text: str, limit: int = MAX_TRIALS) -> list[int]:
    """``"1-5"`` -> ``[1, 2, 3, 4, 5]``; ``"1,4,9"`` and ``"1-3,7"`` too. More than ``limit``
    seeds is a ``SpecError`` with the count (counted before any range is expanded)."""
    ranges: list[tuple[int, int]] = []
    for part in text.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        try:
            a, b = (int(lo), int(hi)) if dash else (int(part), int(part))
            if b < a:
                raise ValueError
        except ValueError:
            raise SpecError(
                [f"--seeds {clip(text)!r}: {clip(part)!r} is not a seed or a range like 1-5"]
            ) from None
        ranges.append((a, b))
    count = sum(b - a + 1 for a, b in ranges)
    if count > limit:
        raise SpecError(
            f"--seeds {clip(text)!r} is {count_text(count)} seeds, more than the "
            f"{count_text(limit)} trials a sweep may run (max_trials); give fewer seeds, or "
            "raise the limit with --max-trials or the spec key max_trials"
        )
    return [seed for a, b in ranges for seed in range(a, b + 1)]


def clip(text: str, limit: int = 80) -> str:
    """``text`` cut to about ``limit`` characters (the longest piece of a spec an error
    message quotes), saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}...({len(text) - limit + limit // 2:,} more characters)"


def count_text(count: int) -> str:
    """``count`` with thousands separators, or ``about 10^N`` when it has more than 30 digits
    (Python refuses to turn an int of over 4,300 digits into text at all)."""
    if count < 10**30:
        return f"{count:,}"
    return f"about 10^{math.floor(math.log10(count))}"


def count_trials(space: Space, samples: int, seeds: int) -> int:
    """The trials a space makes: the product of the grids' lengths, times ``samples`` when the
    space has random keys, times the number of seeds (at least one)."""
    count = math.prod(len(d["grid"]) for d in space.values() if "grid" in d)
    if any("grid" not in d for d in space.values()):
        count *= samples
    return count * max(seeds, 1)


def _shorthand_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def apply_shorthands(
    raw: Mapping[str, Any],
    grids: Iterable[str] = (),
    seeds: str | None = None,
    max_trials: int | None = None,
    trial_timeout: float | None = None,
    trial_stall_after: float | None = None,
) -> dict[str, Any]:
    """``raw`` with ``--grid key=v1,v2`` (values JSON when they parse), ``--seeds`` (kept as
    text: :func:`parse_spec` counts it against the limit before expanding it),
    ``--max-trials``, ``--trial-timeout`` and ``--trial-stall-after``."""
    out = json.loads(json.dumps(dict(raw)))
    for text in grids:
        key, sep, values = text.partition("=")
        if not sep or not key.strip() or not values:
            raise SpecError([f"--grid {text!r} is not of the form key=v1,v2 (e.g. --grid lr=1,2)"])
        space = out.setdefault("space", {})
        space[key.strip()] = {"grid": [_shorthand_value(v) for v in values.split(",")]}
    given = {
        "seeds": seeds,
        "max_trials": max_trials,
        "trial_timeout": trial_timeout,
        "trial_stall_after": trial_stall_after,
    }
    out.update({k: v for k, v in given.items() if v is not None})
    return out


def _timeout(errors: list[str], raw: Any, key: str = "trial_timeout") -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 < raw < float("inf"):
        errors.append(f"{key}: give a number of seconds > 0 (got {raw!r})")
        return None
    return raw


def _unknown_keys(
    errors: list[str], where: str, raw: Mapping[str, Any], known: tuple[str, ...]
) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        errors.append(f"{where}unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")


def _int(errors: list[str], where: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        errors.append(f"{where}: give a whole number >= {minimum} (got {value!r})")
        return minimum
    return value


_METRIC_KEYS = ("name", "last", "mode", "direction", "agent", "reduce", "include_unfinished")
#: The longest series name (as the series ingest keeps them).
_MAX_NAME = 1024


def _parse_metric(errors: list[str], raw: Any) -> Metric:
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict):
        errors.append(f"metric: give an object like {{name = 'return', last = 10}} (got {raw!r})")
        return Metric()
    _unknown_keys(errors, "metric: ", raw, _METRIC_KEYS)
    name = raw.get("name", "return")
    if not isinstance(name, str) or not name or len(name) > _MAX_NAME:
        errors.append(
            f"metric.name: give {', '.join(METRICS)} (episode fields) or the name of a series "
            f"the worker reports, e.g. 'losses/value' (got {clip(repr(name))})"
        )
        name = "return"
    if "mode" in raw and "direction" in raw and raw["mode"] != raw["direction"]:
        errors.append("metric: give mode or direction, not both")
    mode = raw.get("mode", raw.get("direction", "max"))
    if mode not in ("max", "min"):
        errors.append(f"metric.mode: {mode!r} is not 'max' or 'min'")
        mode = "max"
    agent = raw.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent):
        errors.append(f"metric.agent: give an agent id such as 'player_1' (got {agent!r})")
        agent = None
    reduce = raw.get("reduce", "last_mean")
    if reduce not in REDUCES:
        errors.append(f"metric.reduce: {reduce!r} is not one of {', '.join(REDUCES)}")
        reduce = "last_mean"
    last = _int(errors, "metric.last", raw.get("last", 10), 1)
    unfinished = raw.get("include_unfinished", False)
    if not isinstance(unfinished, bool):
        errors.append(f"metric.include_unfinished: give true or false (got {unfinished!r})")
        unfinished = False
    return Metric(name, last, mode, agent, reduce, unfinished)


def _parse_scheduler(errors: list[str], raw: Any) -> Asha | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("type", "asha") != "asha":
        errors.append(
            f"scheduler: {{type = 'asha', max_t = N}} or {{type = 'pbt', ...}} (got {raw!r})"
        )
        return None
    _unknown_keys(errors, "scheduler: ", raw, ("type", *(f.name for f in fields(Asha))))
    if "max_t" not in raw:
        errors.append("scheduler.max_t: give the most episodes a trial may run (e.g. 100)")
    max_t = _int(errors, "scheduler.max_t", raw.get("max_t", 1), 1)
    grace = _int(errors, "scheduler.grace_period", raw.get("grace_period", 1), 1)
    factor = raw.get("reduction_factor", 2.0)
    if not is_number(factor) or factor <= 1:
        errors.append(f"scheduler.reduction_factor: give a number > 1 (got {factor!r})")
        factor = 2.0
    return Asha(max_t, grace, float(factor))


def _parse_pruner(errors: list[str], raw: Any) -> Pruner | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, dict) or raw.get("type") not in PRUNERS:
        errors.append(
            f"pruner: give {{type = 'median'}} (or {', '.join(PRUNERS[1:])}) "
            f"(got {clip(repr(raw))})"
        )
        return None
    _unknown_keys(errors, "pruner: ", raw, tuple(f.name for f in fields(Pruner)))
    max_resource = raw.get("max_resource")
    if max_resource is not None:
        max_resource = _int(errors, "pruner.max_resource", max_resource, 1)
    interval = raw.get("interval", 0.5)
    if not is_number(interval) or not 0 < interval <= 3600:
        errors.append(f"pruner.interval: give seconds in (0, 3600] (got {interval!r})")
        interval = 0.5
    return Pruner(
        raw["type"],
        _int(errors, "pruner.warmup", raw.get("warmup", 1), 0),
        _int(errors, "pruner.startup_trials", raw.get("startup_trials", 3), 0),
        _int(errors, "pruner.reduction_factor", raw.get("reduction_factor", 3), 2),
        max_resource,
        float(interval),
    )


def _parse_pbt(errors: list[str], raw: Any, space: Space) -> Pbt | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errors.append(f"pbt: give an object like {{generations = 4}} (got {clip(repr(raw))})")
        return None
    _unknown_keys(errors, "pbt: ", raw, ("type", *(f.name for f in fields(Pbt))))
    fractions = {}
    for key, default, high in (("quantile_fraction", 0.25, 0.5), ("resample_probability", 0.25, 1)):
        value = raw.get(key, default)
        if not is_number(value) or not 0 <= value <= high:
            errors.append(f"pbt.{key}: give a number in [0, {high}] (got {value!r})")
            value = default
        fractions[key] = float(value)
    mutations = raw.get("mutations", [])
    if not isinstance(mutations, list) or not all(isinstance(m, str) for m in mutations):
        errors.append(f"pbt.mutations: give a list of space keys (got {clip(repr(mutations))})")
        mutations = []
    strange = [m for m in mutations if m not in space]
    if strange:
        errors.append(
            f"pbt.mutations: {', '.join(map(repr, strange))} not in the space (keys: "
            f"{', '.join(space) or 'none'}); a mutation perturbs a key of the space"
        )
    if not space:
        errors.append("pbt: the space is empty; give the keys PBT perturbs under [space]")
    resume_key = raw.get("resume_key", "resume_from")
    if not isinstance(resume_key, str) or not resume_key:
        errors.append(f"pbt.resume_key: give the worker's config key (got {resume_key!r})")
        resume_key = "resume_from"
    return Pbt(
        _int(errors, "pbt.generations", raw.get("generations", 4), 1),
        _int(errors, "pbt.perturbation_interval", raw.get("perturbation_interval", 1), 1),
        fractions["quantile_fraction"],
        fractions["resample_probability"],
        tuple(mutations),
        resume_key,
    )


def parse_spec(raw: Mapping[str, Any]) -> SweepSpec:
    """Check a raw spec on its own (not yet against a worker); ``SpecError`` lists it all."""
    errors: list[str] = []
    _unknown_keys(errors, "", raw, _TOP_KEYS)
    base = raw.get("base", {})
    if not isinstance(base, dict):
        errors.append(f"base: give the base config as an object (got {base!r})")
        base = {}
    space = parse_space(errors, raw.get("space", {}))
    said = len(errors)
    max_trials = _int(errors, "max_trials", raw.get("max_trials", MAX_TRIALS), 1)
    seeds_raw = raw.get("seeds", [])
    if isinstance(seeds_raw, str):
        # after a bad max_trials (said above) the seeds are counted against the default
        limit = max_trials if len(errors) == said else MAX_TRIALS
        try:
            seeds_raw = parse_seeds(seeds_raw, limit)
        except SpecError as exc:
            errors.extend(e.replace("--seeds", "seeds") for e in exc.errors)
            seeds_raw = []
    seeds: list[int] = []
    if not isinstance(seeds_raw, list):
        errors.append(
            f"seeds: give a list of whole numbers or a range like '1-5' (got {seeds_raw!r})"
        )
    else:
        for s in seeds_raw:
            if isinstance(s, bool) or not isinstance(s, int):
                errors.append(f"seeds: {s!r} is not a whole number")
            else:
                seeds.append(s)
        if len(set(seeds)) != len(seeds):
            repeated = sorted(seed for seed, n in Counter(seeds).items() if n > 1)
            shown = ", ".join(map(str, repeated[:5])) + (", ..." if len(repeated) > 5 else "")
            errors.append(
                f"seeds: {len(repeated):,} seed(s) given more than once ({shown}); give each "
                "seed once"
            )
    worker = raw.get("worker")
    if worker is not None and not isinstance(worker, str):
        errors.append(f"worker: give a worker name (got {worker!r})")
        worker = None
    raw_metric = raw.get("metric", {})
    if isinstance(raw_metric, list) and raw_metric:
        objectives = [_parse_metric(errors, m) for m in raw_metric]
    else:
        objectives = [_parse_metric(errors, raw_metric)]
    raw_scheduler, raw_pbt = raw.get("scheduler"), raw.get("pbt")
    if isinstance(raw_scheduler, dict) and raw_scheduler.get("type") == "pbt":
        if raw_pbt is not None:
            errors.append("pbt: give [pbt] or [scheduler] type = 'pbt', not both")
        raw_pbt = {k: v for k, v in raw_scheduler.items() if k != "type"}
        raw_scheduler = None
    pbt = _parse_pbt(errors, raw_pbt, space)
    if pbt is not None and raw_scheduler is not None:
        errors.append("pbt: PBT is the sweep's scheduler; drop [scheduler]")
    sampler = raw.get("sampler")
    if sampler is not None and sampler not in SAMPLERS:
        errors.append(f"sampler: {sampler!r} is not one of {', '.join(SAMPLERS)}")
        sampler = None
    spec = SweepSpec(
        sampler=sampler,
        pruner=_parse_pruner(errors, raw.get("pruner")),
        pbt=pbt,
        base=dict(base),
        space=space,
        seeds=seeds,
        samples=_int(errors, "samples", raw.get("samples", 1), 1),
        sample_seed=_int(errors, "sample_seed", raw.get("sample_seed", 0), 0),
        metric=objectives[0],
        objectives=tuple(objectives),
        scheduler=_parse_scheduler(errors, raw_scheduler),
        trials_at_once=_int(errors, "trials_at_once", raw.get("trials_at_once", 2), 1),
        max_failures=_int(errors, "max_failures", raw.get("max_failures", 1), 0),
        worker=worker,
        max_trials=max_trials,
        trial_timeout=_timeout(errors, raw.get("trial_timeout")),
        trial_stall_after=_timeout(errors, raw.get("trial_stall_after"), "trial_stall_after"),
    )
    if not errors and spec.trial_count > max_trials:
        grids = [f"{len(d['grid'])} ({clip(k, 40)})" for k, d in space.items() if "grid" in d]
        if len(grids) > 8:  # name the first few grids, count the rest
            grids = [*grids[:6], f"... {len(grids) - 6:,} more grids"]
        samples = str(spec.samples) if spec.samples < 10**30 else count_text(spec.samples)
        parts = grids + (
            [f"{samples} samples"] if any("grid" not in d for d in space.values()) else []
        )
        parts += [f"{len(seeds)} seeds"] if seeds else []
        errors.append(
            f"the spec makes {count_text(spec.trial_count)} trials ({' x '.join(parts)}), more "
            f"than max_trials = {count_text(max_trials)}; shrink the space, or raise the limit "
            "with --max-trials N or the spec key max_trials"
        )
    if errors:
        raise SpecError(errors)
    return spec


def expand_trials(spec: SweepSpec) -> list[Trial]:
    """Every trial of the spec (:func:`space_points` once per seed), in a fixed order:
    ``--resume`` needs the same list from the same spec."""
    seeds: list[int | None] = list(spec.seeds) or [None]
    sets = [
        dict(params) if seed is None else {**params, "seed": seed}
        for params in space_points(spec.space, spec.samples, spec.sample_seed)
        for seed in seeds
    ]
    return [Trial(f"t{i:04d}", p) for i, p in enumerate(sets)]


def trial_config(spec: SweepSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    """The worker config of one trial: the base config with the trial's parameters (dotted
    keys reach into objects)."""
    config: dict[str, Any] = json.loads(json.dumps(spec.base))
    for key, value in params.items():
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return config


def check_against_model(spec: SweepSpec, model: Any) -> None:
    """Validate the base config and every value the space can give against ``model`` (a
    :class:`~mosaic_sdk.contract.WorkerConfig` class); ``SpecError`` names each bad value."""
    errors: list[str] = []

    def check(where: str, params: Mapping[str, Any]) -> bool:
        try:
            model.from_dict({**trial_config(spec, params), "run_id": "sweep-check"})
        except ConfigError as exc:
            errors.extend(f"{where}: {line}" for line in exc.errors)
            return False
        return True

    if not check("base", {}):
        raise SpecError(errors)
    for key, dist in spec.space.items():
        kind, values = next(iter(dist.items()))
        for value in values:
            check(f"space.{key}.{kind} value {value!r}", {key: value})
    for seed in spec.seeds:
        check(f"seeds value {seed!r}", {"seed": seed})
    if errors:
        raise SpecError(errors)
