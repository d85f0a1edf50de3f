"""The config a user hands to ``mosaic run``: a JSON file (read as the worker CLI reads it)
plus ``--set key=value`` overrides; errors are :class:`~mosaic_sdk.contract.ConfigError`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mosaic_sdk.contract import ConfigError, read_config_json, unwrap_job_descriptor
from mosaic_sdk.runner.supervision.launch import ResolvedJob, resolve_job
from mosaic_sdk.telemetry.reader import MAX_JSON_DEPTH, json_depth_exceeds

_TOO_DEEP = object()


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a JSON config file (flat, or a job descriptor); returns the worker's config dict."""
    return unwrap_job_descriptor(read_config_json(path))


def load_job(
    path: str | Path | None, overrides: Iterable[str] = (), *, run_id: str | None = None
) -> ResolvedJob:
    """The job of ``mosaic run``: the config file (through
    :func:`~mosaic_sdk.runner.supervision.launch.resolve_job`), then the ``--set`` overrides
    (never of the run id: that is ``--run-id``)."""
    job = resolve_job(read_config_json(path) if path is not None else {}, run_id=run_id)
    config = apply_overrides(job.config, overrides)
    if config.get("run_id") != job.run_id:
        raise ConfigError(
            [f"--set run_id=...: give the run id with --run-id instead (run id {job.run_id!r})"]
        )
    return ResolvedJob(config, job.run_id)


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=3"`` -> ``(["a", "b"], 3)``; the value is JSON if it parses, else a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError([f"--set {text!r} is not of the form key=value (e.g. --set seed=3)"])
    path = key.split(".")
    if any(not part for part in path):
        raise ConfigError([f"--set {text!r}: the key {key!r} has an empty part"])
    try:
        parsed: Any = json.loads(value)
    except ValueError:
        parsed = value
    except RecursionError:
        parsed = _TOO_DEEP
    if parsed is _TOO_DEEP or json_depth_exceeds(parsed, MAX_JSON_DEPTH):
        raise ConfigError(
            [
                f"--set {key}=...: the value is JSON nested deeper than {MAX_JSON_DEPTH} "
                "levels; a config needs far fewer"
            ]
        )
    return path, parsed


def apply_overrides(data: Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """A copy of ``data`` with every ``key=value`` (dotted keys reach into objects) applied."""
    out: dict[str, Any] = json.loads(json.dumps(dict(data)))  # a deep copy of JSON data
    for text in overrides:
        path, value = parse_override(text)
        node = out
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError([f"--set {text!r}: {part!r} is not an object in the config"])
            node = child
        node[path[-1]] = value
    return out
