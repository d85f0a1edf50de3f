"""``mosaic fastlane snapshot|stat``: look at a run's FastLane ring from the command line."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from mosaic_sdk.cli import UsageError, usage_errors
from mosaic_sdk.extras import MissingExtraError, require

#: Exit code of ``mosaic fastlane`` when the run's segment is corrupt.
EXIT_CORRUPT = 1


def _reports_corruption(
    handler: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """A corrupt segment is not the user's mistake: one line and exit 1, never a traceback."""

    @functools.wraps(handler)
    def wrapped(args: argparse.Namespace) -> int:
        from mosaic_sdk.fastlane import FastLaneCorruptError  # CLI start-up time

        try:
            return handler(args)
        except FastLaneCorruptError as exc:
            print(f"mosaic: error: {exc}", file=sys.stderr)
            return EXIT_CORRUPT

    return wrapped


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("fastlane", help="inspect a run's FastLane frame ring")
    sub = parser.add_subparsers(dest="fastlane_command", metavar="ACTION")
    parser.set_defaults(handler=lambda args: (parser.print_help(), 2)[1])

    snap = sub.add_parser(
        "snapshot", help="write the newest frame with its HUD to a PNG or JPEG file (Pillow)"
    )
    snap.add_argument("run_id", metavar="RUN_ID")
    snap.add_argument("output", metavar="OUT.png|OUT.jpg")
    snap.add_argument(
        "--timeout", type=float, default=2.0, help="seconds to wait for a first frame (default 2)"
    )
    _wait_option(snap)
    snap.set_defaults(handler=snapshot)

    stat = sub.add_parser("stat", help="show a ring's shape, owner, generation and frame rate")
    stat.add_argument("run_id", metavar="RUN_ID")
    stat.add_argument("--json", action="store_true", help="print one JSON object")
    stat.add_argument(
        "--interval",
        type=float,
        default=0.5,
        help="seconds between the two samples of head (default 0.5)",
    )
    _wait_option(stat)
    stat.set_defaults(handler=stat_command)


def _wait_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="S",
        help="wait up to S seconds for the run's segment to appear (a worker still starting; "
        "default 0: answer at once)",
    )


def _attach(run_id: str, wait: float = 0.0) -> Any:
    """Attach to the run's ring; with ``wait`` > 0, retry until the segment appears."""
    from mosaic_sdk.fastlane import FastLaneReader, FastLaneUnavailableError  # CLI start-up time

    deadline = time.monotonic() + max(0.0, wait)
    while True:
        try:
            return FastLaneReader.attach(run_id)
        except FastLaneUnavailableError as exc:
            if time.monotonic() >= deadline:
                waited = f" (waited {wait:g} s)" if wait > 0 else ""
                raise UsageError(f"{exc}{waited}") from None
            time.sleep(0.05)
        except ValueError as exc:
            raise UsageError(f"bad run id: {exc}") from None


@_reports_corruption
def snapshot(args: argparse.Namespace) -> int:
    from mosaic_sdk.fastlane.snapshot import snapshot_format, write_snapshot  # CLI start-up time

    with usage_errors(ValueError, MissingExtraError):
        snapshot_format(args.output)
        require("PIL.Image", "images", "mosaic fastlane snapshot")
    reader = _attach(args.run_id, args.wait)
    try:
        deadline = time.monotonic() + max(0.0, args.timeout)
        frame = reader.latest_frame()
        while frame is None and time.monotonic() < deadline:
            time.sleep(0.01)
            frame = reader.latest_frame()
        if frame is None:
            raise UsageError(
                f"run {args.run_id!r} has not published a frame yet (waited {args.timeout} s)"
            )
        extra = {"run_id": args.run_id, "generation": str(frame.generation), "seq": str(frame.seq)}
        with usage_errors(writing=args.output):
            path = write_snapshot(args.output, frame.array(), frame.metrics, extra)
    finally:
        reader.close()
    print(
        f"wrote {path} ({frame.width}x{frame.height}x{frame.channels}, frame {frame.seq}, "
        f"generation {frame.generation})"
    )
    return 0


def collect_stat(run_id: str, interval: float, wait: float = 0.0) -> dict[str, Any]:
    """The figures ``mosaic fastlane stat`` prints, as a dict (``wait``: see ``--wait``)."""
    reader = _attach(run_id, wait)
    try:
        status = reader.status()
        head1, t1 = reader.head, time.monotonic()
        time.sleep(max(0.0, interval))
        head2, t2 = reader.head, time.monotonic()
        same_ring = not reader.invalidated
        hud = reader.metrics()
    finally:
        reader.close()
    rate = (head2 - head1) / (t2 - t1) if same_ring and t2 > t1 else None
    return {
        "run_id": run_id,
        "segment": status.name,
        "width": status.width,
        "height": status.height,
        "channels": status.channels,
        "capacity": status.capacity,
        "slot_size": status.slot_size,
        "segment_bytes": status.size,
        "generation": status.generation,
        "writer_pid": status.writer_pid or None,
        "writer_alive": status.writer_alive if status.has_extension else None,
        "invalidated": status.invalidated,
        "frames_published": head2,
        "frame_rate_hz": rate,
        "hud": {
            "last_reward": hud.last_reward,
            "rolling_return": hud.rolling_return,
            "step_rate_hz": hud.step_rate_hz,
        },
        "extensions": status.has_extension,
    }


@_reports_corruption
def stat_command(args: argparse.Namespace) -> int:
    info = collect_stat(args.run_id, args.interval, args.wait)
    if args.json:
        print(json.dumps(info, sort_keys=True))
        return 0
    alive = {True: "alive", False: "dead", None: "unknown (version-1 writer)"}[info["writer_alive"]]
    rate = "n/a" if info["frame_rate_hz"] is None else f"{info['frame_rate_hz']:.1f} frames/s"
    rows = [
        ("segment", info["segment"]),
        ("frame", f"{info['width']}x{info['height']}x{info['channels']}"),
        (
            "ring",
            f"{info['capacity']} slots of {info['slot_size']} bytes "
            f"({info['segment_bytes']} bytes)",
        ),
        ("generation", str(info["generation"])),
        ("writer", f"pid {info['writer_pid']} ({alive})"),
        ("invalidated", "yes" if info["invalidated"] else "no"),
        ("frames published", str(info["frames_published"])),
        ("frame rate", rate),
    ]
    for key, value in rows:
        print(f"{key:>17}: {value}")
    return 0
