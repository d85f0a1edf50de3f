"""Where a worker's conformance config comes from, with or without the SDK."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from mosaic_sdk.json_types import JsonObject

if TYPE_CHECKING:
    from mosaic_sdk.contract import WorkerConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The table of ``pyproject.toml`` that holds the config.
TABLE = ("tool", "mosaic", "conformance")
TABLE_NAME = "[tool.mosaic.conformance]"
#: The entry-point group of the wheel-friendly fallback.
ENTRY_POINT_GROUP = "mosaic.conformance"


class ConformanceConfigError(ValueError):
    """A conformance config given without the SDK is malformed; the message names the file
    (or entry point) and each offending key."""

    def __init__(self, origin: str, problems: list[str]) -> None:
        self.origin = origin
        self.problems = list(problems)
        listing = "\n  ".join(self.problems)
        super().__init__(f"bad conformance config in {origin}:\n  {listing}")


@dataclass(frozen=True)
class ConformanceConfig:
    """A conformance config and where it came from (``origin``: hook, file or entry point)."""

    #: JSON when read from a file or an entry point; a hook's config is judged by the checks.
    data: Mapping[str, object]
    origin: str


def source_directory(dist: importlib_metadata.Distribution) -> Path | None:
    """The local source tree a distribution was installed from, if it is known and exists."""
    try:
        info = json.loads(dist.read_text("direct_url.json") or "")
    except ValueError:
        return None
    if not isinstance(info, dict) or "dir_info" not in info:
        return None
    url = urlparse(str(info.get("url", "")))
    if url.scheme != "file":
        return None
    path = Path(unquote(url.path))
    if (path / "pyproject.toml").is_file() or (path / "setup.py").is_file():
        return path
    return None


def _json_problems(value: object, where: str) -> list[str]:
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return []
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f"key {where!r}: {value} is not a JSON number"]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _json_problems(v, f"{where}[{i}]")]
    if isinstance(value, Mapping):
        out = []
        for k, v in value.items():
            if not isinstance(k, str):
                out.append(f"key {where!r}: key {k!r} is not a string")
            else:
                out.extend(_json_problems(v, f"{where}.{k}"))
        return out
    kind = type(value).__name__
    return [f"key {where!r}: a {kind} is not a JSON value; write it as a string or a number"]


def check_table(table: object, origin: str) -> JsonObject:
    """The config as a plain dict; :class:`ConformanceConfigError` for content that cannot
    be a worker config (not a table, ``run_id``, values JSON cannot carry)."""
    if not isinstance(table, Mapping):
        raise ConformanceConfigError(
            origin, [f"expected a table of config keys, got {type(table).__name__}"]
        )
    problems = []
    for key, value in table.items():
        if key == "run_id":
            problems.append("key 'run_id': the suite sets the run id of every run; remove it")
            continue
        problems.extend(_json_problems(value, str(key)))
    if problems:
        raise ConformanceConfigError(origin, problems)
    return dict(table)


def read_pyproject(path: Path) -> JsonObject | None:
    """The ``[tool.mosaic.conformance]`` table of ``path``, or None when it has none."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConformanceConfigError(str(path), [f"malformed TOML: {exc}"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConformanceConfigError(str(path), [f"cannot read it: {exc}"]) from None
    node: object = document
    for part in TABLE:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return check_table(node, f"{path} {TABLE_NAME}")


def read_entry_point(
    dist: importlib_metadata.Distribution, worker: str
) -> ConformanceConfig | None:
    """The config named by ``dist``'s ``mosaic.conformance`` entry point ``worker``."""
    found = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP and ep.name == worker]
    if not found:
        return None
    ep = found[0]
    origin = f"entry point {ENTRY_POINT_GROUP}:{worker} = {ep.value!r} of {dist.metadata['Name']}"
    try:
        value = ep.load()
        if callable(value) and not isinstance(value, Mapping):
            value = value()
    except Exception as exc:  # noqa: BLE001 - any import-time failure is the finding
        problem = f"loading it failed: {type(exc).__name__}: {exc}"
        raise ConformanceConfigError(origin, [problem]) from None
    return ConformanceConfig(check_table(value, origin), origin)


def file_config(distribution: str | None, worker: str) -> ConformanceConfig | None:
    """The config given without the SDK (the pyproject table, the entry point), or None."""
    if not distribution or distribution == "MOSAIC_PLUGINS":
        return None
    try:
        dist = importlib_metadata.distribution(distribution)
    except importlib_metadata.PackageNotFoundError:
        return None
    source = source_directory(dist)
    pyproject = source / "pyproject.toml" if source is not None else None
    data = read_pyproject(pyproject) if pyproject is not None and pyproject.is_file() else None
    table = ConformanceConfig(data, f"{pyproject} {TABLE_NAME}") if data is not None else None
    entry = read_entry_point(dist, worker)
    if table is None or entry is None:
        return table or entry
    if table.data != entry.data:
        keys = [k for k in {*table.data, *entry.data} if table.data.get(k) != entry.data.get(k)]
        listing = ", ".join(map(repr, sorted(keys)))
        problem = f"differs from the {entry.origin} in key(s) {listing}"
        fix = "keep one of the two, or make them equal"
        raise ConformanceConfigError(table.origin, [f"{problem}; {fix}"])
    return table


def check_against_model(config: ConformanceConfig, model: type[WorkerConfig], run_id: str) -> None:
    """Raise :class:`ConformanceConfigError` when the worker's config model rejects a key or a
    value of a config given without the SDK (each line of the model's error names its key)."""
    try:
        model.from_dict({**config.data, "run_id": run_id})
    except ValueError as exc:
        lines = getattr(exc, "errors", None)
        problems = lines if isinstance(lines, list) and lines else [str(exc)]
        raise ConformanceConfigError(config.origin, [str(p) for p in problems]) from None
