"""How sure a sweep is: the seeds of each configuration, summarised with intervals."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Resamples of the bootstrap and the seed of its generator.
RESAMPLES = 2000
SEED = 0
#: The most resampled values held at once: the resamples are drawn and scored this many
#: values a batch (10,000 runs a side would otherwise hold 2000 x 20,000 values several times
#: over, gigabytes). Below it (1,000 runs together) every resample is one batch.
RESAMPLED_VALUES = 2_000_000


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval (``low``, ``high``)."""

    value: float
    low: float
    high: float

    def text(self, fmt: str = ".4g") -> str:
        return f"{self.value:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


def iqm(values: Any, axis: int = -1) -> Any:
    """The interquartile mean: the mean of the middle 50% (25% trimmed at each end)."""
    from scipy.stats import trim_mean  # optional dependency (the search extra)

    return trim_mean(values, 0.25, axis=axis)


def _bootstrap(point: float, samples: tuple[Any, ...], statistic: Any) -> Estimate:
    """``point`` with the 95% percentile interval of ``statistic`` over resampled ``samples``."""
    from scipy.stats import bootstrap  # optional dependency (the search extra)

    values = sum(len(sample) for sample in samples)
    res = bootstrap(
        samples,
        statistic,
        n_resamples=RESAMPLES,
        batch=max(1, min(RESAMPLES, RESAMPLED_VALUES // max(1, values))),
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(SEED),
    )
    return Estimate(point, float(res.confidence_interval.low), float(res.confidence_interval.high))


def _estimate(values: Sequence[float], statistic: Any) -> Estimate:
    data = np.asarray(values, dtype=float)
    point = float(statistic(data, axis=-1))
    if len(data) < 2 or np.all(data == data[0]):  # nothing to resample
        return Estimate(point, point, point)
    return _bootstrap(point, (data,), statistic)


def summarize(values: Sequence[float]) -> dict[str, Estimate]:
    """``mean``, ``median`` and ``iqm`` of per-seed scores, each with its 95% interval."""
    return {
        "mean": _estimate(values, np.mean),
        "median": _estimate(values, np.median),
        "iqm": _estimate(values, iqm),
    }


def prob_improvement(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """P(A > B): the chance that a run of A scores more than a run of B (ties a half), with
    the 95% interval of resampling A and B each on its own (stratified)."""
    from scipy.stats import mannwhitneyu  # optional dependency (the search extra)

    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not len(xa) or not len(xb):
        raise ValueError("P(A > B) needs at least one score on each side")

    def stat(x: Any, y: Any, axis: int = -1) -> Any:
        u = mannwhitneyu(x, y, axis=axis, alternative="greater", method="asymptotic").statistic
        return u / (x.shape[axis] * y.shape[axis])

    point = float(stat(xa, xb))
    if len(xa) < 2 and len(xb) < 2:
        return Estimate(point, point, point)
    if len(xa) < 2 or len(xb) < 2:  # one run on one side: resample the other side only
        many, one = (xb, xa) if len(xa) < 2 else (xa, xb)

        def against_one(x: Any, axis: int = -1) -> Any:
            y = np.broadcast_to(one, (*x.shape[:-1], len(one)))
            return stat(x, y) if many is xa else stat(y, x)

        samples: tuple[Any, ...] = (many,)
        statistic: Any = against_one
    else:
        samples, statistic = (xa, xb), stat
    return _bootstrap(point, samples, statistic)


def group_by_configuration(trials: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The completed trials of a sweep (``SweepStore.trials`` rows; each trial's last attempt)
    grouped by their parameters without ``seed``: each group's params, seeds, scores and
    :func:`summarize`."""
    last: dict[str, dict[str, Any]] = {}
    for t in sorted(trials, key=lambda t: (t["trial_key"], t["attempt"])):
        last[t["trial_key"]] = t
    groups: dict[str, dict[str, Any]] = {}
    for t in last.values():
        if t["status"] != "completed" or t["metric"] is None:
            continue
        params = {k: v for k, v in t["params"].items() if k != "seed"}
        key = json.dumps(params, sort_keys=True)
        g = groups.setdefault(key, {"params": params, "seeds": [], "scores": []})
        g["seeds"].append(t["params"].get("seed"))
        g["scores"].append(float(t["metric"]))
    for g in groups.values():
        g["stats"] = summarize(g["scores"])
    return list(groups.values())
