"""``python -m mosaic_sdk.plugins.gym_gui_stand_in MODULE [ARG ...]``: run ``MODULE`` as
``python -m MODULE [ARG ...]`` does, with the ``gym_gui`` names the platform's workers import
provided by the SDK when ``gym_gui`` is not installed. The upstream adapter starts
upstream-style workers this way."""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

from mosaic_sdk.plugins.gym_gui_stand_in.finder import install_gym_gui_stand_in

USAGE = (
    "usage: python -m mosaic_sdk.plugins.gym_gui_stand_in MODULE [ARG ...]\n"
    "runs MODULE like `python -m MODULE [ARG ...]`, with the gym_gui names workers import "
    "provided by the SDK when gym_gui is not installed"
)


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    install_gym_gui_stand_in()
    sys.argv[:] = args  # argv[0] becomes the module's file, as with `python -m`
    runpy.run_module(args[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
