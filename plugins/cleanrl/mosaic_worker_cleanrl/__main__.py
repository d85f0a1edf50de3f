"""`python -m mosaic_worker_cleanrl --config PATH [--dry-run]` runs the worker's CLI."""

import sys

from mosaic_worker_cleanrl.cli import main

sys.exit(main())
