"""The JSON Schema of an algorithm's ``algo_params``, read from its script's own definition.

Each property is one argument of the script (argparse ``add_argument`` or a tyro ``Args``
field, see :mod:`mosaic_worker_cleanrl.arguments`): its JSON type, its default (when the
source gives a value that can be read without running anything; otherwise
``x-default-source`` holds the expression) and its help text as ``description``. Arguments
the worker sets from its own config fields (``env_id``, ``seed``, ...) are left out and listed
under ``x-set-by-worker``.
``additionalProperties`` is false: the worker refuses any other name before launch.
"""

from __future__ import annotations

from typing import Any

from mosaic_worker_cleanrl.algo_params import RESERVED_ARGUMENTS
from mosaic_worker_cleanrl.arguments import ArgumentSpec, ScriptArguments

_JSON_TYPES = {
    "int": "integer",
    "float": "number",
    "str": "string",
    "bool": "boolean",
    "list": "array",
}


def argument_schema(spec: ArgumentSpec) -> dict[str, Any]:
    """The JSON Schema of one argument's value."""
    prop: dict[str, Any] = {"title": spec.name}
    kind = _JSON_TYPES.get(spec.kind)
    if kind is None:  # "any": what the worker forwards as text
        types: list[str] = ["string", "number", "boolean"]
    else:
        types = [kind]
    if spec.optional:
        types.append("null")
    prop["type"] = types[0] if len(types) == 1 else types
    if spec.default_source is None:
        prop["default"] = spec.default
    else:
        prop["x-default-source"] = spec.default_source
    if spec.help:
        prop["description"] = spec.help
    prop["x-flag"] = spec.flag
    return prop


def algo_params_schema(algo: str, script: ScriptArguments, source: str = "") -> dict[str, Any]:
    """The JSON Schema of ``algo_params`` for ``algo`` (its script's arguments ``script``)."""
    properties = {
        name: argument_schema(spec)
        for name, spec in script.arguments.items()
        if name not in RESERVED_ARGUMENTS
    }
    set_by_worker = {
        name: RESERVED_ARGUMENTS[name] for name in script.arguments if name in RESERVED_ARGUMENTS
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"algo_params of {algo}",
        "description": f"Arguments of {source or algo}, read from its {script.style} definition",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "x-argument-style": script.style,
        "x-set-by-worker": set_by_worker,
    }


__all__ = ["algo_params_schema", "argument_schema"]
