"""The child of :mod:`mosaic_sdk.plugins.probe`: loads entry points one by one and says how
each went. Not for use by hand.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import EntryPoint
from typing import IO, Any

from mosaic_sdk.plugins.discovery import (
    ENTRY_POINT_GROUP,
    EntryPointCandidate,
    create_plugin_manager,
    load_error,
    load_unguarded,
)
from mosaic_sdk.plugins.errors import WorkerLoadError
from mosaic_sdk.plugins.gym_gui_stand_in import install_gym_gui_stand_in
from mosaic_sdk.plugins.plugin_group import PLUGIN_GROUP, PLUGIN_PREFIX, plugin_object


def _check(item: dict[str, Any]) -> dict[str, Any]:
    group = ENTRY_POINT_GROUP if item["group"] == "worker" else PLUGIN_GROUP
    ep = EntryPoint(item["name"], item["value"], group)
    c = EntryPointCandidate(
        item["name"], item["value"], item["distribution"], item["dist_version"], ep.load
    )
    pm = create_plugin_manager()
    if item["group"] == "worker":
        outcome = load_unguarded(c, c.name, f"worker:{c.name}", pm)
        if isinstance(outcome, WorkerLoadError):
            return {"ok": False, **outcome.to_dict(), "traceback": outcome.traceback}
        return {"ok": True}
    try:
        pm.register(plugin_object(c.load(), c), name=PLUGIN_PREFIX + c.name)
    except BaseException as exc:  # noqa: BLE001 - the plugin's SystemExit is its answer
        err = load_error(c, exc)
        return {"ok": False, **err.to_dict(), "traceback": err.traceback}
    return {"ok": True}


def main() -> int:
    report: IO[str] = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the plugins print goes to stderr, never into the report
    sys.stdout = sys.stderr
    setup = json.loads(sys.stdin.readline())
    sys.path[:] = setup["sys_path"]
    sys.argv[:] = setup["argv"] or [""]
    install_gym_gui_stand_in()
    for line in sys.stdin:
        request = json.loads(line)
        index, item = request["index"], request["item"]
        report.write(json.dumps({"begin": index}) + "\n")
        report.flush()
        try:
            answer = _check(item)
        except BaseException as exc:  # noqa: BLE001 - whatever happened, say it
            answer = {"ok": False, "error_type": type(exc).__name__, "message": str(exc)}
        report.write(json.dumps({"end": index, **answer}, default=str) + "\n")
        report.flush()
    return 0


if __name__ == "__main__":
    # os._exit: a plugin's atexit handler or a thread it left must not change the verdicts
    code = main()
    sys.stderr.flush()
    os._exit(code)
