"""The config a user hands to ``mosaic run``: a JSON file plus ``--set key=value`` overrides.

Errors are :class:`~mosaic_sdk.contract.ConfigError` with the same wording as the worker CLI
(:func:`mosaic_sdk.worker_cli.load_config`), so a user sees one message whichever side reads
the file first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mosaic_sdk.contract import ConfigError, unwrap_job_descriptor


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a JSON config file (flat, or a job descriptor); returns the worker's config dict."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"config file {path} does not exist"]) from None
    except IsADirectoryError:
        raise ConfigError([f"config file {path} is a directory; pass a JSON file"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"config file {path} is not UTF-8 text; pass a JSON file"]) from None
    except OSError as exc:
        raise ConfigError([f"cannot read config file {path}: {exc.strerror}"]) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            [
                f"config file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg})"
            ]
        ) from None
    if not isinstance(raw, Mapping):
        raise ConfigError(
            [f"config file {path} holds a JSON {type(raw).__name__}; a config is a JSON object"]
        )
    return unwrap_job_descriptor(raw)


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


__all__ = ["apply_overrides", "parse_override", "read_config_file"]
