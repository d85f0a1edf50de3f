"""`python -m cleanrl_worker --config PATH [--dry-run]` runs the worker's CLI."""

import sys

from cleanrl_worker.cli import main

sys.exit(main())
