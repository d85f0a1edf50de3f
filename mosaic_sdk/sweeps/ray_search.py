"""The ray engine's search and early stopping, from the same spec as the local engine's."""

from __future__ import annotations

import math
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ray import tune
from ray.tune.schedulers import (
    ASHAScheduler,
    AsyncHyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
    TrialScheduler,
)
from ray.tune.search import Repeater, Searcher
from ray.tune.search.optuna import OptunaSearch

from mosaic_sdk.sweeps.search import distributions, make_sampler
from mosaic_sdk.sweeps.spec import SweepSpec, count_trials, expand_trials

#: The result keys a trial reports: the first objective, the others (``objective_1``...), and
#: the x of the first objective's last point (episodes, or the series' step).
OBJECTIVE = "objective"
STEP = "mosaic_step"
#: Tune's key of the Repeater's index in a config (which seed the trial runs).
TRIAL_INDEX = "__trial_index__"
#: The config key of a trial's index in the list (PBT's first population).
LIST_INDEX = "mosaic_trial"
#: ``max_t`` of the asha and hyperband pruners when ``max_resource`` is not given.
UNBOUNDED = 10**9


def objective_key(index: int) -> str:
    return OBJECTIVE if index == 0 else f"{OBJECTIVE}_{index}"


class ListSearcher(Searcher):
    """Tune's trials in a fixed list (the local engine's, see the module docstring)."""

    def __init__(self, configs: list[dict[str, Any]], metric: str | None, mode: str | None):
        super().__init__(metric=metric, mode=mode)
        self.configs = configs
        self.given = 0

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self.given >= len(self.configs):
            return Searcher.FINISHED  # type: ignore[return-value]  # Tune's own sentinel
        self.given += 1
        return dict(self.configs[self.given - 1])

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        pass

    def get_state(self) -> dict[str, Any]:
        return {"given": self.given, "configs": self.configs}

    def set_state(self, state: dict[str, Any]) -> None:
        self.given = state["given"]
        self.configs = state["configs"]

    def save(self, checkpoint_path: str) -> None:

        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.get_state(), f)

    def restore(self, checkpoint_path: str) -> None:

        with open(checkpoint_path, "rb") as f:
            self.set_state(pickle.load(f))  # noqa: S301 - our own experiment state


class _OptunaSearch(OptunaSearch):
    """Tune's ``OptunaSearch``, given only the results that carry the objective (a trial
    reports before its first episode or point too; Tune's own reads the key regardless)."""

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        keys = self.metric if isinstance(self.metric, list) else [self.metric]
        if all(k in result for k in keys):
            super().on_trial_result(trial_id, result)


class _MedianStoppingRule(MedianStoppingRule):
    """Tune's median rule, but a trial with too few others to compare with goes on: Tune's
    own pauses it to "yield time" to pending trials, and a paused trial's worker is stopped
    (resumed, it would start anew as another run)."""

    def _on_insufficient_samples(self, tune_controller: Any, trial: Any, time: float) -> str:
        return TrialScheduler.CONTINUE


@dataclass
class TuneSetup:
    """What the Tuner is given: its search, scheduler, number of trials, metric and mode,
    stop criterion, and how a trial reads its parameters from its config (``search``)."""

    search_alg: Any
    scheduler: Any
    num_samples: int
    metric: str | None
    mode: str | None
    stop: dict[str, Any] | None
    search: str
    param_space: dict[str, Any]


