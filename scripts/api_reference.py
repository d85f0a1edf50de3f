#!/usr/bin/env python3
"""Writes the signature part of docs/reference/worker-api.md from the code.

Usage: python scripts/api_reference.py [--check]. The page's hand-written introduction stays;
what lies between its ``<!-- api:start -->`` and ``<!-- api:end -->`` markers is generated:
for every public name a worker author calls, its signature (``inspect.signature``) and the
first sentence of its docstring. ``--check`` exits 1 when the page is stale
(tests/test_api_reference.py runs it).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
from pathlib import Path

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "worker-api.md"
START, END = "<!-- api:start -->\n", "\n<!-- api:end -->"

#: (module, heading, what a worker author calls there). A class lists its public methods.
SURFACE: list[tuple[str, str, list[str]]] = [
    (
        "mosaic_sdk.worker_cli",
        "The worker's command line",
        ["worker_main", "RunContext", "load_config", "build_parser"],
    ),
    (
        "mosaic_sdk.telemetry",
        "Telemetry",
        ["TelemetryEmitter", "Heartbeat", "validate_line", "classify_line"],
    ),
    (
        "mosaic_sdk.contract",
        "The contract models",
        [
            "WorkerMetadata",
            "WorkerCapabilities",
            "WorkerConfig",
            "LaunchCommand",
            "check_run_id",
            "read_config_json",
            "unknown_vocabulary",
        ],
    ),
    (
        "mosaic_sdk.fastlane",
        "FastLane frames",
        [
            "FastLaneTelemetryWrapper",
            "FastLaneVectorTelemetryWrapper",
            "FastLaneWriter",
            "FastLaneConfig",
            "resolve_fastlane",
            "read_fastlane_environment",
            "apply_fastlane_environment",
            "tile_frames",
            "FastLaneReader",
        ],
    ),
    (
        "mosaic_sdk.analytics",
        "The analytics manifest",
        ["AnalyticsManifest", "Checkpoint", "write_analytics", "read_analytics"],
    ),
    (
        "mosaic_sdk.control",
        "Control and interactive mode",
        ["ControlChannel", "serve_interactive", "InteractiveSession", "Session", "parse_command"],
    ),
    ("mosaic_sdk.plugins", "Discovery by the platform", ["platform_factory"]),
]

#: The sentence of a name whose code has no docstring (the generator refuses a name with neither).
SENTENCES = {
    "build_parser": "The argparse parser of the shared worker CLI (``--config``, ``--dry-run``, ...).",
    "TelemetryEmitter.run_started": "Write ``run_started`` (the first line of a run) and flush it.",
    "TelemetryEmitter.run_completed": "Write ``run_completed`` (a terminal line) and flush it.",
    "TelemetryEmitter.run_failed": "Write ``run_failed`` (a terminal line) and flush it.",
    "TelemetryEmitter.run_cancelled": "Write ``run_cancelled`` (a terminal line) and flush it.",
    "TelemetryEmitter.heartbeat": "Write one ``heartbeat`` line with ``payload`` (progress).",
    "TelemetryEmitter.checkpoint_saved": "Write ``checkpoint_saved`` after writing a checkpoint.",
    "TelemetryEmitter.checkpoint_loaded": "Write ``checkpoint_loaded`` after loading one.",
    "Heartbeat.payload": "The payload of the next heartbeat: progress, memory and CPU use.",
    "Heartbeat.start": "Start beating in a daemon thread; returns the heartbeat.",
    "Heartbeat.stop": "Stop beating and wait for the thread.",
    "FastLaneTelemetryWrapper.reset": "As the env's ``reset``; publishes the new state's frame.",
    "FastLaneTelemetryWrapper.step": "As the env's ``step``; publishes the frame (at most one per "
    "``interval_ms``) and updates the HUD.",
    "FastLaneTelemetryWrapper.close": "Close the env and the ring (the segment is removed).",
    "FastLaneVectorTelemetryWrapper.reset": "As the vector env's ``reset``; publishes a frame.",
    "FastLaneVectorTelemetryWrapper.step": "As the vector env's ``step``; publishes the frame "
    "(the slot's env, or the grid) and updates the HUD.",
    "FastLaneVectorTelemetryWrapper.close": "Close the envs and the ring (the segment is removed).",
    "FastLaneWriter.run_id": "The run whose ring this is.",
    "FastLaneWriter.closed": "True once :meth:`close` was called.",
    "FastLaneReader.name": "The segment's shared-memory name.",
    "FastLaneReader.width": "Frame width in pixels.",
    "FastLaneReader.height": "Frame height in pixels.",
    "FastLaneReader.channels": "Channels per pixel (1, 3 or 4).",
    "FastLaneReader.capacity": "Slots in the ring.",
    "FastLaneReader.invalidated": "True when the writer is gone (the segment's invalidated flag).",
    "ControlChannel.paused": "True while a ``pause`` holds the loop at its safe point.",
    "InteractiveSession.reset": "Start an episode (seeded when ``seed`` is given); returns the "
    "observation.",
    "InteractiveSession.frame": "The env's rendered frame of the current state.",
    "Session.ping": "Send ``ping``; the reply says whether the run is paused.",
    "Session.pause": "Send ``pause``.",
    "Session.resume": "Send ``resume``.",
    "Session.stop": "Send ``stop``: the run ends ``cancelled``.",
    "Session.checkpoint": "Send ``checkpoint``: save one now.",
    "Session.reset": "Send ``reset`` (interactive mode): a new episode, seeded if ``seed`` is given.",
    "Session.step": "Send ``step`` (interactive mode): the policy's action, or ``action``.",
    "Session.act": "Send ``act`` (interactive mode): the policy's action for ``observation``.",
    "Session.close": "Send ``close``: an interactive run completes.",
}

#: pydantic and dataclass plumbing that is not part of what a worker author calls
INHERITED = {"model_post_init"}


def first_sentence(obj: object, name: str) -> str:
    doc = (obj.__doc__ or "") if name in SENTENCES or "." in name else inspect.getdoc(obj) or ""
    doc = inspect.cleandoc(doc) if doc else SENTENCES.get(name, "")
    if not doc:
        raise SystemExit(f"{name} has no docstring: write one, or a sentence in SENTENCES")
    paragraph = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    match = re.match(r"(.+?[.!?])(\s|$)(?![a-z])", paragraph)
    sentence = match.group(1) if match else paragraph
    return re.sub(r":(?:meth|class|attr|func|mod):`~?([^`]+)`", r"``\1``", sentence)


def annotation_text(annotation: object) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):  # postponed (``from __future__ import annotations``)
        return annotation
    return inspect.formatannotation(annotation).replace("typing.", "")


def parameter_text(p: inspect.Parameter) -> str:
    prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
    text = prefix + p.name
    annotation = annotation_text(p.annotation)
    if annotation:
        text += f": {annotation}"
    if p.default is not p.empty:
        text += (" = " if annotation else "=") + default_text(p.default)
    return text


def default_text(value: object) -> str:
    if callable(value) and not isinstance(value, type):
        return getattr(value, "__name__", "...")
    text = repr(value)
    return "..." if " at 0x" in text else text


def signature_text(name: str, obj: object) -> str:
    """``name(params) -> return`` as the reader writes it: no ``self``, postponed annotations
    shown as written, pydantic models by their fields."""
    if isinstance(obj, type) and issubclass(obj, BaseModel):
        fields = []
        for field_name, field in obj.model_fields.items():
            annotation = annotation_text(field.annotation)
            if field.is_required():
                fields.append(f"{field_name}: {annotation}")
            else:
                default = field.get_default(call_default_factory=True)
                fields.append(f"{field_name}: {annotation} = {default_text(default)}")
        return f"{name}(*, {', '.join(fields)})"
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    params = [p for p in sig.parameters.values() if p.name != "self"]
    if dataclasses.is_dataclass(obj):  # a default_factory shows as what it makes
        made = {
            f.name: f.default_factory()
            for f in dataclasses.fields(obj)
            if f.default_factory is not dataclasses.MISSING
        }
        params = [p.replace(default=made[p.name]) if p.name in made else p for p in params]
    text = f"{name}("
    shown: list[str] = []
    star_done = False
    for p in params:
        if p.kind == p.KEYWORD_ONLY and not star_done:
            shown.append("*")
            star_done = True
        if p.kind == p.VAR_POSITIONAL:
            star_done = True
        shown.append(parameter_text(p))
    text += ", ".join(shown) + ")"
    if sig.return_annotation is not sig.empty and not inspect.isclass(obj):
        text += f" -> {annotation_text(sig.return_annotation)}"
    return text


def public_members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties defined by the class or an SDK base class, in order."""
    found: dict[str, object] = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("mosaic_sdk"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") or name in INHERITED or name in found:
                continue
            if isinstance(member, property):
                found[name] = member
            elif isinstance(member, (staticmethod, classmethod)) or inspect.isfunction(member):
                found[name] = getattr(cls, name)  # bound for a classmethod: no ``cls``
    return list(found.items())


def render() -> str:
    out: list[str] = []
    for module_name, heading, names in SURFACE:
        module = importlib.import_module(module_name)
        out += [f"## {heading}: `{module_name}`", ""]
        for name in names:
            obj = getattr(module, name)
            out += [f"### `{name}`", "", first_sentence(obj, name), ""]
            members = public_members(obj) if inspect.isclass(obj) else []
            signatures = [signature_text(name, obj)]
            signatures += [
                signature_text(f"{name}.{m}", member)
                for m, member in members
                if not isinstance(member, property)
            ]
            out += [f"<!-- snippet: signature {module_name} -->", "```python", *signatures]
            out += ["```", ""]
            for m, member in members:
                if isinstance(member, property):
                    sentence = first_sentence(member.fget, f"{name}.{m}")
                    out.append(f"- `{m}` (property): {sentence}")
                else:
                    out.append(f"- `{m}`: {first_sentence(member, f'{name}.{m}')}")
            if members:
                out.append("")
    return "\n".join(out).rstrip()


def updated(text: str) -> str:
    if START not in text or END not in text:
        raise SystemExit(f"{PAGE}: the api:start / api:end markers are missing")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    return head + START + render() + END + tail


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = updated(text)
    if "--check" in argv:
        if new != text:
            print(f"{PAGE.name} is stale: run python scripts/api_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
