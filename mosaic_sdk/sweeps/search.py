"""Search that learns: the local engine's trials proposed by an Optuna study."""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mosaic_sdk.sweeps.space import is_number
from mosaic_sdk.sweeps.spec import (
    SAMPLERS,
    Pruner,
    SpecError,
    SweepSpec,
    Trial,
    clip,
    count_trials,
)
from mosaic_sdk.sweeps.store import FINISHED, DamagedSweepError

if TYPE_CHECKING:
    import optuna

#: The Python modules each Optuna sampler needs beyond Optuna (``gp``: torch and scipy).
SAMPLER_NEEDS: dict[str, tuple[str, ...]] = {
    "tpe": ("optuna",),
    "random": ("optuna",),
    "nsga2": ("optuna",),
    "cmaes": ("optuna", "cmaes"),
    "gp": ("optuna", "torch", "scipy"),
    "grid": (),
}
#: pip's names of those modules, for the message that refuses a sampler.
_PIP_NAMES = {"optuna": "'mosaic-worker-sdk[search]'", "cmaes": "cmaes"}


def has_draws(spec: SweepSpec) -> bool:
    """True when the space has a key that is not a grid (choice, uniform, loguniform)."""
    return any("grid" not in d for d in spec.space.values())


def resolve_sampler(spec: SweepSpec, engine: str = "local") -> str:
    """The sampler a sweep runs: the spec's, else ``tpe`` when the space has draws (``grid``
    with population-based training, whose first population is the spec's list), else
    ``grid``. The same on both engines: a spec moves from one to the other unchanged."""
    if spec.sampler is not None:
        return spec.sampler
    return "tpe" if has_draws(spec) and spec.pbt is None else "grid"


def _missing(modules: Iterable[str]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def available_samplers(engine: str = "local") -> list[str]:
    """The samplers this machine can run on ``engine`` (the ray engine's learning samplers are
    Optuna's, through Tune's ``OptunaSearch``)."""
    return [s for s in SAMPLERS if not _missing(SAMPLER_NEEDS[s])]


def check_sampler(spec: SweepSpec, engine: str = "local") -> str:
    """The sampler the sweep runs (:func:`resolve_sampler`), or ``SpecError`` saying why it
    cannot run here and which can."""
    name = resolve_sampler(spec, engine)
    usable = ", ".join(available_samplers(engine))
    several = len(spec.objectives) > 1
    if spec.pbt is not None:
        if engine != "ray":
            raise SpecError(
                ["pbt: population-based training runs on --engine ray (Tune's scheduler)"]
            )
        if name != "grid":
            raise SpecError(
                f"pbt: its first population is the spec's trials (sampler 'grid', draws "
                f"made with sample_seed as the local engine makes them), not {name!r}; "
                "give sampler = 'grid' or leave it out"
            )
        if spec.pruner is not None:
            raise SpecError(["pbt: PBT is the sweep's scheduler; drop [pruner]"])
        if several:
            raise SpecError(["pbt: PBT ranks by one objective; give one metric"])
    if spec.pruner is not None and name == "grid" and engine == "local":
        learning = ", ".join(s for s in available_samplers(engine) if s != "grid")
        raise SpecError(
            f"pruner {spec.pruner.type!r} needs an Optuna sampler, not 'grid': give "
            f"sampler = one of {learning or 'tpe, random (pip install optuna)'}"
        )
    if spec.pruner is not None and spec.scheduler is not None:
        raise SpecError(["pruner: give [pruner] or [scheduler], not both"])
    if several and spec.pruner is not None:
        raise SpecError(
            ["pruner: several objectives cannot be pruned (Optuna's pruners take one); drop one"]
        )
    if several and name == "cmaes":
        raise SpecError(
            ["sampler 'cmaes' takes one objective; for several give sampler = 'nsga2' or 'tpe'"]
        )
    if several and engine == "ray" and name != "grid" and len(spec.seeds) > 1:
        raise SpecError(
            f"metric: --engine ray tells {name!r} several objectives of one trial at a "
            "time (Tune's OptunaSearch), not a mean over seeds (Tune's Repeater averages "
            "one metric); give one seed, or run --engine local"
        )
    if name == "grid":
        return name
    missing = _missing(SAMPLER_NEEDS[name])
    if missing:
        install = " ".join(_PIP_NAMES.get(m, m) for m in missing)
        raise SpecError(
            f"sampler {name!r} needs {', '.join(missing)}, not installed here: pip install "
            f"{install}; or give a sampler that runs here ({usable})"
        )
    if name == "cmaes" and not any(
        kind in ("uniform", "loguniform") for d in spec.space.values() for kind in d
    ):
        raise SpecError(
            "sampler 'cmaes' searches uniform/loguniform keys and the space has none; "
            f"give one, or another sampler ({usable})"
        )
    return name


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    import optuna  # optional dependency (the search extra)

    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    samplers = {
        "tpe": optuna.samplers.TPESampler,
        "random": optuna.samplers.RandomSampler,
        "nsga2": optuna.samplers.NSGAIISampler,
        "gp": optuna.samplers.GPSampler,
    }
    return samplers[name](seed=seed)


def make_pruner(pruner: Pruner) -> optuna.pruners.BasePruner:
    import optuna  # optional dependency (the search extra)

    if pruner.type == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=pruner.startup_trials, n_warmup_steps=pruner.warmup
        )
    if pruner.type == "asha":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=max(pruner.warmup, 1), reduction_factor=pruner.reduction_factor
        )
    return optuna.pruners.HyperbandPruner(
        min_resource=max(pruner.warmup, 1),
        max_resource=pruner.max_resource if pruner.max_resource is not None else "auto",
        reduction_factor=pruner.reduction_factor,
    )