def tune_setup(spec: SweepSpec, sampler: str) -> TuneSetup:
    """Tune's side of a spec (see the module docstring)."""
    objectives = list(spec.objectives or (spec.metric,))
    first = objectives[0]
    several = len(objectives) > 1 and sampler != "grid"
    if sampler == "grid":
        configs = [t.params for t in expand_trials(spec)]
        search_alg: Any = ListSearcher(configs, OBJECTIVE, first.mode)
        num_samples, search = len(configs), "list"
    else:
        search_alg = _OptunaSearch(
            space=distributions(spec),
            metric=[objective_key(i) for i in range(len(objectives))] if several else OBJECTIVE,
            mode=[m.mode for m in objectives] if several else first.mode,
            sampler=make_sampler(sampler, spec.sample_seed),
        )
        if len(spec.seeds) > 1:
            search_alg = Repeater(search_alg, repeat=len(spec.seeds), set_index=True)
        num_samples = count_trials(spec.space, spec.samples, len(spec.seeds))
        search = "optuna"
    scheduler: Any = None
    stop = None
    if spec.pruner is not None:
        scheduler = make_scheduler(spec)
    elif spec.scheduler is not None:
        s = spec.scheduler
        scheduler = ASHAScheduler(
            time_attr="episodes",
            max_t=s.max_t,
            grace_period=s.grace_period,
            reduction_factor=s.reduction_factor,
        )
    param_space: dict[str, Any] = {}
    if spec.pbt is not None:
        scheduler = make_pbt(spec)
        stop = {"training_iteration": spec.pbt.generations}
        configs = [t.params for t in expand_trials(spec)]
        param_space = {LIST_INDEX: tune.grid_search(list(range(len(configs))))}
        for key in sorted({k for c in configs for k in c}):
            param_space[key] = tune.sample_from(_picker(configs, key))
        search_alg, num_samples = None, 1
    return TuneSetup(
        search_alg,
        scheduler,
        num_samples,
        None if several else OBJECTIVE,
        None if several else first.mode,
        stop,
        search,
        param_space,
    )


def _picker(configs: list[dict[str, Any]], key: str) -> Any:
    """``key``'s value in the config of the trial Tune's grid picked (PBT's population)."""
    return lambda spec: configs[spec.config[LIST_INDEX]].get(key)


def make_scheduler(spec: SweepSpec) -> TrialScheduler:
    """The Tune scheduler of the spec's ``[pruner]`` (see the module docstring)."""
    pruner = spec.pruner
    assert pruner is not None
    if pruner.type == "median":
        return _MedianStoppingRule(
            time_attr=STEP,
            grace_period=float(pruner.warmup),
            min_samples_required=max(pruner.startup_trials, 1),
        )
    max_t = pruner.max_resource if pruner.max_resource is not None else UNBOUNDED
    grace = max(pruner.warmup, 1)
    if pruner.type == "asha":
        return ASHAScheduler(
            time_attr=STEP,
            max_t=max_t,
            grace_period=grace,
            reduction_factor=pruner.reduction_factor,
            stop_last_trials=False,
        )
    return AsyncHyperBandScheduler(
        time_attr=STEP,
        max_t=max_t,
        grace_period=grace,
        reduction_factor=pruner.reduction_factor,
        brackets=3,
        stop_last_trials=False,
    )


def make_pbt(spec: SweepSpec) -> PopulationBasedTraining:
    """Tune's PBT of the spec's ``[pbt]``: perturbed keys stay within their space."""
    pbt = spec.pbt
    assert pbt is not None
    keys = list(pbt.mutations) or list(spec.space)
    mutations: dict[str, Any] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for key in keys:
        kind, values = next(iter(spec.space[key].items()))
        if kind in ("grid", "choice"):
            mutations[key] = list(values)
        else:
            low, high = float(values[0]), float(values[1])
            bounds[key] = (low, high)
            mutations[key] = (
                tune.uniform(low, high) if kind == "uniform" else tune.loguniform(low, high)
            )

    def within_bounds(config: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(config)
        for key, (low, high) in bounds.items():
            value = out.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value):
                out[key] = min(max(float(value), low), high)
        return out

    return PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=pbt.perturbation_interval,
        hyperparam_mutations=mutations,
        quantile_fraction=pbt.quantile_fraction,
        resample_probability=pbt.resample_probability,
        custom_explore_fn=within_bounds,
        require_attrs=False,
    )
