"""``mosaic plugins list [--json]``: the plugins of the ``mosaic.plugins`` entry-point group
(observers and other plugins that are not workers), broken ones with their error."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mosaic_sdk.cli.store_access import print_plain_table
from mosaic_sdk.runner.printable import printable


def register(sub: Any) -> None:
    p = sub.add_parser(
        "plugins", help="list installed plugins that are not workers (mosaic.plugins)"
    )
    psub = p.add_subparsers(dest="plugins_command", metavar="SUBCOMMAND")
    lst = psub.add_parser("list", help="installed plugins; broken ones with their error")
    lst.add_argument("--json", action="store_true", help="print a JSON list")
    lst.set_defaults(handler=cmd_list)
    p.set_defaults(handler=cmd_list, json=False)  # `mosaic plugins` alone lists them


def cmd_list(args: argparse.Namespace) -> int:
    # CLI start-up time
    from mosaic_sdk.plugins import discover_workers
    from mosaic_sdk.plugins.plugin_group import plugin_entries

    registry = discover_workers()
    entries = plugin_entries(registry.plugins, registry.plugin_errors)
    if args.json:
        print(json.dumps(entries, indent=2, sort_keys=True))
        return 0
    if not entries:
        print(
            "No plugins installed (entry-point group mosaic.plugins). Workers are listed by "
            "`mosaic workers list`."
        )
        return 0
    rows = []
    for e in entries:
        if e["ok"]:
            detail = ", ".join(e["hooks"]) or "-"
        else:
            detail = f"error: {e['error']['error_type']}: {e['error']['message']}"
        row = (e["name"], e["version"] or "-", e["distribution"] or "-", detail)
        rows.append(tuple(printable(str(v)) for v in row))
    print_plain_table(("name", "version", "distribution", "hooks / error"), rows)
    broken = [e for e in entries if not e["ok"]]
    if broken:
        print(
            f"{len(broken)} plugin(s) failed to load; runs go on without them. "
            "Set MOSAIC_DISABLE_PLUGINS=name to hide one."
        )
    return 0