def distributions(spec: SweepSpec) -> dict[str, optuna.distributions.BaseDistribution]:
    """The study's distribution of each space key: uniform/loguniform are floats, grid and
    choice keys categorical over the indices of their values (any JSON value can be one)."""
    # optional dependency (the search extra)
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    out: dict[str, optuna.distributions.BaseDistribution] = {}
    for key, dist in spec.space.items():
        kind, values = next(iter(dist.items()))
        if kind in ("uniform", "loguniform"):
            out[key] = FloatDistribution(
                float(values[0]), float(values[1]), log=kind == "loguniform"
            )
        else:
            out[key] = CategoricalDistribution(tuple(range(len(values))))
    return out


def params_of(spec: SweepSpec, study_params: Mapping[str, Any]) -> dict[str, Any]:
    """A parameter set as the worker gets it from the study's values (the values of grid and
    choice keys from their indices; floats as floats). Both engines' searches use it."""
    params: dict[str, Any] = {}
    for key, dist in spec.space.items():
        kind, values = next(iter(dist.items()))
        value = study_params[key]
        params[key] = values[int(value)] if kind in ("grid", "choice") else float(value)
    return params


#: The local engine's trial keys (``t0007``): the study numbers its parameter sets by them.
LOCAL_KEY = re.compile(r"t\d+")


def _outside(spec: SweepSpec, params: Mapping[str, Any]) -> str | None:
    """Why the study cannot take a stored trial's parameters (a space key missing, a value
    outside the space), or None."""
    for key, dist in spec.space.items():
        kind, values = next(iter(dist.items()))
        if key not in params:
            return f"has no value of the space key {key!r}"
        value = params[key]
        if kind in ("grid", "choice"):
            inside = value in values
        else:
            inside = is_number(value) and values[0] <= value <= values[1]
        if not inside:
            return f"{key} = {clip(repr(value))} is outside space.{key}.{kind} {clip(repr(values))}"
    return None


def check_history(sweep_id: str, history: Iterable[Mapping[str, Any]], spec: SweepSpec) -> None:
    """``DamagedSweepError`` for the first stored attempt the study cannot be rebuilt from
    (``--resume`` of a local sweep with a learning sampler): a trial key not the local
    engine's, or parameters outside the space."""
    for row in history:
        key = row["trial_key"]
        trial = f"{key} (attempt {row['attempt']})"
        if not isinstance(key, str) or LOCAL_KEY.fullmatch(key) is None:
            why = "is not the local engine's (t0000, t0001, ...)"
            raise DamagedSweepError(sweep_id, "trial_key", why, clip(str(key)))
        outside = _outside(spec, row["params"])
        if outside is not None:
            raise DamagedSweepError(sweep_id, "params_json", outside, trial)


