"""FastLane (when claimed): frames appear, a version-1 reader reads them, the segment goes."""

from __future__ import annotations

from typing import Any

from mosaic_sdk.conformance.checks.cli import launched
from mosaic_sdk.conformance.checks.gates import claims, fastlane_in_sdk
from mosaic_sdk.conformance.fastlane_v1 import MAGIC, SLOT_HEADER, VERSION, segment_name
from mosaic_sdk.conformance.registry import SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject

GATES = (claims("supports_fastlane"), fastlane_in_sdk)


def _probe(subject: WorkerSubject) -> dict[str, Any]:
    run = launched(subject, "fastlane")
    if run.probe_error:
        raise CheckFailed(f"reading the segment failed: {run.probe_error}")
    probe: dict[str, Any] = run.probe or {}
    if not probe.get("seen"):
        excerpt = run.stderr_excerpt()
        raise CheckFailed(
            f"no segment {segment_name(run.run_id)} appeared while the worker ran with "
            f"MOSAIC_FASTLANE_ONLY=1 ({run.ending()}"
            + (f"; stderr: {excerpt})" if excerpt else ")")
        )
    return probe


@conformance_check(
    "fastlane.frames_published",
    description="With MOSAIC_FASTLANE_ONLY=1 the worker publishes frames to its segment",
    hint="Wrap the env with mosaic_sdk.plugins.maybe_wrap_env(env) (render_mode='rgb_array') "
    "when MOSAIC_FASTLANE_ONLY / GYM_GUI_FASTLANE_ONLY is 1",
    runs=("fastlane",),
    gates=GATES,
    levels=(SDK,),
)
def frames_published(subject: WorkerSubject) -> str | None:
    probe = _probe(subject)
    if not probe["heads"]:
        raise CheckFailed("the segment appeared but no frame was published (head stayed 0)")
    return f"head reached {probe['heads'][-1]}"


@conformance_check(
    "fastlane.v1_readable",
    description="A version-1 reader reads a complete frame of the declared dimensions",
    hint="Publish through mosaic_sdk.fastlane (FastLaneWriter keeps the version-1 layout); "
    "frames must be HxWxC uint8 with C in 1, 3, 4",
    runs=("fastlane",),
    gates=GATES,
    levels=(SDK,),
)
def v1_readable(subject: WorkerSubject) -> str | None:
    probe = _probe(subject)
    header, frame = probe.get("header"), probe.get("frame")
    if frame is None or header is None:
        errors = "; ".join(probe.get("errors", [])) or "no complete frame (even seq) was found"
        raise CheckFailed(f"the version-1 reader could not read a frame: {errors}")
    problems = []
    if header.magic != MAGIC or header.version != VERSION:
        magic = header.magic.decode("latin-1")
        problems.append(f"magic/version {magic!r}/{header.version}, want FLAN/1")
    w, h, c = header.width, header.height, header.channels
    if c not in (1, 3, 4) or w <= 0 or h <= 0:
        problems.append(f"declared dimensions {w}x{h}x{c} are not a valid frame")
    if len(frame.pixels) != w * h * c:
        problems.append(f"frame has {len(frame.pixels)} bytes, {w}x{h}x{c} needs {w * h * c}")
    if header.payload_size < w * h * c:
        problems.append(f"payload_size {header.payload_size} < {w * h * c}")
    if header.slot_size < SLOT_HEADER.size + header.payload_size:
        problems.append(f"slot_size {header.slot_size} cannot hold the payload")
    if frame.seq != 2 * frame.number + 2:
        problems.append(
            f"frame {frame.number} has seq {frame.seq}, v1 wants {2 * frame.number + 2}"
        )
    if problems:
        raise CheckFailed("; ".join(problems), details=problems)
    return f"{w}x{h}x{c} frame {frame.number}"


@conformance_check(
    "fastlane.segment_removed",
    description="The FastLane segment is gone once the worker has exited",
    hint="Close the FastLane wrapper (env.close()) in a finally: block; the writer unlinks "
    "its segment on close",
    runs=("fastlane",),
    gates=GATES,
    levels=(SDK,),
)
def segment_removed(subject: WorkerSubject) -> str | None:
    run = launched(subject, "fastlane")
    name = segment_name(run.run_id)
    if name in run.leftover_shm:
        raise CheckFailed(
            f"/dev/shm/{name} was still there after the worker exited (the suite removed it)"
        )
    return None
