"""``mosaic workers list [--json]`` and ``mosaic workers show NAME [--json]``."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from mosaic_sdk.cli import usage_errors

if TYPE_CHECKING:
    from mosaic_sdk.plugins.handle import WorkerEntry


def register(sub: Any) -> None:
    p = sub.add_parser("workers", help="list installed workers, or show one")
    wsub = p.add_subparsers(dest="workers_command", metavar="SUBCOMMAND")
    lst = wsub.add_parser("list", help="installed workers; broken ones with their error")
    lst.add_argument("--json", action="store_true", help="print a JSON list")
    lst.set_defaults(handler=cmd_list)
    show = wsub.add_parser("show", help="metadata, capabilities and config schema of a worker")
    show.add_argument("name")
    show.add_argument("--json", action="store_true", help="print one JSON object")
    show.set_defaults(handler=cmd_show)
    p.set_defaults(handler=cmd_list, json=False)  # `mosaic workers` alone lists them


def _console() -> Any:
    from rich.console import Console  # CLI start-up time

    return Console(highlight=False, soft_wrap=False)


def cmd_list(args: argparse.Namespace) -> int:
    from mosaic_sdk.plugins import discover_workers  # CLI start-up time

    registry = discover_workers()
    entries = registry.entries()
    if args.json:
        print(json.dumps(entries, indent=2, sort_keys=True))
        return 0
    # CLI start-up time
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    if not entries:
        console.print(
            "No workers installed. Install one (e.g. pip install -e plugins/example) or "
            "scaffold your own with `mosaic new`."
        )
        return 0
    table = Table(title="MOSAIC workers", title_justify="left")
    for col in ("name", "version", "distribution", "status"):
        table.add_column(col)
    for e in entries:
        table.add_row(escape(e["name"]), e["version"] or "-", e["distribution"] or "-", _status(e))
    console.print(table)
    broken = [e for e in entries if not e["ok"]]
    if broken:
        console.print(
            f"{len(broken)} worker(s) failed to load; they are skipped. "
            "Set MOSAIC_DISABLE_WORKERS=name to hide one."
        )
    if any("choice" in e for e in entries):
        console.print(
            "Several workers share a name: the bare name runs the chosen one, NAME@DISTRIBUTION "
            "any of them. Set MOSAIC_PREFER_WORKER=NAME=DISTRIBUTION to choose another."
        )
    return 0


def _status(entry: WorkerEntry) -> str:
    """The status cell of one ``workers list`` row, with the choice of a shared name."""
    from rich.markup import escape  # CLI start-up time

    if entry["ok"]:
        status = "[green]ok[/green]"
    else:
        err = entry["error"]
        status = f"[red]error[/red]: {escape(err['error_type'])}: {escape(err['message'])}"
    choice = entry.get("choice")
    if choice is not None and choice["chosen"] is not None:
        others = ", ".join(
            c["address"] for c in choice["contenders"] if c["address"] != choice["chosen"]
        )
        status += f"; chosen over {escape(others)}: {escape(choice['reason'])}"
    if choice is not None:
        status += "".join(f"; {escape(note)}" for note in choice["notes"])
    if "alternative_of" in entry:
        status += (
            f"; not chosen for {escape(entry['alternative_of'])!r}: run it as "
            f"{escape(entry['name'])}"
        )
    return status


def describe_worker(name: str) -> dict[str, Any]:
    """Everything ``workers show`` prints, as one JSON-ready dict."""
    # CLI start-up time
    from mosaic_sdk.contract import unknown_vocabulary
    from mosaic_sdk.plugins import PluginError, discover_workers

    with usage_errors(PluginError):
        handle = discover_workers().get(name)
        meta, caps = handle.describe()
        model = handle.config_model()
        details = handle.details()
        algo_params_schemas = handle.algo_params_schema(None)
    return {
        "name": handle.name,
        "distribution": handle.distribution,
        "entry_point": handle.entry_point,
        "style": handle.style,
        "protocol_version": handle.protocol_version(),
        "metadata": meta.model_dump(mode="json"),
        "capabilities": caps.model_dump(mode="json"),
        "unknown_vocabulary": unknown_vocabulary(caps),
        "config_model": f"{model.__module__}.{model.__qualname__}",
        "config_schema": model.json_schema(),
        "details": details,
        "algo_params_schemas": algo_params_schemas,
    }


def _field_rows(schema: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    required = set(schema.get("required", []))
    for field, spec in schema.get("properties", {}).items():
        kind = spec.get("type")
        if kind is None and "anyOf" in spec:
            kind = " | ".join(str(s.get("type", s.get("$ref", "?"))) for s in spec["anyOf"])
        if "enum" in spec:
            kind = " | ".join(repr(v) for v in spec["enum"])
        default = "(required)" if field in required else json.dumps(spec.get("default"))
        rows.append((field, str(kind or "any"), default, spec.get("description", "")))
    return rows


def _cell(value: Any) -> str:
    """One value of the metadata or capabilities tables: ``None`` (not given) reads "none",
    an empty string "-", a list its items."""
    if value is None:
        return "none"
    if value == "":
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def cmd_show(args: argparse.Namespace) -> int:
    info = describe_worker(args.name)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True, default=str))
        return 0
    from rich.table import Table  # CLI start-up time

    console = _console()
    meta, caps = info["metadata"], info["capabilities"]
    console.print(f"[bold]{meta['name']}[/bold] ({info['name']} {meta['version']})")
    if meta["description"]:
        console.print(meta["description"])
    console.print(
        f"distribution: {info['distribution'] or '-'}   entry point: {info['entry_point']}   "
        f"style: {info['style']}   protocol: {info['protocol_version']}"
    )
    meta_table = Table(title="Metadata", title_justify="left", show_header=False)
    for key, value in meta.items():
        meta_table.add_row(key, _cell(value))
    console.print(meta_table)
    cap_table = Table(title="Capabilities", title_justify="left", show_header=False)
    for key, value in caps.items():
        text = _cell(value)
        strange = info["unknown_vocabulary"].get(key)
        if strange:
            text += f"  [yellow](not in the SDK's vocabulary: {', '.join(strange)})[/yellow]"
        cap_table.add_row(key, text)
    console.print(cap_table)
    cfg = Table(title=f"Config ({info['config_model']})", title_justify="left")
    for col in ("key", "type", "default", "description"):
        cfg.add_column(col)
    for row in _field_rows(info["config_schema"]):
        cfg.add_row(*row)
    console.print(cfg)
    for title, section in info["details"].items():
        if isinstance(section, list) and section and isinstance(section[0], dict):
            t = Table(title=str(title), title_justify="left")
            for col in section[0]:
                t.add_column(str(col))
            for item in section:
                t.add_row(*(str(item.get(col, "")) for col in section[0]))
            console.print(t)
        else:
            console.print(f"[bold]{title}[/bold]\n{section}")
    schemas = info["algo_params_schemas"]
    if schemas:
        console.print(f"Parameter schemas of {len(schemas)} algorithms: in the --json form")
    console.print(
        f"Full JSON Schema of the config (and of each algorithm's parameters): "
        f"mosaic workers show {info['name']} --json"
    )
    return 0