@dataclass
class _Config:
    """One parameter set the study proposed: its trials (one per seed) and their metrics."""

    number: int
    params: dict[str, Any]
    trial: optuna.trial.Trial | None = None
    left: set[str] = field(default_factory=set)
    values: list[Sequence[float | None]] = field(default_factory=list)
    reported: set[int] = field(default_factory=set)
    #: (value, step) at which the pruner stopped the set; its other seeds do not start.
    pruned: tuple[float, int] | None = None


#: The name of every local study (in memory: one per sweep process).
STUDY_NAME = "mosaic-sweep"


class OptunaSource:
    """The trials of a sweep, asked of an Optuna study as the pool frees up. Not thread-safe
    (the local engine calls it under its lock). ``history``: when resuming, the sweep's stored
    attempts (``SweepStore.trials`` rows), the study is rebuilt from them."""

    def __init__(
        self,
        spec: SweepSpec,
        sampler: str,
        history: Iterable[Mapping[str, Any]] = (),
        score: Callable[[str], Sequence[float | None]] | None = None,
    ) -> None:
        import optuna  # optional dependency (the search extra)

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.spec = spec
        self.sampler = sampler
        self.seeds: list[int | None] = list(spec.seeds) or [None]
        self.total_configs = count_trials(spec.space, spec.samples, 0)
        self.dists = distributions(spec)
        self.objectives = spec.objectives or (spec.metric,)
        #: a finished run's value of every objective (several objectives, on --resume)
        self.score = score
        self.study = optuna.create_study(
            # A fixed name: Hyperband puts each trial in a bracket by a hash of the study's name
            # and the trial's number, so Optuna's random default name made seeded sweeps differ.
            study_name=STUDY_NAME,
            sampler=make_sampler(sampler, spec.sample_seed),
            pruner=make_pruner(spec.pruner) if spec.pruner else optuna.pruners.NopPruner(),
            directions=["maximize" if m.mode == "max" else "minimize" for m in self.objectives],
        )
        self._queue: list[Trial] = []
        self._by_key: dict[str, _Config] = {}
        self.asked = 0
        self.resumed = self._rebuild(history)

    @property
    def total(self) -> int:
        """How many trials the sweep makes (parameter sets x seeds)."""
        return self.total_configs * len(self.seeds)

    def keys(self, number: int) -> list[str]:
        n = len(self.seeds)
        return [f"t{number * n + i:04d}" for i in range(n)]

    def _ask(self) -> None:
        """Ask the study for a parameter set and queue its trials (one per seed)."""
        ft = self.study.ask(self.dists)
        self.asked += 1
        config = _Config(ft.number, params_of(self.spec, ft.params), ft)
        for key, seed in zip(self.keys(ft.number), self.seeds, strict=True):
            p = dict(config.params) if seed is None else {**config.params, "seed": seed}
            config.left.add(key)
            self._by_key[key] = config
            self._queue.append(Trial(key, p))

    def _internal(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's parameters as the study holds them (indices for grid and choice keys)."""
        out: dict[str, Any] = {}
        for key, dist in self.spec.space.items():
            kind, values = next(iter(dist.items()))
            value = params[key]
            out[key] = values.index(value) if kind in ("grid", "choice") else float(value)
        return out

    def _rebuild(self, history: Iterable[Mapping[str, Any]]) -> int:
        """Rebuild the study of an interrupted sweep from its stored attempts, in the order
        they were asked (a set with seeds left is asked again); how many trials had finished."""
        import optuna  # optional dependency (the search extra)
        from optuna.trial import TrialState

        last: dict[str, Mapping[str, Any]] = {}
        for row in sorted(history, key=lambda r: (r["trial_key"], r["attempt"])):
            last[row["trial_key"]] = row
        by_number: dict[int, list[Mapping[str, Any]]] = {}
        for key, row in last.items():
            by_number.setdefault(int(key[1:]) // len(self.seeds), []).append(row)
        finished = 0
        for number in range(max(by_number, default=-1) + 1):
            rows = by_number.get(number)
            if not rows:  # asked, but no trial of it started: asked again below
                break
            params = self._internal(rows[0]["params"])
            done = {r["trial_key"]: self._stored(r) for r in rows if r["status"] in FINISHED}
            finished += len(done)
            if len(done) == len(self.seeds):
                means = self._means(list(done.values()))
                self.study.add_trial(
                    optuna.trial.create_trial(
                        params=params,
                        distributions=self.dists,
                        values=means,
                        state=TrialState.COMPLETE if means else TrialState.FAIL,
                    )
                )
                self.asked += 1
                continue
            self.study.enqueue_trial(params)
            if any(r["status"] == "pruned" for r in rows):  # its other seeds never start
                self.study.add_trial(
                    optuna.trial.create_trial(
                        params=params, distributions=self.dists, state=TrialState.PRUNED
                    )
                )
                self.asked += 1
                continue
            self._ask()
            self._queue = [t for t in self._queue if t.key not in done]
            for key, values in done.items():
                self._record(key, values)
        return finished

    def _stored(self, row: Mapping[str, Any]) -> Sequence[float | None]:
        """A stored trial's value of every objective."""
        if len(self.objectives) > 1 and self.score is not None and row.get("run_id"):
            return self.score(row["run_id"])
        return [row["metric"]]

    def _means(self, values: list[Sequence[float | None]]) -> list[float] | None:
        """Each objective's mean over the seeds that have a finite value of every one."""
        kept = [
            [float(v) for v in vs if v is not None]
            for vs in values
            if len(vs) == len(self.objectives)
            and all(v is not None and math.isfinite(v) for v in vs)
        ]
        if not kept:
            return None
        return [sum(col) / len(kept) for col in zip(*kept, strict=True)]

    def next(self) -> Trial | None:
        """The next trial to run, asking the study for a new parameter set when needed."""
        if not self._queue and self.asked < self.total_configs:
            self._ask()
        return self._queue.pop(0) if self._queue else None

    def report(self, key: str, value: float, step: int) -> bool:
        """An intermediate value of a running trial (its metric so far at ``step``); True
        when the pruner says to stop it (its parameter set's seeds not yet started are
        dropped)."""
        config = self._by_key.get(key)
        if config is None or config.trial is None or self.spec.pruner is None:
            return False
        if config.pruned is not None:
            return True
        if step not in config.reported:  # a step is reported once (another seed's is kept)
            config.reported.add(step)
            config.trial.report(value, step)
        if not config.trial.should_prune():
            return False
        config.pruned = (value, step)
        dropped = {t.key for t in self._queue if self._by_key.get(t.key) is config}
        self._queue = [t for t in self._queue if t.key not in dropped]
        config.left -= dropped
        return True

    def finished(
        self,
        key: str,
        status: str,
        metric: float | None,
        values: Sequence[float | None] | None = None,
    ) -> None:
        """A trial ended: ``completed``/``failed``/``stopped``/``pruned`` count towards its
        parameter set (told to the study once all its seeds did); ``cancelled`` leaves the set
        open for ``--resume``. ``values``: every objective's value (``metric`` is the first)."""
        if status in FINISHED:
            self._record(key, values if values is not None else [metric])

    def _record(self, key: str, values: Sequence[float | None]) -> None:
        config = self._by_key.get(key)
        if config is None or key not in config.left:
            return
        config.left.discard(key)
        config.values.append(values)  # _means keeps those with a finite value of every one
        if config.left:
            return
        from optuna.trial import TrialState  # optional dependency (the search extra)

        means = self._means(list(config.values))
        if config.pruned is not None:
            self.study.tell(config.number, state=TrialState.PRUNED)
        elif means:
            self.study.tell(config.number, means)
        else:  # no seed gave a metric (all failed): the study learns nothing from it
            self.study.tell(config.number, state=TrialState.FAIL)
