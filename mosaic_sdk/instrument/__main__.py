"""``python -m mosaic_sdk.instrument --config PATH``: the built-in ``script`` worker."""

from __future__ import annotations

import sys

from mosaic_sdk.instrument.script_worker import main

if __name__ == "__main__":
    sys.exit(main())
